package skills

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/schema"
)

// paperLimits are pipeline.yaml's admission defaults (paper Table 5, METHOD.md §5.2).
var paperLimits = config.Admission{Alpha: 0.05, MaxValidatedPerFamily: 3, MaxCandidatesPerFamily: 1,
	MaxLibrary: 60, MaxLibraryPerFamily: 12, SuccessThreshold: 0.5, ValidationInterval: 1,
	RetirementInterval: 10, FixedCountK: 5}

// rec is a distinct record per name.
func rec(name string) Record {
	return Record{Name: name, Description: "Do " + name + ".", Trigger: "Use when " + name + " applies.",
		Plan: []string{"Step one of " + name + ".", "Step two."}, Pitfalls: []string{"Skipping " + name + "."}, Constraint: []string{"Be brief."}}
}

// effect is a skill's pair law: P(win) and P(loss); the rest are ties, half of them with both
// arms succeeding.
type effect struct{ win, loss float64 }

// bench plays the rollout and aggregate side against a ledger: every step, each family's
// tested skills (Library.Tested) get pairsPer pairs drawn from their effect, with the
// comparison ids Library.Comparison gives; it keeps the written segments for replay.
type bench struct {
	t        testing.TB
	g        *Ledger
	families []string
	pairsPer int
	effects  map[string]effect // by skill id
	rng      *rand.Rand
	segs     []Segment
}

func newBench(t testing.TB, limits config.Admission, fixedCount bool, families []string, pairsPer int, seed uint64) *bench {
	return &bench{t: t, g: NewLedger(limits, fixedCount), families: families, pairsPer: pairsPer,
		effects: map[string]effect{}, rng: rand.New(rand.NewPCG(seed, 1))}
}

// propose adds a candidate with the given effect to family at step, as the author does.
func (b *bench) propose(step int, family, name string, e effect) Skill {
	b.t.Helper()
	n := len(b.g.Events())
	s, err := b.g.Propose(step, family, rec(name))
	if err != nil {
		b.t.Fatal(err)
	}
	b.effects[s.ID] = e
	b.segment(step, layout.Author, n)
	return s
}

// draw is one pair outcome of a skill.
func (b *bench) draw(skillID string) (bPlus, bMinus bool) {
	e := b.effects[skillID]
	u := b.rng.Float64()
	switch {
	case u < e.win:
		return true, false
	case u < e.win+e.loss:
		return false, true
	}
	both := b.rng.IntN(2) == 0
	return both, both
}

// pairs builds the step's pairs the way rollout and aggregate would.
func (b *bench) pairs(step int) []schema.PairRow {
	lib := b.g.Library()
	var out []schema.PairRow
	for _, f := range b.families {
		for _, s := range lib.Tested(f, step) {
			cid, _ := lib.Comparison(s.ID, step)
			for i := range b.pairsPer {
				task := fmt.Sprintf("%s/task-%d-%d", f, step, i)
				bp, bm := b.draw(s.ID)
				out = append(out, schema.PairRow{PairID: PairID(step, task, cid), ComparisonID: cid, SkillID: s.ID,
					TaskID: task, Family: f, BPlus: bp, BMinus: bm, Outcome: outcome(bp, bm), Eligible: true})
			}
		}
	}
	return out
}

// validate runs the validate stage of step on the given pairs.
func (b *bench) validate(step int, pairs []schema.PairRow) []schema.LedgerRow {
	b.t.Helper()
	n := len(b.g.Events())
	if err := b.g.Validate(step, pairs); err != nil {
		b.t.Fatal(err)
	}
	return b.segment(step, layout.Validate, n)
}

// segment records the events since n as a segment (merging into the step's last segment of
// the same stage, as one stage run writes one file).
func (b *bench) segment(step int, stage string, n int) []schema.LedgerRow {
	rows := b.g.Events()[n:]
	if k := len(b.segs) - 1; k >= 0 && b.segs[k].Step == step && b.segs[k].Stage == stage {
		b.segs[k].Rows = append(b.segs[k].Rows, rows...)
	} else {
		b.segs = append(b.segs, Segment{Step: step, Stage: stage, Path: fmt.Sprintf("step-%d/%s", step, stage), Rows: rows})
	}
	return rows
}

// events returns the log's events of one kind.
func events(g *Ledger, kind string) []schema.LedgerRow {
	var out []schema.LedgerRow
	for _, r := range g.Events() {
		if r.Event == kind {
			out = append(out, r)
		}
	}
	return out
}

// pairsFor returns n pairs of one skill at step with the given outcomes ("w", "l", "t").
func pairsFor(g *Ledger, step int, skillID string, outcomes string) []schema.PairRow {
	lib := g.Library()
	s, _ := lib.Get(skillID)
	cid, _ := lib.Comparison(skillID, step)
	var out []schema.PairRow
	for i, o := range outcomes {
		bp, bm := o == 'w', o == 'l'
		task := fmt.Sprintf("%s/t%d-%d", s.Family, step, i)
		out = append(out, schema.PairRow{PairID: PairID(step, task, cid), ComparisonID: cid, SkillID: skillID,
			TaskID: task, Family: s.Family, BPlus: bp, BMinus: bm, Outcome: outcome(bp, bm), Eligible: true})
	}
	return out
}

func ptr[T any](v T) *T { return &v }
