package rundir

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/evosteer/evosteer-go/internal/layout"
)

// Shards lists a stage folder's files of one table: dir/table.arrow, or the complete set
// dir/table-i-of-n.arrow (i = 1..n; layout.ShardFile), sorted (none is not an error). A mixture
// of the two, shards of different counts, or a missing shard (a rollout redone with other
// shards, or one still running) is an error naming the problem.
func Shards(dir, table string) ([]string, error) {
	var out []string
	single := filepath.Join(dir, layout.File(table))
	if _, err := os.Stat(single); err == nil {
		out = append(out, single)
	}
	more, _ := filepath.Glob(filepath.Join(dir, layout.ShardPattern(table)))
	if len(more) == 0 {
		return out, nil
	}
	if len(out) > 0 {
		return nil, fmt.Errorf("%s holds both %s and sharded %s files", dir, layout.File(table), table)
	}
	seen := map[int]bool{}
	count := 0
	for _, p := range more {
		i, n, err := layout.ParseShardFile(table, filepath.Base(p))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if count != 0 && n != count {
			return nil, fmt.Errorf("%s holds %s shards of different counts (%d and %d)", dir, table, count, n)
		}
		count, seen[i] = n, true
	}
	for i := 1; i <= count; i++ {
		if !seen[i] {
			return nil, fmt.Errorf("%s lacks shard %d of %d of %s", dir, i, count, table)
		}
	}
	slices.Sort(more)
	return more, nil
}

// ShardedInputs lists, for a stage's Inputs, the files of tables that a stage of step writes
// together, shard by shard (a rollout's episodes and decisions), one list per table: the shards
// of the first table (Shards), or its whole file when it has none, and the same shards of the
// others. A listed file that does not exist is left to the stage runner, which names the
// command that writes it; an incomplete or mixed set of shards (Shards), or shards of another
// table that do not match the first's, are an error naming the command that recomputes them.
func (r *Folder) ShardedInputs(step int, stage string, tables ...string) ([][]string, error) {
	dir := r.StageDir(step, stage)
	redo := func(err error) error {
		return fmt.Errorf("%w: recompute the %s with `evosteer %s --run %s --step %d --force`, or run each of its shards again with --shard i/n --force", err, stage, stage, r.Dir, step)
	}
	first, err := Shards(dir, tables[0])
	if err != nil {
		return nil, redo(err)
	}
	out := make([][]string, len(tables))
	for k, table := range tables {
		for _, p := range first {
			i, n := 1, 1
			if name := filepath.Base(p); name != layout.File(tables[0]) {
				i, n, _ = layout.ParseShardFile(tables[0], name) // Shards checked it
			}
			out[k] = append(out[k], filepath.Join(dir, layout.ShardFile(table, i, n)))
		}
		if len(first) == 0 {
			out[k] = []string{filepath.Join(dir, layout.File(table))}
		}
		if k == 0 {
			continue
		}
		have, err := Shards(dir, table)
		if err != nil {
			return nil, redo(err)
		}
		if len(have) > 0 && !slices.Equal(have, out[k]) {
			return nil, redo(fmt.Errorf("%s: the %d %s files do not match the %d %s files", dir, len(have), table, len(first), tables[0]))
		}
	}
	return out, nil
}
