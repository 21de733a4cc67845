//go:build duckdb_arrow

package aggregate

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/runtest"
	"github.com/evosteer/evosteer-go/schema"
	"github.com/evosteer/evosteer-go/stages/rollout"
)

// rolloutRun initialises a run on the simulated world with a few tasks per family and rolls out
// the given steps.
func rolloutRun(t *testing.T, steps int, shards int) *rundir.Folder {
	t.Helper()
	r := runtest.SimRun(t, t.TempDir(), 8, func(c *config.Config) { c.Rollout.Workers = 2 })
	for k := 1; k <= steps; k++ {
		runtest.Untrained(t, r, k-1)
		for i := 1; i <= shards; i++ {
			if _, err := r.RunStage(context.Background(), k, rollout.Stage{Shard: rollout.Shard{Index: i, Count: shards}}, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	return r
}

// The stage on real rollout output: two steps (the second sharded), every table agrees with the
// oracle, the buckets of step 2 carry step 1's, the lag gives step 2 non-trivial corrections, an
// unchanged stage is skipped, a rerun is byte-identical, and a changed input reruns it.
func TestStageOnRolloutOutput(t *testing.T) {
	ctx := context.Background()
	r := rolloutRun(t, 1, 1)
	runtest.Untrained(t, r, 1)
	for i := 1; i <= 2; i++ {
		if _, err := r.RunStage(ctx, 2, rollout.Stage{Shard: rollout.Shard{Index: i, Count: 2}}, false); err != nil {
			t.Fatal(err)
		}
	}
	var out [3]*Tables
	for k := 1; k <= 2; k++ {
		out[k] = runAggregate(t, r, k)
		checks, err := Check(r, k)
		if err != nil {
			t.Fatal(err)
		}
		failOnMismatch(t, "step "+string(rune('0'+k)), checks)
		if len(out[k].Anchors) == 0 || len(out[k].Buckets) == 0 || len(out[k].ValueData) == 0 {
			t.Fatalf("step %d: empty outputs %d anchors %d buckets %d value rows", k, len(out[k].Anchors), len(out[k].Buckets), len(out[k].ValueData))
		}
	}
	kinds := map[string]int{}
	for _, c := range out[2].Corrections {
		kinds[c.Kind]++
	}
	if kinds["exact"] == 0 || kinds["none"]+kinds["coarse"]+kinds["exact"] != len(out[2].Corrections) {
		t.Errorf("step 2 corrections by kind: %v", kinds)
	}
	if len(out[2].Buckets) < len(out[1].Buckets) {
		t.Errorf("cumulative buckets shrank: %d then %d", len(out[1].Buckets), len(out[2].Buckets))
	}
	sum, err := Summarize(ctx, r, 2)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Anchors != int64(len(out[2].Anchors)) || sum.Corrections != int64(len(out[2].Corrections)) ||
		sum.CorrectionsExact != int64(kinds["exact"]) || sum.MeanPHat <= 0 || sum.MeanPHat >= 1 {
		t.Errorf("summary %+v", sum)
	}

	// Up to date: skipped. Forced: the same bytes.
	if res, err := r.RunStage(ctx, 2, Stage{}, false); err != nil || !res.Skipped {
		t.Fatalf("unchanged step 2 not skipped: %v", err)
	}
	before := readDir(t, r.StageDir(2, layout.Aggregate))
	if _, err := r.RunStage(ctx, 2, Stage{}, true); err != nil {
		t.Fatal(err)
	}
	for name, data := range readDir(t, r.StageDir(2, layout.Aggregate)) {
		if !bytes.Equal(data, before[name]) {
			t.Errorf("%s differs between two runs of the same step", name)
		}
	}
	// A changed earlier step (one reward of step 1) reaches step 2 through step 1's state: step
	// 2 reads no file of step 1's rollout, so it is up to date until step 1's aggregate reruns;
	// then step 2 reruns on the changed pool, and its anchors change.
	path := filepath.Join(r.StageDir(1, layout.Rollout), "episodes.arrow")
	rows, err := schema.ReadFile[schema.EpisodeRow](schema.Episodes, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		if rows[i].Source == "natural_reference" && rows[i].Healthy {
			rows[i].Reward = 1 - rows[i].Reward
			break
		}
	}
	runtest.Rewrite(t, r, 1, layout.Rollout, rollout.Stage{}.Outputs(r, 1), layout.File(layout.Episodes), func(path string, lin schema.Lineage) error {
		return schema.WriteRows(schema.Episodes, path, lin, rows)
	})
	if res, err := r.RunStage(ctx, 2, Stage{}, false); err != nil || !res.Skipped {
		t.Fatalf("step 2 reran on a changed step-1 rollout it does not read: %v", err)
	}
	if res, err := r.RunStage(ctx, 1, Stage{}, false); err != nil || res.Skipped {
		t.Fatalf("step 1 did not rerun on its changed rollout: %v", err)
	}
	if res, err := r.RunStage(ctx, 2, Stage{}, false); err != nil || res.Skipped {
		t.Fatalf("step 2 did not rerun on step 1's changed state: %v", err)
	}
	after := readDir(t, r.StageDir(2, layout.Aggregate))
	if bytes.Equal(after[layout.AnchorsFile], before[layout.AnchorsFile]) || bytes.Equal(after[layout.AnchorPoolFile], before[layout.AnchorPoolFile]) {
		t.Error("changing a step-1 reward did not change step 2's anchors and anchor pool")
	}
	for k := 1; k <= 2; k++ {
		checks, err := Check(r, k)
		if err != nil {
			t.Fatal(err)
		}
		failOnMismatch(t, fmt.Sprintf("step %d after the change", k), checks)
	}
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		out[e.Name()], _ = os.ReadFile(filepath.Join(dir, e.Name()))
	}
	return out
}
