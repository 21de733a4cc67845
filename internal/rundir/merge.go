package rundir

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// recordedShards is the set of shards of stage name that m records: their count n (0 when m
// records none) and, sorted, the indexes i whose record is up to date for these inputs and
// seed under the run's configuration, with every output still holding its recorded sha256.
// commit keeps the records of one count only.
func (r *Folder) recordedShards(m *Manifest, name string, inputs map[string]string, stageSeed uint64) (n int, done []int) {
	for _, key := range stageKeys(m, name) {
		_, shard, ok := strings.Cut(key, "#")
		if !ok {
			continue
		}
		is, _, _ := strings.Cut(shard, "-of-")
		i, err := strconv.Atoi(is)
		if err != nil {
			continue
		}
		n = shardCount(key)
		if r.upToDate(m.Stages[key], inputs, stageSeed) {
			done = append(done, i)
		}
	}
	slices.Sort(done)
	return n, done
}

// completeShards runs, one after another, the shards of the set of n that are not done, so that
// the set is complete, and returns them. A shard that fails is named with the command that runs
// it alone.
func (r *Folder) completeShards(ctx context.Context, step int, mg Mergeable, n int, done []int) ([]int, error) {
	var reran []int
	for i := 1; i <= n; i++ {
		if slices.Contains(done, i) {
			continue
		}
		if _, err := r.RunStage(ctx, step, mg.AsShard(i, n), false); err != nil {
			return reran, fmt.Errorf("completing the shards of step %d's %s (%s done; running the missing ones here): %w; or run it alone with `evosteer %s --run %s --step %d --shard %d/%d`",
				step, mg.Name(), shardList(done, n), err, mg.Name(), r.Dir, step, i, n)
		}
		reran = append(reran, i)
	}
	return reran, nil
}

// shardList names shards i/n: "1/4, 3/4".
func shardList(is []int, n int) string {
	parts := make([]string, len(is))
	for k, i := range is {
		parts[k] = fmt.Sprintf("%d/%d", i, n)
	}
	return strings.Join(parts, ", ")
}
