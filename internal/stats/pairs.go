package stats

import "sort"

// Pair outcomes and skip reasons.
const (
	OutcomeWin  = "win"
	OutcomeLoss = "loss"
	OutcomeTie  = "tie"

	SkipUnhealthyArm = "unhealthy_arm"
	SkipRepeatedTask = "repeated_task"
)

// Pairs scores this step's paired comparisons (METHOD.md §5.5 "Scoring a pair").
//
// The paired_treatment and paired_control episodes of eps with a non-empty PairID are grouped
// by PairID; a pair is kept only when it has both arms (if an arm occurs twice, the first in eps
// order is used), and pairs are returned sorted by PairID. With τ = threshold:
//
//	b+ = r_treatment ≥ τ,   b− = r_control ≥ τ
//	outcome = win if b+ ∧ ¬b−, loss if ¬b+ ∧ b−, tie otherwise
//
// Eligibility, checked in this order:
//  1. either arm unhealthy → ineligible, SkipReason "unhealthy_arm";
//  2. unless allowRepeated: the key (ComparisonID, TaskID) is in used (eligible pairs of
//     earlier steps) or was taken by an earlier eligible pair of this step (PairID order) →
//     ineligible, SkipReason "repeated_task";
//  3. otherwise eligible (SkipReason ""), and the key counts as used for later pairs.
//
// Ineligible pairs do not use up their key. SkillID, ComparisonID, TaskID and Family come from
// the treatment arm. used is not modified.
func Pairs(eps []Episode, threshold float64, used map[[2]string]bool, allowRepeated bool) []Pair {
	type arms struct{ plus, minus *Episode }
	groups := map[string]*arms{}
	for i := range eps {
		e := &eps[i]
		if e.PairID == "" || !isPaired(e) {
			continue
		}
		g := groups[e.PairID]
		if g == nil {
			g = &arms{}
			groups[e.PairID] = g
		}
		if e.Source == sourceTreatment {
			if g.plus == nil {
				g.plus = e
			}
		} else if g.minus == nil {
			g.minus = e
		}
	}
	ids := make([]string, 0, len(groups))
	for id, g := range groups {
		if g.plus != nil && g.minus != nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)

	taken := map[[2]string]bool{}
	out := make([]Pair, 0, len(ids))
	for _, id := range ids {
		g := groups[id]
		t, c := g.plus, g.minus
		p := Pair{
			PairID: id, ComparisonID: t.ComparisonID, SkillID: t.SkillID, TaskID: t.TaskID, Family: t.Family,
			BPlus: t.Reward >= threshold, BMinus: c.Reward >= threshold,
		}
		switch {
		case p.BPlus && !p.BMinus:
			p.Outcome = OutcomeWin
		case !p.BPlus && p.BMinus:
			p.Outcome = OutcomeLoss
		default:
			p.Outcome = OutcomeTie
		}
		key := [2]string{t.ComparisonID, t.TaskID}
		switch {
		case !t.Healthy || !c.Healthy:
			p.SkipReason = SkipUnhealthyArm
		case !allowRepeated && (used[key] || taken[key]):
			p.SkipReason = SkipRepeatedTask
		default:
			p.Eligible = true
			taken[key] = true
		}
		out = append(out, p)
	}
	return out
}
