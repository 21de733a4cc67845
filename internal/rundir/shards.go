package rundir

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Shards lists a stage folder's files of one table: dir/name.arrow, or the complete set
// dir/name-i-of-n.arrow (i = 1..n), sorted (none is not an error). A mixture of the two, shards
// of different counts, or a missing shard (a rollout redone with other shards, or one still
// running) is an error naming the problem.
func Shards(dir, name string) ([]string, error) {
	var out []string
	single := filepath.Join(dir, name+".arrow")
	if _, err := os.Stat(single); err == nil {
		out = append(out, single)
	}
	more, _ := filepath.Glob(filepath.Join(dir, name+"-*-of-*.arrow"))
	if len(more) == 0 {
		return out, nil
	}
	if len(out) > 0 {
		return nil, fmt.Errorf("%s holds both %s.arrow and sharded %s files", dir, name, name)
	}
	seen := map[int]bool{}
	count := 0
	for _, p := range more {
		var i, n int
		if _, err := fmt.Sscanf(strings.TrimPrefix(filepath.Base(p), name+"-"), "%d-of-%d.arrow", &i, &n); err != nil || i < 1 || i > n {
			return nil, fmt.Errorf("%s: not a shard name (%s-i-of-n.arrow)", p, name)
		}
		if count != 0 && n != count {
			return nil, fmt.Errorf("%s holds %s shards of different counts (%d and %d)", dir, name, count, n)
		}
		count, seen[i] = n, true
	}
	for i := 1; i <= count; i++ {
		if !seen[i] {
			return nil, fmt.Errorf("%s lacks shard %d of %d of %s", dir, i, count, name)
		}
	}
	slices.Sort(more)
	return more, nil
}
