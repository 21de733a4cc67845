package rescore_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/runtest"
	"github.com/evosteer/evosteer-go/schema"
	"github.com/evosteer/evosteer-go/stages/rescore"
	"github.com/evosteer/evosteer-go/stages/rollout"
)

func smallRun(t *testing.T) *rundir.Folder { return runtest.SimRun(t, t.TempDir(), 8, nil) }

// Rescore by teacher forcing reproduces the behaviour log-probabilities of every sampled
// decision exactly (θ unchanged since the rollout), gives Δℓ = 0 everywhere at step 0, and keeps
// one row per decision with its legal count.
func TestRescoreReproducesTheRollout(t *testing.T) {
	r := smallRun(t)
	ctx := context.Background()
	if _, err := r.RunStage(ctx, 1, rollout.Stage{}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RunStage(ctx, 1, rescore.Stage{}, false); err != nil {
		t.Fatal(err)
	}
	sum, err := rescore.Summarize(ctx, r, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.MaxMismatch) != 2 {
		t.Errorf("mismatch measured for %v, want current and natural_reference", sum.MaxMismatch)
	}
	for src, m := range sum.MaxMismatch {
		if m != 0 {
			t.Errorf("%s: rescored log-probabilities differ from the behaviour ones by %g", src, m)
		}
	}
	decs, err := schema.ReadFile[schema.DecisionRow](schema.Decisions, filepath.Join(r.StageDir(1, layout.Rollout), layout.File(layout.Decisions)))
	if err != nil {
		t.Fatal(err)
	}
	scores, err := schema.ReadFile[schema.ScoreRow](schema.Scores, filepath.Join(r.StageDir(1, layout.Rescore), layout.ScoresFile))
	if err != nil {
		t.Fatal(err)
	}
	eps, err := schema.ReadFile[schema.EpisodeRow](schema.Episodes, filepath.Join(r.StageDir(1, layout.Rollout), layout.File(layout.Episodes)))
	if err != nil {
		t.Fatal(err)
	}
	if len(scores) != len(decs) || sum.Decisions != len(decs) || sum.Episodes != len(eps) || sum.ThetaVersion != 0 {
		t.Fatalf("%d scores for %d decisions; summary %+v", len(scores), len(decs), sum)
	}
	var out strings.Builder
	if err := sum.Write(&out); err != nil || !strings.Contains(out.String(), fmt.Sprintf("rescore step 1: %d decisions of %d episodes under θ version 0; mean |Δℓ| 0 over branch decisions", len(decs), len(eps))) ||
		!strings.Contains(out.String(), "natural_reference  max |rescored − behaviour| / max(1, |behaviour|) log-prob 0") {
		t.Errorf("summary %v:\n%s", err, out.String())
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
// check compares its behaviour log-probabilities with the tempered scores: the stage accepts the
// rollout (the untempered scores differ from them by far more than learner.MaxBehaviorMismatch) and
// refuses it once one sampled behaviour log-probability moves by twice the bound. The summary
// cannot measure the tempered mismatch from the files and says that the stage checked it.
func TestRescoreChecksTheTemperedBehaviour(t *testing.T) {
	r := runtest.SimRun(t, t.TempDir(), 8, func(c *config.Config) { c.Policy.Temperature = 0.5 })
	ctx := context.Background()
	if _, err := r.RunStage(ctx, 1, rollout.Stage{}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RunStage(ctx, 1, rescore.Stage{}, false); err != nil {
		t.Fatal(err)
	}
	sum, err := rescore.Summarize(ctx, r, 1)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := sum.Write(&out); err != nil || sum.MaxMismatch != nil || !strings.Contains(out.String(), "(temperature 0.5) agree with the rescored ones within 1e-05 relative") {
		t.Errorf("summary %v:\n%s", err, out.String())
	}
	shiftBehavior(t, r, 2*learner.MaxBehaviorMismatch)
	if _, err := r.RunStage(ctx, 1, rescore.Stage{}, false); err == nil || !strings.Contains(err.Error(), "was not sampled from the checkpoint") {
		t.Fatalf("shifted behaviour: %v", err)
	}
}

// shiftBehavior moves the behaviour log-probability of the first sampled branch decision of
// step 1 by the relative amount rel, in a rollout the stage runner records (the runner refuses an
// input changed by hand before rescore meets it).
func shiftBehavior(t *testing.T, r *rundir.Folder, rel float64) {
	t.Helper()
	dir := r.StageDir(1, layout.Rollout)
	decisions := layout.File(layout.Decisions)
	decs, err := schema.ReadFile[schema.DecisionRow](schema.Decisions, filepath.Join(dir, decisions))
	if err != nil {
		t.Fatal(err)
	}
	for i := range decs {
		if !decs[i].Forced && len(decs[i].LegalActions) > 1 {
			decs[i].LogpBehavior -= rel * max(1, math.Abs(decs[i].LogpBehavior))
			break
		}
	}
	runtest.Rewrite(t, r, 1, layout.Rollout, rollout.Stage{}.Outputs(r, 1), decisions, func(path string, lin schema.Lineage) error {
		return schema.WriteRows(schema.Decisions, path, lin, decs)
	})
}

// A rollout that was not sampled from the checkpoint it is rescored with fails loudly.
func TestRescoreRefusesAForeignRollout(t *testing.T) {
	r := smallRun(t)
	ctx := context.Background()
	if _, err := r.RunStage(ctx, 1, rollout.Stage{}, false); err != nil {
		t.Fatal(err)
	}
	shiftBehavior(t, r, 0.05)
	_, err := r.RunStage(ctx, 1, rescore.Stage{}, false)
	if err == nil || !strings.Contains(err.Error(), "was not sampled from the checkpoint") {
		t.Fatalf("foreign rollout: %v", err)
	}
	if _, err := r.RunStage(ctx, 2, rescore.Stage{}, false); err == nil || !strings.Contains(err.Error(), "missing input step-000002/rollout/decisions.arrow: run `evosteer rollout --step 2") ||
		!strings.Contains(err.Error(), "missing input step-000001/update/checkpoint/learner.arrow: run `evosteer update --step 1") {
		t.Fatalf("missing rollout: %v", err)
	}
}
