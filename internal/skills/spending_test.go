package skills

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/stats"
	"github.com/evosteer/evosteer-go/schema"
)

// attainableLimits are paperLimits under admission.spending attainable.
func attainableLimits() config.Admission {
	a := paperLimits
	a.Spending = config.SpendingAttainable
	return a
}

// Under attainable spending comparison j = 1 with one win a step spends nothing until
// 2^−D ≤ α/(2·2)/2, at D = 8, where look l = 1 promotes: 8 straight wins instead of 15.
func TestEightWinsPromoteUnderAttainableSpending(t *testing.T) {
	b := newBench(t, attainableLimits(), false, []string{"f"}, 0, 1)
	s := b.propose(0, "f", "units", effect{})
	for step := 1; step <= 7; step++ {
		rows := b.validate(step, pairsFor(b.g, step, s.ID, "w"))
		if last := rows[len(rows)-1]; last.Event != EventPair || b.g.AlphaSpent() != 0 {
			t.Fatalf("step %d: a look that cannot reject left %s, alpha spent %g", step, describe(last), b.g.AlphaSpent())
		}
	}
	rows := b.validate(8, pairsFor(b.g, 8, s.ID, "w"))
	look, promote := rows[len(rows)-2], rows[len(rows)-1]
	if look.Event != EventLook || *look.Look != 1 || *look.D != 8 || *look.Level != 0.0125 || promote.Event != EventPromote {
		t.Fatalf("step 8: %s, %s", describe(look), describe(promote))
	}
	if b.g.AlphaSpent() != 0.0125 || len(events(b.g, EventLook)) != 1 {
		t.Fatalf("alpha spent %g over %d looks", b.g.AlphaSpent(), len(events(b.g, EventLook)))
	}
}

// TestAttainableSpendsNoMoreThanReleased: over random sequences of wins, losses and ties, look
// steps and validation intervals, each comparison spends under attainable spending at most what
// it spends under released spending, after every step, and decides (its first promote, retire
// or retain) no later. Each family holds one candidate, so its comparison's course is a
// function of its own pairs alone and the two ledgers can be fed the same pairs while both
// keep the comparison open.
func TestAttainableSpendsNoMoreThanReleased(t *testing.T) {
	families := []string{"a", "b", "c", "d"}
	rng := rand.New(rand.NewPCG(42, 5))
	var less, earlier int
	for trial := range 150 {
		rel, att := paperLimits, attainableLimits()
		rel.ValidationInterval = 1 + rng.IntN(4)
		att.ValidationInterval = rel.ValidationInterval
		steps := 20 + rng.IntN(180)
		outcomes := map[string][]string{} // family -> step (from 1) -> that step's pairs
		for _, f := range families {
			win := 0.7 * rng.Float64()
			loss := (0.9 - win) * rng.Float64()
			seq := make([]string, steps+1)
			for k := 1; k <= steps; k++ {
				n := rng.IntN(4)
				if k == 1 {
					n++ // every comparison is registered at step 1, so j is the same in both ledgers
				}
				for range n {
					switch u := rng.Float64(); {
					case u < win:
						seq[k] += "w"
					case u < win+loss:
						seq[k] += "l"
					default:
						seq[k] += "t"
					}
				}
			}
			outcomes[f] = seq
		}
		ledgers := []*Ledger{NewLedger(rel, false), NewLedger(att, false)}
		for _, g := range ledgers {
			for _, f := range families {
				if _, err := g.Propose(0, f, rec("skill "+f)); err != nil {
					t.Fatal(err)
				}
			}
		}
		decided := [2]map[string]int{{}, {}} // comparison id -> step of its first decision
		for k := 1; k <= steps; k++ {
			for i, g := range ledgers {
				var pairs []schema.PairRow
				for _, s := range g.Library().Skills() {
					if k == 1 || (s.Status != Retired && s.ComparisonID != "") {
						pairs = append(pairs, pairsFor(g, k, s.ID, outcomes[s.Family][k])...)
					}
				}
				n := len(g.Events())
				if err := g.Validate(k, pairs); err != nil {
					t.Fatalf("trial %d step %d: %v", trial, k, err)
				}
				for _, r := range g.Events()[n:] {
					switch r.Event {
					case EventPromote, EventRetire, EventRetain:
						if _, ok := decided[i][*r.ComparisonID]; !ok {
							decided[i][*r.ComparisonID] = k
						}
					}
				}
			}
			spentRel, spentAtt := spentBy(ledgers[0]), spentBy(ledgers[1])
			for id, a := range spentAtt {
				if a > spentRel[id] {
					t.Fatalf("trial %d step %d: comparison %s spent %g under attainable, %g under released", trial, k, id, a, spentRel[id])
				}
			}
			if ledgers[1].AlphaSpent() > ledgers[0].AlphaSpent()+1e-15 || ledgers[0].AlphaSpent() > rel.Alpha {
				t.Fatalf("trial %d step %d: alpha spent %g under attainable, %g under released", trial, k, ledgers[1].AlphaSpent(), ledgers[0].AlphaSpent())
			}
		}
		for id, kr := range decided[0] {
			ka, ok := decided[1][id]
			if !ok || ka > kr {
				t.Fatalf("trial %d: comparison %s decided at step %d under released, under attainable at %d (decided %v)", trial, id, kr, ka, ok)
			}
			if ka < kr {
				earlier++
			}
		}
		if ledgers[1].AlphaSpent() < ledgers[0].AlphaSpent() {
			less++
		}
	}
	if less == 0 || earlier == 0 {
		t.Fatalf("the rule never mattered: %d trials spent less, %d comparisons decided earlier", less, earlier)
	}
	t.Logf("150 trials: %d spent less under attainable, %d comparisons decided earlier", less, earlier)
}

