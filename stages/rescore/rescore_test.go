package rescore_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/runtest"
	"github.com/evosteer/evosteer-go/schema"
	"github.com/evosteer/evosteer-go/stages/rescore"
	"github.com/evosteer/evosteer-go/stages/rollout"
)

func smallRun(t *testing.T) *rundir.Run { return runtest.SimRun(t, t.TempDir(), 8, nil) }

// Rescore by teacher forcing reproduces the behaviour log-probabilities of every sampled
// decision exactly (θ unchanged since the rollout), gives Δℓ = 0 everywhere at step 0, and keeps
// one row per decision with its legal count.
func TestRescoreReproducesTheRollout(t *testing.T) {
	r := smallRun(t)
	ctx := context.Background()
	if _, err := r.RunStage(ctx, 1, rollout.Stage(r, 1, rollout.Shard{Index: 1, Count: 1}, nil), false); err != nil {
		t.Fatal(err)
	}
	var sum rescore.Summary
	if _, err := r.RunStage(ctx, 1, rescore.Stage(r, 1, &sum), false); err != nil {
		t.Fatal(err)
	}
	for src, m := range sum.MaxMismatch {
		if m != 0 {
			t.Errorf("%s: rescored log-probabilities differ from the behaviour ones by %g", src, m)
		}
	}
	decs, err := schema.ReadFile[schema.DecisionRow](schema.Decisions, filepath.Join(r.StageDir(1, "rollout"), "decisions.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	scores, err := schema.ReadFile[schema.ScoreRow](schema.Scores, filepath.Join(r.StageDir(1, rescore.Name), rescore.File))
	if err != nil {
		t.Fatal(err)
	}
	if len(scores) != len(decs) || sum.Decisions != len(decs) {
		t.Fatalf("%d scores for %d decisions", len(scores), len(decs))
	}
	for i, s := range scores {
		d := decs[i]
		if s.EpisodeID != d.EpisodeID || s.T != d.T || int(s.LegalCount) != len(d.LegalActions) || s.DeltaL != 0 || s.LogpTheta != s.LogpRho {
			t.Fatalf("score %d %+v for decision %s/%d", i, s, d.EpisodeID, d.T)
		}
		if !d.Forced && s.LogpTheta != d.LogpBehavior {
			t.Fatalf("decision %s/%d: rescored %v, behaviour %v", d.EpisodeID, d.T, s.LogpTheta, d.LogpBehavior)
		}
	}
}

// At policy.temperature τ ≠ 1 the rollout sampled from the tempered network, and the rescore
// check compares its behaviour log-probabilities with the tempered scores: they agree exactly.
func TestRescoreChecksTheTemperedBehaviour(t *testing.T) {
	r := runtest.SimRun(t, t.TempDir(), 8, func(c *config.Config) { c.Policy.Temperature = 0.5 })
	ctx := context.Background()
	if _, err := r.RunStage(ctx, 1, rollout.Stage(r, 1, rollout.Shard{Index: 1, Count: 1}, nil), false); err != nil {
		t.Fatal(err)
	}
	var sum rescore.Summary
	if _, err := r.RunStage(ctx, 1, rescore.Stage(r, 1, &sum), false); err != nil {
		t.Fatal(err)
	}
	if len(sum.MaxMismatch) == 0 {
		t.Fatal("no sampled decision was checked")
	}
	for src, m := range sum.MaxMismatch {
		if m != 0 {
			t.Errorf("%s: tempered behaviour log-probabilities differ from the rescored ones by %g", src, m)
		}
	}
}

// A rollout that was not sampled from the checkpoint it is rescored with fails loudly.
func TestRescoreRefusesAForeignRollout(t *testing.T) {
	r := smallRun(t)
	ctx := context.Background()
	if _, err := r.RunStage(ctx, 1, rollout.Stage(r, 1, rollout.Shard{Index: 1, Count: 1}, nil), false); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(r.StageDir(1, "rollout"), "decisions.arrow")
	decs, err := schema.ReadFile[schema.DecisionRow](schema.Decisions, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range decs {
		if !decs[i].Forced && len(decs[i].LegalActions) > 1 {
			decs[i].LogpBehavior -= 0.05
			break
		}
	}
	if err := schema.WriteRows(schema.Decisions, path, schema.Lineage{Run: "demo", Step: 1, Stage: "rollout", ConfigSHA256: r.Config.SHA256()}, decs); err != nil {
		t.Fatal(err)
	}
	_, err = r.RunStage(ctx, 1, rescore.Stage(r, 1, nil), false)
	if err == nil || !strings.Contains(err.Error(), "was not sampled from the checkpoint") {
		t.Fatalf("foreign rollout: %v", err)
	}
	if _, err := r.RunStage(ctx, 2, rescore.Stage(r, 2, nil), false); err == nil || !strings.Contains(err.Error(), "evosteer rollout --step 2") {
		t.Fatalf("missing rollout: %v", err)
	}
}
