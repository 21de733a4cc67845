package rollout

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
)

// stableHash is the reference release's stable_hash: sha256 of canonical JSON (sorted keys).
func stableHash(v map[string]any) string {
	b, err := json.Marshal(v) // encoding/json sorts map keys
	if err != nil {
		panic(err) // plain values only
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Schedule picks the task ids of one step, source-balanced as the reference release does
// (METHOD.md §1.4): the batch is split evenly over the families, the remainder rotating over
// families by step; each family walks its tasks in a per-family, per-epoch permutation ordered
// by stable_hash({seed, source, epoch, task}), so every task is used once per epoch; the batch
// order is a hash shuffle. families fixes the family order; byFamily holds each family's task ids.
//
// A step never holds a task twice, so episode ids ({step}/{task}/{source}/{k}) are unique: a
// family gives at most as many tasks as it has (its share shrinks, and so does the batch), and a
// task that the walk reaches again in the same step, across an epoch boundary, waits for the
// next step, ahead of the walk. Where no task repeats, this is the plain walk.
func Schedule(seed uint64, step, batchSize int, families []string, byFamily map[string][]string) []string {
	active := make([]string, 0, len(families))
	for _, f := range families {
		if len(byFamily[f]) > 0 {
			active = append(active, f)
		}
	}
	if len(active) == 0 || batchSize <= 0 {
		return nil
	}
	counts := func(k int) []int { // tasks per active family at step k (1-based)
		n := len(active)
		c := make([]int, n)
		for i := range c {
			c[i] = batchSize / n
		}
		r := batchSize % n
		for j := 0; j < r; j++ {
			c[((k-1)*r+j)%n]++
		}
		return c
	}
	walks := make([]*walk, len(active))
	for i, f := range active {
		walks[i] = &walk{seed: seed, family: f, ids: byFamily[f]}
	}
	var batch []string
	for k := 1; k <= step; k++ { // replay the earlier steps: what each walk handed out and deferred
		for i, c := range counts(k) {
			picked := walks[i].take(c)
			if k == step {
				batch = append(batch, picked...)
			}
		}
	}
	key := func(id string) string {
		return stableHash(map[string]any{"seed": seed, "step": step, "task": id})
	}
	slices.SortFunc(batch, func(a, b string) int { return strings.Compare(key(a), key(b)) })
	return batch
}

// walk is one family's walk over its epoch permutations.
type walk struct {
	seed     uint64
	family   string
	ids      []string
	next     int      // position of the next task in the concatenated epochs
	deferred []string // tasks reached in a step that already held them, handed out first
	epoch    int      // the epoch order cached in order
	order    []string
}

// take hands out the next c distinct tasks (at most as many as the family has).
func (w *walk) take(c int) []string {
	c = min(c, len(w.ids))
	out := make([]string, 0, c)
	held := make(map[string]bool, c)
	var later []string
	for _, id := range w.deferred {
		if len(out) < c && !held[id] {
			out, held[id] = append(out, id), true
		} else {
			later = append(later, id)
		}
	}
	for len(out) < c {
		id := w.at(w.next)
		w.next++
		if held[id] {
			later = append(later, id)
			continue
		}
		out, held[id] = append(out, id), true
	}
	w.deferred = later
	return out
}

// at is the task at position p of the walk.
func (w *walk) at(p int) string {
	epoch := p / len(w.ids)
	if w.order == nil || w.epoch != epoch {
		w.epoch, w.order = epoch, epochOrder(w.seed, w.family, epoch, w.ids)
	}
	return w.order[p%len(w.ids)]
}

// epochOrder is one family's task order in one epoch.
func epochOrder(seed uint64, family string, epoch int, ids []string) []string {
	keyed := make([][2]string, len(ids))
	for i, id := range ids {
		keyed[i] = [2]string{stableHash(map[string]any{"seed": seed, "source": family, "epoch": epoch, "task": id}), id}
	}
	slices.SortFunc(keyed, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	out := make([]string, len(ids))
	for i, k := range keyed {
		out[i] = k[1]
	}
	return out
}
