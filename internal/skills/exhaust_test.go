package skills

import (
	"testing"

	"github.com/evosteer/evosteer-go/internal/layout"
)

// TestUndecidedWhenExhausted: under admission.undecided_when_exhausted a comparison whose
// eligible pairs have used every training task of its family ends with an undecided event on
// the next look step, after its last look; the candidate is retired (basis undecided), its
// slot is free and a new candidate can enter; replay with the same task counts reproduces the
// log. With the rule off (the release) the comparison stays open and holds the slot.
func TestUndecidedWhenExhausted(t *testing.T) {
	for _, on := range []bool{false, true} {
		limits := paperLimits
		limits.UndecidedWhenExhausted = on
		limits.ValidationInterval = 3
		b := newBench(t, limits, false, []string{"f"}, 0, 1)
		b.g.SetFamilyTasks(map[string]int{"f": 4})
		s := b.propose(0, "f", "units", effect{})
		b.validate(1, pairsFor(b.g, 1, s.ID, "wl"))
		b.validate(2, pairsFor(b.g, 2, s.ID, "wt")) // the family's 4 tasks are used
		if n := len(events(b.g, EventUndecided)); n != 0 {
			t.Fatalf("on=%v: undecided before a look step (%d events)", on, n)
		}
		rows := b.validate(3, nil)
		got, _ := b.g.Library().Get(s.ID)
		if !on {
			if len(events(b.g, EventUndecided)) != 0 || got.Status != Candidate || got.ComparisonID == "" || b.g.Library().CanPropose("f") {
				t.Fatalf("rule off: %+v, events %v", got, rows)
			}
			continue
		}
		if len(rows) != 4 || rows[0].Event != EventLook || rows[1].Event != EventDefer || rows[2].Event != EventUndecided || rows[3].Event != EventClose || *rows[2].D != 3 || *rows[2].T0 != 1 {
			t.Fatalf("rule on: step 3 events %v", rows)
		}
		if got.Status != Retired || got.Basis != BasisUndecided || got.ComparisonID != "" || !b.g.Library().CanPropose("f") {
			t.Fatalf("rule on: after undecided %+v", got)
		}
		if len(b.g.Library().Tested("f", 4)) != 0 || len(b.g.Library().Menu("f").Skills) != 0 {
			t.Fatal("rule on: an undecided candidate is still tested or on the menu")
		}
		next := b.propose(3, "f", "checks", effect{})
		rows = b.validate(4, pairsFor(b.g, 4, next.ID, "w"))
		if rows[0].Event != EventRegister || *rows[0].J != 2 {
			t.Fatalf("rule on: the new candidate's comparison %v", rows)
		}
		g := NewLedger(limits, false)
		g.SetFamilyTasks(map[string]int{"f": 4})
		if _, err := g.Replay(b.segs); err != nil {
			t.Fatalf("replay: %v", err)
		}
		if _, err := Replay(limits, false, b.segs); err == nil {
			t.Fatal("replay without the family task counts succeeded")
		}
		if b.segs[len(b.segs)-1].Stage != layout.Validate {
			t.Fatal("bench segments")
		}
	}
}

// With repeated tasks allowed a comparison never runs out of pairs: the rule does nothing.
func TestUndecidedNeedsNoRepeats(t *testing.T) {
	limits := paperLimits
	limits.UndecidedWhenExhausted, limits.AllowRepeatedTasks = true, true
	b := newBench(t, limits, false, []string{"f"}, 0, 1)
	s := b.propose(0, "f", "units", effect{})
	b.validate(1, pairsFor(b.g, 1, s.ID, "wltt"))
	if len(events(b.g, EventUndecided)) != 0 {
		t.Fatal("undecided with repeated tasks allowed")
	}
}