// spentBy is the sum of the look levels of each comparison, in log order.
func spentBy(g *Ledger) map[string]float64 {
	out := map[string]float64{}
	for _, r := range g.Events() {
		if r.Event == EventLook {
			out[*r.ComparisonID] += *r.Level
		}
	}
	return out
}

// TestAttainableSpending: in long random runs under attainable spending (one pair a step per
// tested skill, so many looks cannot reject; candidates replaced as slots free, validated
// skills re-tested), every look step's comparison with new discordant pairs either looks at
// the next index l, with 2^−D ≤ level/2, or spends and emits nothing, exactly when
// 2^−D > level/2; every (j, l) is used once, alpha_spent is the sum of the levels and never
// exceeds α; replay of the log reproduces it, and replay under released spending does not.
func TestAttainableSpending(t *testing.T) {
	families := []string{"a", "b", "c", "d", "e", "f"}
	limits := attainableLimits()
	var skipped, looked int
	for run := range 4 {
		limits.ValidationInterval = 1 + run%2
		b := newBench(t, limits, false, families, 1, uint64(run))
		laws := []effect{{0.2, 0.2}, {0.4, 0.05}, {0.05, 0.4}, {0.1, 0.1}}
		name := 0
		for step := 1; step <= 300; step++ {
			b.validate(step, b.pairs(step))
			for _, f := range families {
				if b.g.Library().CanPropose(f) {
					name++
					b.propose(step, f, fmt.Sprintf("%s skill %d", f, name), laws[b.rng.IntN(len(laws))])
				}
			}
		}
		s, l := checkAttainable(t, b.segs, limits)
		skipped, looked = skipped+s, looked+l
		if _, err := Replay(limits, false, b.segs); err != nil {
			t.Fatalf("run %d: replay: %v", run, err)
		}
		released := limits
		released.Spending = config.SpendingReleased
		if _, err := Replay(released, false, b.segs); err == nil {
			t.Fatalf("run %d: a log written under attainable spending replays under released", run)
		}
	}
	if skipped == 0 || looked == 0 {
		t.Fatalf("%d looks spent nothing, %d spent", skipped, looked)
	}
	t.Logf("%d looks spent nothing, %d spent", skipped, looked)
}

// checkAttainable walks the log segment by segment and checks every look step's looks against
// the attainable rule; it returns how many looks spent nothing and how many spent.
func checkAttainable(t *testing.T, segs []Segment, limits config.Admission) (skipped, looked int) {
	t.Helper()
	type comp struct {
		j, next       int // next: the look index the comparison's next spending look takes
		open          bool
		d, lastTested int64
	}
	comps := map[string]*comp{}
	var order []string // comparison ids in j order
	sum := 0.0
	for _, seg := range segs {
		if seg.Stage != layout.Validate {
			continue
		}
		looks := map[string]schema.LedgerRow{}
		for _, r := range seg.Rows {
			switch r.Event {
			case EventRegister:
				comps[*r.ComparisonID] = &comp{j: int(*r.J), next: 1, open: true}
				order = append(order, *r.ComparisonID)
			case EventSupersede: // at registration, before the looks
				comps[*r.ComparisonID].open = false
			case EventPair:
				comps[*r.ComparisonID].d = *r.D
			case EventLook:
				if _, twice := looks[*r.ComparisonID]; twice {
					t.Fatalf("%s: two looks of %s", seg.Path, *r.ComparisonID)
				}
				looks[*r.ComparisonID] = r
				sum += *r.Level
			}
			if math.Abs(r.AlphaSpent-sum) > 1e-15 || r.AlphaSpent > limits.Alpha {
				t.Fatalf("%s seq %d: alpha_spent %g, sum of levels %g", seg.Path, r.Seq, r.AlphaSpent, sum)
			}
		}
		lookStep := seg.Step%limits.ValidationInterval == 0
		for _, id := range order {
			c := comps[id]
			r, ok := looks[id]
			if !c.open || !lookStep || c.d <= c.lastTested {
				if ok {
					t.Fatalf("%s: a look of %s without new discordant pairs", seg.Path, id)
				}
				continue
			}
			c.lastTested = c.d
			level := stats.SpendLevel(limits.Alpha, c.j, c.next)
			attainable := math.Ldexp(1, -int(c.d)) <= level/2
			switch {
			case ok != attainable:
				t.Fatalf("%s: comparison %s (j %d, D %d, next l %d, level %g): looked %v, attainable %v", seg.Path, id, c.j, c.d, c.next, level, ok, attainable)
			case ok && (*r.Look != int64(c.next) || *r.Level != level || *r.D != c.d):
				t.Fatalf("%s: look %s, want l %d, level %g, D %d", seg.Path, describe(r), c.next, level, c.d)
			case ok:
				c.next++
				looked++
			default:
				skipped++
			}
		}
		for _, r := range seg.Rows {
			if r.Event == EventClose {
				comps[*r.ComparisonID].open = false
			}
		}
	}
	return skipped, looked
}
