//go:build duckdb_arrow

package main

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/episode"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/schema"
)

// Shards as a cluster runs them: `rollout --shard 1/2` and `--shard 2/2` as two processes at
// once, then `train` merges them without rolling the step out again (its line says so), and the
// run holds the same files, byte for byte, as one trained unsharded. `step` of a step with only
// shard 1/2 done runs shard 2/2 alone, then merges.
func TestTrainUsesCompletedShards(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "small.yaml")
	writeFile(t, cfg, trainConfig)
	want := runFiles(t, trainedRun(t, "a", "", "2"))
	dir := filepath.Join(t.TempDir(), "a") // the same name: lineage records it
	if out, err := run(t, "", "init", "--run", dir, "--config", cfg); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	var procs []*cliProcess
	for _, sh := range []string{"1/2", "2/2"} {
		procs = append(procs, startCLI(t, "rollout", "--run", dir, "--step", "1", "--shard", sh))
	}
	for _, p := range procs {
		for range p.lines {
		}
		if err := <-p.done; err != nil {
			t.Fatalf("a shard: %v", err)
		}
	}
	out, err := run(t, "", "train", "--run", dir, "--steps", "1")
	if err != nil || !strings.Contains(out, "step 1/1 rollout   merged its 2 complete shards") {
		t.Fatalf("train over complete shards: %v\n%s", err, out)
	}
	if out, err := run(t, "", "rollout", "--run", dir, "--step", "2", "--shard", "1/2"); err != nil {
		t.Fatalf("shard 1/2 of step 2: %v\n%s", err, out)
	}
	out, err = run(t, "", "step", "--run", dir, "--step", "2")
	if err != nil || !strings.Contains(out, "step 2 rollout   ran its missing shard(s) 2/2, then merged its 2 shards") {
		t.Fatalf("step over a partial set of shards: %v\n%s", err, out)
	}
	got := runFiles(t, dir)
	if !maps.Equal(got, want) {
		for name, sum := range want {
			if got[name] != sum {
				t.Errorf("%s differs from the unsharded run's", name)
			}
		}
		t.Fatalf("the sharded run holds %d files, the unsharded %d", len(got), len(want))
	}
}

// A shard SIGKILLed midway (a real process, as a preemptible partition kills one) keeps the
// episodes of its finished tasks; run again, it plays only the episodes of the tasks that had
// not finished — counted — and writes the same files, byte for byte, as a shard never killed.
func TestShardResumesAfterAKill(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "small.yaml")
	writeFile(t, cfg, "batch:\n  tasks: 24\nrollout:\n  workers: 1\ntasks:\n  train_per_family: 8\n  test_per_family: 2\n")
	shard := []string{"rollout", "--step", "1", "--shard", "1/2"}
	initRun := func() string {
		dir := filepath.Join(t.TempDir(), "a") // the same name: lineage records it
		if out, err := run(t, "", "init", "--run", dir, "--config", cfg); err != nil {
			t.Fatalf("init: %v\n%s", err, out)
		}
		return dir
	}
	ref := initRun()
	if out, err := run(t, "", append(shard, "--run", ref)...); err != nil {
		t.Fatalf("unkilled shard: %v\n%s", err, out)
	}
	want := runFiles(t, ref)
	total := len(readRows[schema.EpisodeRow](t, schema.Episodes, filepath.Join(ref, "step-000001", "rollout", layout.ShardFile(layout.Episodes, 1, 2))))

	// Kill the shard as soon as it has kept a task; again, in a fresh run, when it finished first.
	var dir string
	kept, parts := 0, 0
	for try := 0; try < 5 && kept == 0; try++ {
		dir = initRun()
		glob := filepath.Join(dir, "step-000001", ".rollout-parts", "*", "part-*")
		p := startCLI(t, append(shard, "--run", dir)...)
		killed, exited := false, false
		for !killed && !exited {
			select {
			case <-p.done:
				exited = true
			default:
				if found, _ := filepath.Glob(glob); len(found) > 0 {
					p.kill()
					killed = true
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
		if !killed {
			continue
		}
		found, _ := filepath.Glob(glob)
		parts, kept = len(found), 0
		for _, f := range found {
			kept += len(readRows[schema.EpisodeRow](t, schema.Episodes, filepath.Join(f, layout.File(layout.Episodes))))
		}
		if kept == total { // every task was kept before the kill landed
			kept = 0
		}
	}
	if kept == 0 {
		t.Fatal("no try killed the shard between its first kept task and its last")
	}
	before := episode.Started()
	if out, err := run(t, "", append(shard, "--run", dir)...); err != nil {
		t.Fatalf("resumed shard: %v\n%s", err, out)
	}
	played := int(episode.Started() - before)
	t.Logf("shard 1/2: %d episodes; killed with %d kept in %d parts; resumed, it played %d", total, kept, parts, played)
	if played != total-kept {
		t.Errorf("the resumed shard played %d episodes, want the %d of its unfinished tasks (%d of %d were kept)", played, total-kept, kept, total)
	}
	if _, err := os.Stat(filepath.Join(dir, "step-000001", ".rollout-parts")); !os.IsNotExist(err) {
		t.Errorf("the parts are left after the shard committed (%v)", err)
	}
	if got := runFiles(t, dir); !maps.Equal(got, want) {
		for name, sum := range want {
			if got[name] != sum {
				t.Errorf("%s differs from the unkilled shard's", name)
			}
		}
		t.Fatalf("the resumed run holds %d files, the unkilled %d", len(got), len(want))
	}
}

// readRows reads a table's rows.
func readRows[T any](t *testing.T, table *schema.Table, path string) []T {
	t.Helper()
	rows, err := schema.ReadFile[T](table, path)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
