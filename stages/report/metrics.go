package report

import (
	"cmp"
	"gonum.org/v1/gonum/stat"
	"math"
	"slices"

	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/schema"
)

// Episode sources the figures separate (episodes.source).
const (
	SourceTheta = "current"           // rollouts of π_θ
	SourceRho   = "natural_reference" // rollouts of the frozen reference ρ
)

// AUC is the area under the ROC curve of scores for separating positives from negatives: the
// Mann–Whitney probability that a random positive scores above a random negative, a tie counting
// one half. It is exact (midranks over equal scores) and NaN when either class is empty.
func AUC(scores []float64, positive []bool) float64 {
	type obs struct {
		s   float64
		pos bool
	}
	all := make([]obs, len(scores))
	var nPos, nNeg float64
	for i, s := range scores {
		all[i] = obs{s, positive[i]}
		if positive[i] {
			nPos++
		} else {
			nNeg++
		}
	}
	if nPos == 0 || nNeg == 0 {
		return math.NaN()
	}
	slices.SortFunc(all, func(a, b obs) int { return cmp.Compare(a.s, b.s) })
	// Sum of the positives' ranks, each tie group sharing its mean rank (ranks 1-based).
	var rankSum float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].s == all[i].s {
			j++
		}
		mid := float64(i+1+j) / 2
		for _, o := range all[i:j] {
			if o.pos {
				rankSum += mid
			}
		}
		i = j
	}
	u := rankSum - nPos*(nPos+1)/2
	return u / (nPos * nNeg)
}

// Outcome of one edit: the graded score of the designated output just after it against just
// before it (paper appendix, Diagnostics, Fig. 4e).
type Outcome int

const (
	Better Outcome = iota
	Same
	Worse
)

// Outcomes in the order the figures stack them.
var Outcomes = []Outcome{Better, Same, Worse}

func (o Outcome) String() string { return [...]string{"better", "same", "worse"}[o] }

// ClassifyEdit compares the output score before an edit with the score after it. ok is false
// when either is null (no output node yet): such an edit has no outcome. Scores compare
// exactly: the graders are deterministic, so an unchanged answer scores identically.
func ClassifyEdit(before, after *float64) (o Outcome, ok bool) {
	if before == nil || after == nil {
		return 0, false
	}
	switch {
	case *after > *before:
		return Better, true
	case *after < *before:
		return Worse, true
	}
	return Same, true
}

// EditKinds are the edit actions of the figure, in the order of METHOD.md §2.1 (STOP is not an
// edit).
var EditKinds = []string{orchestra.KindAddAgent, orchestra.KindAddEdge, orchestra.KindBindSkill,
	orchestra.KindSetOutput, orchestra.KindRerunAgent, orchestra.KindDropAgent}

// EditDecision is the part of a decisions row the edit outcomes read.
type EditDecision struct {
	EpisodeID   string
	T           int32
	Kind        string
	OutputScore *float64
}

// EditCounts counts the outcomes of one action kind's edits in one source's episodes.
type EditCounts struct {
	Source, Kind string
	N            [3]int // indexed by Outcome
}

// Total is the number of edits with an outcome.
func (c EditCounts) Total() int { return c.N[Better] + c.N[Same] + c.N[Worse] }

// EditOutcomes classifies every edit of the θ and ρ episodes: decision t's output score against
// decision t−1's of the same episode (decision 0 has no before). sourceOf maps episode ids to
// sources; decisions of other sources (paired arms) are left out. The result has one entry per
// source (θ, ρ) and edit kind, in EditKinds order, zero counts included. Decisions may come in
// any order.
func EditOutcomes(decs []EditDecision, sourceOf map[string]string) []EditCounts {
	sorted := slices.Clone(decs)
	slices.SortFunc(sorted, func(a, b EditDecision) int {
		return cmp.Or(cmp.Compare(a.EpisodeID, b.EpisodeID), cmp.Compare(a.T, b.T))
	})
	out := make([]EditCounts, 0, 2*len(EditKinds))
	index := map[[2]string]int{}
	for _, src := range []string{SourceTheta, SourceRho} {
		for _, k := range EditKinds {
			index[[2]string{src, k}] = len(out)
			out = append(out, EditCounts{Source: src, Kind: k})
		}
	}
	for i := 1; i < len(sorted); i++ {
		prev, d := sorted[i-1], sorted[i]
		if prev.EpisodeID != d.EpisodeID || prev.T != d.T-1 {
			continue
		}
		j, ok := index[[2]string{sourceOf[d.EpisodeID], d.Kind}]
		if !ok {
			continue
		}
		if o, ok := ClassifyEdit(prev.OutputScore, d.OutputScore); ok {
			out[j].N[o]++
		}
	}
	return out
}

// StepRewards is one step's mean reward of the θ and ρ rollouts over healthy episodes (NaN when
// a source has none) and the fraction of the step's episodes (every source) that are unhealthy.
type StepRewards struct {
	Step                 int
	Theta, Rho           float64
	NTheta, NRho         int
	Unhealthy            float64
	Episodes, NUnhealthy int
}

