package stats

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Bucket kinds and the Correction kind used when no bucket qualifies.
const (
	KindExact  = "exact"
	KindCoarse = "coarse"
	KindNone   = "none"
)

// SourceModeReferenceWithPaired is the buckets.source_mode under which paired arms feed the
// buckets; any other mode (natural_only) uses natural_reference episodes alone.
const SourceModeReferenceWithPaired = "reference_with_paired"

// feedsBuckets reports whether an episode's visits enter the structural buckets
// (METHOD.md §4.3 "Visits", paper §C.5 "Data routing"): healthy natural_reference
// episodes, plus healthy paired arms under reference_with_paired.
func feedsBuckets(mode string, e *Episode) bool {
	if !e.Healthy {
		return false
	}
	return e.Source == sourceNatural || (mode == SourceModeReferenceWithPaired && isPaired(e))
}

// Excess is the per-visit term z − 1 of Def. B.3, with z = R_β(x)/B_x = exp(log R_β(r) − A):
//
//	excess = exp(ln(1 + (e^β − 1)·r) − A) − 1
//
// evaluated in that order, where r is the episode's reward and A its anchor u_{q,x}.
func Excess(beta, reward, anchor float64) float64 {
	return math.Exp(logRewardTransform(beta, reward)-anchor) - 1
}

// BucketLogPooledRatio is log A_g of Def. B.3 (Eq. evs-ratio-pooling), before the clip:
//
//	log A_g = ln(1 + excess_sum/(visits + n0))
//
// evaluated as visits+n0, then excess_sum/(…), then 1+(…), then ln; n0 = p.Pseudocount. An
// empty bucket (visits = 0, excess_sum = 0) gives 0.
func BucketLogPooledRatio(p BucketParams, visits int64, excessSum float64) float64 {
	return math.Log(1 + excessSum/(float64(visits)+p.Pseudocount))
}

// BucketCorrection is c(g) of Def. B.3: log A_g clipped to [−c_max, c_max], c_max =
// p.CorrectionBound.
func BucketCorrection(p BucketParams, logPooledRatio float64) float64 {
	return clip(logPooledRatio, -p.CorrectionBound, p.CorrectionBound)
}

