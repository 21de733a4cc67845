//go:build duckdb_arrow

package main

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"
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