// Rewards summarises the episodes of each step; steps come out in increasing order.
func Rewards(eps []StepEpisode) []StepRewards {
	bySteps := map[int]*StepRewards{}
	sums := map[int]*[2]float64{}
	for _, e := range eps {
		s := bySteps[e.Step]
		if s == nil {
			s = &StepRewards{Step: e.Step}
			bySteps[e.Step], sums[e.Step] = s, &[2]float64{}
		}
		s.Episodes++
		if !e.Healthy {
			s.NUnhealthy++
			continue
		}
		switch e.Source {
		case SourceTheta:
			s.NTheta++
			sums[e.Step][0] += e.Reward
		case SourceRho:
			s.NRho++
			sums[e.Step][1] += e.Reward
		}
	}
	out := make([]StepRewards, 0, len(bySteps))
	for step, s := range bySteps {
		s.Theta = sums[step][0] / float64(s.NTheta) // 0/0 = NaN: no healthy θ episode
		s.Rho = sums[step][1] / float64(s.NRho)
		s.Unhealthy = float64(s.NUnhealthy) / float64(s.Episodes)
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b StepRewards) int { return cmp.Compare(a.Step, b.Step) })
	return out
}

// RollingWindow is the number of steps the training curves average over.
const RollingWindow = 10

// GapPoint is the rolling view of the training curves at one step: the mean rewards of θ and ρ
// over the last RollingWindow steps (fewer at the start), and the mean of the per-step
// differences θ − ρ with its standard error (NaN with fewer than two steps).
type GapPoint struct {
	Step                int
	Theta, Rho, Gap, SE float64
	Steps               int // steps in the window with both means
}

// RollingGap averages the per-step rewards over the last w steps of each step. The two
// sources of a step play the same tasks, so their difference removes the batch's difficulty:
// its rolling mean is what shows whether θ pulls away from ρ.
func RollingGap(rs []StepRewards, w int) []GapPoint {
	out := make([]GapPoint, len(rs))
	for i, r := range rs {
		var th, rh, d []float64
		for _, q := range rs[max(0, i-w+1) : i+1] {
			if !math.IsNaN(q.Theta) {
				th = append(th, q.Theta)
			}
			if !math.IsNaN(q.Rho) {
				rh = append(rh, q.Rho)
			}
			if !math.IsNaN(q.Theta) && !math.IsNaN(q.Rho) {
				d = append(d, q.Theta-q.Rho)
			}
		}
		g := GapPoint{Step: r.Step, Theta: mean(th), Rho: mean(rh), Gap: mean(d), SE: math.NaN(), Steps: len(d)}
		if len(d) >= 2 {
			g.SE = stat.StdDev(d, nil) / math.Sqrt(float64(len(d)))
		}
		out[i] = g
	}
	return out
}

// mean is the mean of v, NaN when v is empty.
func mean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	return stat.Mean(v, nil)
}

// StepEpisode is an episodes row with the step its file belongs to.
type StepEpisode struct {
	Step int
	schema.EpisodeRow
}

// StepAnchor is an anchors row with the step its file belongs to.
type StepAnchor struct {
	Step int
	schema.AnchorRow
}

// AUCPoint is the anchor AUC over the natural-reference episodes of steps FirstAUCStep..Step
// (cumulative): p̂ against the task-family mean m_category as predictors of success.
type AUCPoint struct {
	Step                 int
	Positives, Negatives int
	PHat, Family         float64 // NaN until both outcomes occur
}

// FirstAUCStep is the first step whose reference episodes enter the anchor AUC: at step 1 the
// pool holds only the step's own siblings (paper appendix: "after step 2" of training).
const FirstAUCStep = 2

// AnchorAUC joins anchors with their episodes and returns the cumulative AUC after each step
// from FirstAUCStep on. An episode enters when it is a natural_reference rollout whose anchor was
// computed leave-one-out (loo: healthy and in the pool, its own outcome excluded from p̂);
// success is reward ≥ threshold.
func AnchorAUC(anchors []StepAnchor, eps []StepEpisode, threshold float64) []AUCPoint {
	reward := make(map[string]float64, len(eps))
	for _, e := range eps {
		if e.Source == SourceRho {
			reward[e.EpisodeID] = e.Reward
		}
	}
	sorted := slices.Clone(anchors)
	slices.SortStableFunc(sorted, func(a, b StepAnchor) int { return cmp.Compare(a.Step, b.Step) })
	var pHat, family []float64
	var success []bool
	var out []AUCPoint
	for i, a := range sorted {
		r, ok := reward[a.EpisodeID]
		if a.Step >= FirstAUCStep && a.LOO && ok {
			pHat, family = append(pHat, a.PHat), append(family, a.MCategory)
			success = append(success, r >= threshold)
		}
		if a.Step < FirstAUCStep || (i+1 < len(sorted) && sorted[i+1].Step == a.Step) {
			continue
		}
		p := AUCPoint{Step: a.Step, PHat: AUC(pHat, success), Family: AUC(family, success)}
		for _, s := range success {
			if s {
				p.Positives++
			} else {
				p.Negatives++
			}
		}
		out = append(out, p)
	}
	return out
}
