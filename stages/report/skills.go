package report

import (
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/schema"
)

// SkillEvents are the ledger events the skill-decision figure counts per step: the author's
// proposals and the outcomes of sign-test looks (pairs, registrations and the looks themselves
// are bookkeeping and left out).
var SkillEvents = []string{skills.EventProposal, skills.EventPromote, skills.EventRetire, skills.EventRetain,
	skills.EventDefer, skills.EventDeferCapacity, skills.EventSupersede}

// SkillStep is one step of the admission timeline.
type SkillStep struct {
	Step       int
	Events     []int   // count per SkillEvents entry
	AlphaSpent float64 // cumulative, after the step's last event
}

// SkillTimeline counts each step's events and carries the cumulative alpha spent forward over
// steps without events. segs are the ledger segments in log order; steps are the run's steps,
// increasing.
func SkillTimeline(segs []skills.Segment, steps []int) []SkillStep {
	out := make([]SkillStep, len(steps))
	var alpha float64
	k := 0
	for i, step := range steps {
		out[i] = SkillStep{Step: step, Events: make([]int, len(SkillEvents))}
		for ; k < len(segs) && segs[k].Step <= step; k++ {
			for _, e := range segs[k].Rows {
				for j, name := range SkillEvents {
					if e.Event == name {
						out[i].Events[j]++
					}
				}
				alpha = e.AlphaSpent
			}
		}
		out[i].AlphaSpent = alpha
	}
	return out
}

// SkillDecision is a promotion or retirement with the look that decided it.
type SkillDecision struct {
	Step int
	schema.LedgerRow
	Name string // the skill's name in the last library snapshot ("" when absent)
}

// SkillDecisions lists the promote and retire events in log order, named from lib.
func SkillDecisions(segs []skills.Segment, lib []schema.SkillRow) []SkillDecision {
	names := map[string]string{}
	for _, s := range lib {
		names[s.SkillID] = s.Name
	}
	var out []SkillDecision
	for _, s := range segs {
		for _, e := range s.Rows {
			if e.Event != skills.EventPromote && e.Event != skills.EventRetire {
				continue
			}
			d := SkillDecision{Step: s.Step, LedgerRow: e}
			if e.SkillID != nil {
				d.Name = names[*e.SkillID]
			}
			out = append(out, d)
		}
	}
	return out
}
