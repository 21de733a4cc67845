package stats

import (
	"cmp"
	"fmt"
	"slices"
)

// The running state the aggregate stage carries from step to step besides the buckets: the anchor
// pool (sql/anchor_pool.sql) and the pairs' used keys (sql/pairs_used.sql). Step k's state is
// step k − 1's plus step k's rows, so a step reads one step back, not the whole history.

// PoolTask is one row of the anchor_pool table: one task's part of the pool of Def. B.2 (its
// healthy natural_reference episodes) after some step.
type PoolTask struct {
	TaskID, Family string
	RewardSum      float64
	Episodes       int64
}

// AnchorPool adds one step's episodes eps to prev, the anchor pool after the previous step (nil
// at step 1), and returns the pool after this step sorted by TaskID. prev is not modified.
//
// A task's step sum is fsum (DuckDB's Kahan summation, kahanSum) of its healthy
// natural_reference rewards in eps order (file order); then
//
//	RewardSum = prev RewardSum + step sum,   Episodes = prev Episodes + step count
//
// with 0 for a side the task is absent from (a task with no pooled episode in eps keeps its
// values). So a sum is the step-ordered running sum of per-step sums: the definition
// sql/anchor_pool.sql computes, which this reproduces bit for bit whatever the rewards (a
// single sum over every step's rewards can differ in the last ulp for fractional rewards).
//
// A task whose pooled episodes name two families, in eps or against prev, is an error. A task
// twice in prev panics (the caller passed a state no step writes).
func AnchorPool(prev []PoolTask, eps []Episode) ([]PoolTask, error) {
	type acc struct {
		family string
		sum    kahanSum
		n      int64
	}
	added := map[string]*acc{}
	for i := range eps {
		e := &eps[i]
		if !e.Healthy || e.Source != sourceNatural {
			continue
		}
		a := added[e.TaskID]
		switch {
		case a == nil:
			a = &acc{family: e.Family}
			added[e.TaskID] = a
		case a.family != e.Family:
			return nil, fmt.Errorf("task %s has natural_reference episodes of families %s and %s (episode %s)", e.TaskID, a.family, e.Family, e.ID)
		}
		a.sum.add(e.Reward)
		a.n++
	}
	out := make([]PoolTask, 0, len(prev)+len(added))
	seen := make(map[string]bool, len(prev))
	for _, p := range prev {
		if seen[p.TaskID] {
			panic(fmt.Sprintf("stats: task %q twice in the previous anchor pool", p.TaskID))
		}
		seen[p.TaskID] = true
		var step float64
		if a := added[p.TaskID]; a != nil {
			if a.family != p.Family {
				return nil, fmt.Errorf("task %s has natural_reference episodes of family %s, but of family %s in earlier steps", p.TaskID, a.family, p.Family)
			}
			step = a.sum.sum
			p.Episodes += a.n
		}
		p.RewardSum += step // + 0 without pooled episodes in eps, as the SQL adds coalesce(…, 0)
		out = append(out, p)
	}
	for id, a := range added {
		if !seen[id] {
			out = append(out, PoolTask{TaskID: id, Family: a.family, RewardSum: a.sum.sum, Episodes: a.n})
		}
	}
	slices.SortFunc(out, func(x, y PoolTask) int { return cmp.Compare(x.TaskID, y.TaskID) })
	return out, nil
}

// kahanSum is DuckDB's fsum (KahanAddInternal): Kahan's compensated sum, starting at 0, whose
// result is the running sum without its compensation term. Added in the same order as DuckDB
// feeds the rows, it gives DuckDB's value bit for bit.
type kahanSum struct{ sum, err float64 }

func (k *kahanSum) add(x float64) {
	diff := x - k.err
	next := k.sum + diff
	k.err = (next - k.sum) - diff
	k.sum = next
}

// UsedPair is one row of the pairs_used table: a (comparison, task) key that an eligible pair
// used, and the step of the first such pair.
type UsedPair struct {
	ComparisonID, TaskID string
	FirstStep            int
}

// PairsUsed adds the keys of the eligible pairs of step (pairs, as Pairs returns them) to prev,
// the keys used through the previous step (nil at step 1), and returns them sorted by
// (ComparisonID, TaskID). A key new to the state gets FirstStep = step; a key already in prev
// keeps its row (with admission.allow_repeated_tasks a key can be used again). prev is not
// modified; a key twice in prev panics (the caller passed a state no step writes).
func PairsUsed(prev []UsedPair, pairs []Pair, step int) []UsedPair {
	out := slices.Clone(prev)
	have := UsedKeys(prev)
	if len(have) != len(prev) {
		panic("stats: a key twice in the previous pairs_used state")
	}
	for _, p := range pairs {
		if key := [2]string{p.ComparisonID, p.TaskID}; p.Eligible && !have[key] {
			have[key] = true
			out = append(out, UsedPair{ComparisonID: p.ComparisonID, TaskID: p.TaskID, FirstStep: step})
		}
	}
	slices.SortFunc(out, func(x, y UsedPair) int {
		return cmp.Or(cmp.Compare(x.ComparisonID, y.ComparisonID), cmp.Compare(x.TaskID, y.TaskID))
	})
	return out
}

// UsedKeys is the set of (ComparisonID, TaskID) keys of a pairs_used state: the used argument of
// Pairs.
func UsedKeys(state []UsedPair) map[[2]string]bool {
	m := make(map[[2]string]bool, len(state))
	for _, u := range state {
		m[[2]string{u.ComparisonID, u.TaskID}] = true
	}
	return m
}
