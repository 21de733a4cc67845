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
	used := make([]int, len(active)) // tasks each family handed out before this step
	for k := 1; k < step; k++ {
		for i, c := range counts(k) {
			used[i] += c
		}
	}
	var batch []string
	for i, c := range counts(step) {
		f := active[i]
		for p := used[i]; p < used[i]+c; p++ {
			epoch, idx := p/len(byFamily[f]), p%len(byFamily[f])
			batch = append(batch, epochOrder(seed, f, epoch, byFamily[f])[idx])
		}
	}
	key := func(id string) string {
		return stableHash(map[string]any{"seed": seed, "step": step, "task": id})
	}
	slices.SortFunc(batch, func(a, b string) int { return strings.Compare(key(a), key(b)) })
	return batch
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
