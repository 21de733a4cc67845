//go:build duckdb_arrow

package pipeline

import (
	"bytes"
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/runtest"
	"github.com/evosteer/evosteer-go/schema"
	"github.com/evosteer/evosteer-go/stages/rollout"
)

// stepFiles reads every file of a step's stage folders but the manifest (which holds wall
// times), by path relative to the step folder.
func stepFiles(t *testing.T, r *rundir.Folder, step int) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	dir := r.StepDir(step)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Dir(p) == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameStep checks that step holds the same files in a and b, byte for byte.
func sameStep(t *testing.T, a, b *rundir.Folder, step int) {
	t.Helper()
	fa, fb := stepFiles(t, a, step), stepFiles(t, b, step)
	for name, want := range fb {
		if got, ok := fa[name]; !ok {
			t.Errorf("step %d: %s is missing from the sharded run", step, name)
		} else if !bytes.Equal(got, want) {
			t.Errorf("step %d: %s differs from the unsharded run's", step, name)
		}
	}
	for name := range fa {
		if _, ok := fb[name]; !ok {
			t.Errorf("step %d: the sharded run holds %s, the unsharded one does not", step, name)
		}
	}
	for _, stage := range []string{layout.Rollout, layout.Rescore, layout.Aggregate, layout.Update, layout.Validate, layout.Author} {
		compared := 0
		for name := range fb {
			if strings.HasPrefix(name, stage+"/") {
				compared++
			}
		}
		if compared == 0 {
			t.Errorf("step %d: no %s files compared", step, stage)
		}
	}
}

// shardRuns makes two runs named alike (lineage names the run) on the simulated world: a, to be
// rolled out in shards, and b, trained unsharded for steps.
func shardRuns(t *testing.T, steps int) (a, b *rundir.Folder) {
	t.Helper()
	edit := func(c *config.Config) { c.Author.StartStep = 1 } // step 2 tests step 1's candidates
	a = runtest.SimRun(t, t.TempDir(), 8, edit)
	b = runtest.SimRun(t, t.TempDir(), 8, edit)
	if err := Train(context.Background(), b, steps, false, nil); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// shardsAtOnce rolls out the given shards of n of step concurrently, each through its own
// Folder, as separate processes on a cluster would.
func shardsAtOnce(t *testing.T, dir string, step, n int, shards ...int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(shards))
	for k, i := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := rundir.Open(dir)
			if err == nil {
				_, err = r.RunStage(context.Background(), step, rollout.Stage{Shard: rollout.Shard{Index: i, Count: n}}, false)
			}
			errs[k] = err
		}()
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			t.Fatalf("shard %d/%d: %v", shards[k], n, err)
		}
	}
}

// trainRecording trains r for steps and returns what it said of each step's rollout.
func trainRecording(t *testing.T, r *rundir.Folder, steps int) map[int]StageDone {
	t.Helper()
	got := map[int]StageDone{}
	if err := Train(context.Background(), r, steps, false, func(d StageDone) {
		if d.Stage == layout.Rollout {
			got[d.Step] = d
		}
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// A step rolled out as two shards at once and then trained is never rolled out again: train
// merges the shards (its rollout is reported skipped, merged from 2, none run again) into the
// files a whole rollout writes, and every file of the step — rollout, rescore, aggregate,
// update, validate, author — is byte-identical to an unsharded run's. Step 2, sharded in 3
// after a trained step 1 (its library tested by paired arms), the same.
func TestShardedStepEqualsUnsharded(t *testing.T) {
	a, b := shardRuns(t, 2)
	shardsAtOnce(t, a.Dir, 1, 2, 1, 2)
	m, err := a.ReadManifest(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Stages["rollout#1-of-2"]; !ok || len(m.Stages) != 2 {
		t.Fatalf("after the shards the manifest records %v", slices.Sorted(maps.Keys(m.Stages)))
	}
	done := trainRecording(t, a, 1)
	if d := done[1]; !d.Skipped || d.Merged != 2 || len(d.Reran) != 0 {
		t.Fatalf("train's rollout of step 1: %+v, want skipped, merged from 2 shards, none run again", d)
	}
	sameStep(t, a, b, 1)
	if m, _ := a.ReadManifest(1); len(m.Stages) != len(Stages) {
		t.Errorf("after the merge the manifest records %d stages, want the %d of a whole step", len(m.Stages), len(Stages))
	}

	shardsAtOnce(t, a.Dir, 2, 3, 1, 2, 3)
	done = trainRecording(t, a, 2)
	if d := done[1]; !d.Skipped || d.Merged != 0 {
		t.Errorf("train's rollout of the merged step 1: %+v, want up to date", d)
	}
	if d := done[2]; !d.Skipped || d.Merged != 3 || len(d.Reran) != 0 {
		t.Fatalf("train's rollout of step 2: %+v, want skipped, merged from 3 shards", d)
	}
	sameStep(t, a, b, 2)
	eps, err := schema.ReadFile[schema.EpisodeRow](schema.Episodes, filepath.Join(a.StageDir(2, layout.Rollout), layout.File(layout.Episodes)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(eps, func(e schema.EpisodeRow) bool { return e.Source == "paired_treatment" }) {
		t.Error("step 2 has no paired arms: the test does not cover them")
	}

	// A shard run again after its step was merged (a requeued cluster job) is up to date.
	res, err := a.RunStage(context.Background(), 2, rollout.Stage{Shard: rollout.Shard{Index: 2, Count: 3}}, false)
	if err != nil || !res.Skipped {
		t.Fatalf("shard 2/3 after the merge: %+v %v, want up to date", res, err)
	}
	sameStep(t, a, b, 2)
}

// Of a set of two shards only the first finished; the second died mid-way, leaving its
// temporary folder and a half-moved file. train runs only shard 2/2, merges, and the step is
// byte-identical to an unsharded run's.
func TestPartialShardsRunOnlyTheMissing(t *testing.T) {
	a, b := shardRuns(t, 1)
	shardsAtOnce(t, a.Dir, 1, 2, 1)
	dir := a.StageDir(1, layout.Rollout)
	if err := os.WriteFile(filepath.Join(dir, layout.ShardFile(layout.Episodes, 2, 2)), []byte("cut short"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(a.StepDir(1), ".tmp-rollout-123"), 0o755); err != nil {
		t.Fatal(err)
	}
	shard1, err := os.ReadFile(filepath.Join(dir, layout.ShardFile(layout.Decisions, 1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	done := trainRecording(t, a, 1)
	if d := done[1]; d.Skipped || d.Merged != 2 || !slices.Equal(d.Reran, []int{2}) {
		t.Fatalf("train's rollout of step 1: %+v, want shard 2 run, then merged from 2", d)
	}
	sameStep(t, a, b, 1)
	whole, err := os.ReadFile(filepath.Join(dir, layout.File(layout.Decisions)))
	if err != nil || len(whole) <= len(shard1) {
		t.Fatalf("merged decisions: %d bytes (%v), shard 1's %d", len(whole), err, len(shard1))
	}
	if left, _ := filepath.Glob(filepath.Join(a.StepDir(1), ".tmp-*")); len(left) != 0 {
		t.Errorf("leftovers of the dead shard: %v", left)
	}
}