// Buckets adds this step's structural visits (from eps, this step's episodes) to prev, the
// cumulative bucket state after the previous step, and returns the new cumulative state sorted
// by (Kind, Key). prev is not modified.
//
// Visits (Def. B.3, METHOD.md §4.3): every episode that feeds the buckets (healthy
// natural_reference; plus healthy paired_treatment and paired_control when p.SourceMode is
// reference_with_paired) contributes, in episode order, each decision state s_t in t order
// (Key, CoarseKey, Nodes, Edges, Stopped = false), then its terminal state (TerminalKey,
// TerminalCoarseKey, TerminalNodes, TerminalEdges, TerminalStopped). Repeated structures count
// again (visit multiplicity), and the forced root of paired arms is included. Each visit adds
// 1 to Visits and Excess(p.Beta, r, A) to ExcessSum of both its exact bucket (Kind "exact",
// Key = the exact key) and its coarse bucket (Kind "coarse", Key = the coarse key), with
// A = anchors[episode ID]. A bucket's Nodes, Edges, Stopped are those of its first visit (the
// key encodes them, so they agree for every visit).
//
// Summation order: this step's excesses of a bucket are summed in visit order into a step sum,
// and the cumulative value is prev.ExcessSum + step sum (Visits likewise). Every bucket's
// LogPooledRatio and Correction, old or new, are then recomputed from Visits and ExcessSum.
//
// It panics if a visiting episode has no anchor in anchors (Anchors yields one for every
// episode of the step, so that is a caller bug).
func Buckets(p BucketParams, prev []Bucket, eps []Episode, anchors map[string]float64) []Bucket {
	type id struct{ kind, key string }
	type acc struct {
		b      Bucket
		visits int64
		excess float64
	}
	state := make(map[id]*acc, len(prev))
	order := make([]id, 0, len(prev))
	for _, b := range prev {
		k := id{b.Kind, b.Key}
		if _, dup := state[k]; dup {
			panic(fmt.Sprintf("stats: duplicate previous bucket %s %q", b.Kind, b.Key))
		}
		state[k] = &acc{b: b}
		order = append(order, k)
	}
	visit := func(kind, key string, nodes, edges int, stopped bool, excess float64) {
		k := id{kind, key}
		a := state[k]
		if a == nil {
			a = &acc{b: Bucket{Kind: kind, Key: key, Nodes: nodes, Edges: edges, Stopped: stopped}}
			state[k] = a
			order = append(order, k)
		}
		a.visits++
		a.excess += excess
	}
	for i := range eps {
		e := &eps[i]
		if !feedsBuckets(p.SourceMode, e) {
			continue
		}
		anchor, ok := anchors[e.ID]
		if !ok {
			panic(fmt.Sprintf("stats: no anchor for episode %q", e.ID))
		}
		excess := Excess(p.Beta, e.Reward, anchor)
		for _, d := range e.Decisions {
			visit(KindExact, d.Key, d.Nodes, d.Edges, false, excess)
			visit(KindCoarse, d.CoarseKey, d.Nodes, d.Edges, false, excess)
		}
		visit(KindExact, e.TerminalKey, e.TerminalNodes, e.TerminalEdges, e.TerminalStopped, excess)
		visit(KindCoarse, e.TerminalCoarseKey, e.TerminalNodes, e.TerminalEdges, e.TerminalStopped, excess)
	}

	out := make([]Bucket, 0, len(order))
	for _, k := range order {
		a := state[k]
		b := a.b
		if a.visits > 0 {
			b.Visits += a.visits
			b.ExcessSum += a.excess
		}
		b.LogPooledRatio = BucketLogPooledRatio(p, b.Visits, b.ExcessSum)
		b.Correction = BucketCorrection(p, b.LogPooledRatio)
		out = append(out, b)
	}
	slices.SortFunc(out, func(x, y Bucket) int {
		return cmp.Or(cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Key, y.Key))
	})
	return out
}

// Corrections looks up the lagged structure correction c_{k−1}(g(s_t)) (Def. B.1, B.3,
// METHOD.md §4.3 "Lookup", one-batch lag) of every decision state of eps, every source, in
// episode order then t order. buckets must be the cumulative state after the PREVIOUS step
// (before this step's visits are added): that is the one-batch lag.
//
//	exact bucket of s_t, if its Visits ≥ p.Minimum       → its Correction, Kind "exact"
//	else coarse bucket of s_t, if its Visits ≥ p.Minimum → its Correction, Kind "coarse"
//	else                                                   0, Kind "none"
//
// with the chosen bucket's LogPooledRatio beside it (0 for "none").
//
// A bucket absent from buckets is never selected (even with p.Minimum ≤ 0). Terminal states
// are never looked up. With p.CorrectionsOff every state gets 0, Kind "none".
func Corrections(p BucketParams, buckets []Bucket, eps []Episode) []Correction {
	type id struct{ kind, key string }
	index := make(map[id]*Bucket, len(buckets))
	for i := range buckets {
		index[id{buckets[i].Kind, buckets[i].Key}] = &buckets[i]
	}
	var out []Correction
	for i := range eps {
		e := &eps[i]
		for _, d := range e.Decisions {
			c := Correction{EpisodeID: e.ID, T: d.T, Kind: KindNone}
			if !p.CorrectionsOff {
				if b := index[id{KindExact, d.Key}]; b != nil && b.Visits >= p.Minimum {
					c.Kind, c.LogPooledRatio, c.Correction = KindExact, b.LogPooledRatio, b.Correction
				} else if b := index[id{KindCoarse, d.CoarseKey}]; b != nil && b.Visits >= p.Minimum {
					c.Kind, c.LogPooledRatio, c.Correction = KindCoarse, b.LogPooledRatio, b.Correction
				}
			}
			out = append(out, c)
		}
	}
	return out
}
