package skills

import (
	"reflect"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
)

// A ledger restored from a live one's state and library continues exactly as the live one: over
// long random runs (the sign test, fixed-count admission, undecided when exhausted), at every
// step a ledger restored before the step emits the same events for the step's pairs and
// proposals, seq running on, and ends in the same state and library.
func TestRestoredLedgerContinuesTheLive(t *testing.T) {
	families := []string{"a", "b", "c"}
	laws := []effect{{0.5, 0.05}, {0.05, 0.4}, {0.2, 0.2}, {0.7, 0.05}}
	for _, c := range []struct {
		name       string
		fixedCount bool
		edit       func(l *config.Admission)
	}{
		{"sign test", false, func(l *config.Admission) { l.RetirementInterval, l.MaxValidatedPerFamily = 4, 1 }},
		{"fixed count", true, nil},
		{"undecided when exhausted", false, func(l *config.Admission) { l.UndecidedWhenExhausted, l.ValidationInterval = true, 2 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			limits := paperLimits
			if c.edit != nil {
				c.edit(&limits)
			}
			tasks := map[string]int{"a": 9, "b": 12, "c": 15}
			b := newBench(t, limits, c.fixedCount, families, 6, 11)
			b.g.SetFamilyTasks(tasks)
			name, kinds := 0, map[string]int{}
			for step := 1; step <= 150; step++ {
				g := NewLedger(limits, c.fixedCount)
				g.SetFamilyTasks(tasks)
				if err := g.restore(b.g.Library(), b.g.State(), "state", "library"); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				n := len(b.g.Events())
				pairs := b.pairs(step)
				b.validate(step, pairs)
				if err := g.Validate(step, pairs); err != nil {
					t.Fatalf("step %d: the restored ledger: %v", step, err)
				}
				for _, f := range families {
					if b.g.Library().CanPropose(f) {
						name++
						s := b.propose(step, f, "skill-"+string(rune('a'+name%26))+string(rune('a'+name/26)), laws[b.rng.IntN(len(laws))])
						if _, err := g.Propose(step, f, s.Record); err != nil {
							t.Fatalf("step %d: the restored ledger: %v", step, err)
						}
					}
				}
				live := b.g.Events()[n:]
				if len(g.Events())+len(live) > 0 && !reflect.DeepEqual(g.Events(), live) {
					t.Fatalf("step %d: the restored ledger emits\n%v\nthe live one\n%v", step, g.Events(), live)
				}
				if diff := diffState(g.State(), b.g.State()); diff != "" {
					t.Fatalf("step %d: %s", step, diff)
				}
				if err := SameLibrary(g.Library(), b.g.Library()); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				for _, e := range live {
					kinds[e.Event]++
				}
			}
			t.Logf("events %v", kinds)
			want := map[string][]string{
				"sign test":                {EventLook, EventPromote, EventRetire, EventRetain, EventSupersede, EventDeferCapacity},
				"fixed count":              {EventPromote, EventSupersede},
				"undecided when exhausted": {EventLook, EventUndecided},
			}[c.name]
			for _, e := range want {
				if kinds[e] == 0 {
					t.Errorf("no %s event", e)
				}
			}
		})
	}
}

// A state and a library that contradict each other are refused, naming the files.
func TestRestoreRefusesContradictions(t *testing.T) {
	b := newBench(t, paperLimits, false, []string{"f"}, 0, 1)
	s := b.propose(1, "f", "units", effect{})
	b.validate(2, pairsFor(b.g, 2, s.ID, "wlt"))
	other := b.propose(2, "g", "checks", effect{})
	for name, c := range map[string]struct {
		edit func(*Ledger)
		want string
	}{
		"untouched": {func(*Ledger) {}, ""},
		"a skill without its open comparison": {func(g *Ledger) { g.comps[0].open = false },
			"library: skill " + s.ID + " records comparison " + s.ID + "@2, which state does not hold open"},
		"a comparison of another skill": {func(g *Ledger) { g.comps[0].skill = other.ID },
			"state: row 1: comparison " + s.ID + "@2 (menu "},
		"a comparison the library lacks": {func(g *Ledger) { g.comps[0].skill = "evosteer-00000000000000000000" },
			"state: row 1: comparison " + s.ID + "@2 is of skill evosteer-00000000000000000000, which library lacks"},
		"successes of a skill the library lacks": {func(g *Ledger) { g.successes["evosteer-00000000000000000000"] = 1 },
			"successes of skill evosteer-00000000000000000000, which library lacks"},
		"j beyond the registrations": {func(g *Ledger) { g.registered = 0 },
			"only 0 comparisons were registered"},
	} {
		live := *b.g
		live.comps = []*comparison{ptr(*b.g.comps[0])}
		live.successes = map[string]int64{}
		for k, v := range b.g.successes {
			live.successes[k] = v
		}
		c.edit(&live)
		err := NewLedger(paperLimits, false).restore(b.g.Library(), live.State(), "state", "library")
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
