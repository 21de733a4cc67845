package rescore_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor/scoring/fakeengine"
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
	for _, f := range []string{filepath.Join(r.StageDir(1, layout.Rollout), layout.File(layout.Prompts)), filepath.Join(r.StageDir(1, layout.Rescore), layout.RhoDriftFile)} {
		if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("without served_reference %s exists (%v)", f, err)
		}
	}
	var out strings.Builder
	if err := sum.Write(&out); err != nil || !strings.Contains(out.String(), fmt.Sprintf("rescore step 1: %d decisions of %d episodes under θ version 0; mean |Δℓ| 0 over branch decisions", len(decs), len(eps))) ||
		!strings.Contains(out.String(), "natural_reference  max |rescored − behaviour| / max(1, |behaviour|) log-prob 0") || strings.Contains(out.String(), "drift") {
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

// With served_reference, rescore re-queries a fixed half of the decisions the rollout's prompts
// table holds (the same ones on a rerun), finds the fake's deterministic ρ within float32 of the
// stored prior_logits and reports the drift in rho_drift.arrow and its summary; once the fake's
// log-probabilities move between the rollout and rescore it fails in one line naming the
// episode, the decision, the action and the drift, and the rollout's stored ρ is untouched.
func TestRescoreChecksTheServedReferencesDrift(t *testing.T) {
	fake := fakeengine.NewSGLang(fakeengine.Model{Name: "fake/qwen"}, fakeengine.SGLangOptions{})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r := runtest.SimRun(t, t.TempDir(), 4, func(c *config.Config) {
		c.Batch.Tasks = 4
		c.Served = &config.ServedReference{Dialect: "sglang", BaseURL: srv.URL, Model: "fake/qwen", Template: "qwen3",
			MaxConcurrency: 4, TimeoutSeconds: 10, OutageSeconds: 1, CacheDecisions: 256, RescoreSample: 0.5, DriftTolerance: 0.1}
	})
	ctx := context.Background()
	if _, err := r.RunStage(ctx, 1, rollout.Stage{}, false); err != nil {
		t.Fatal(err)
	}
	decisions := filepath.Join(r.StageDir(1, layout.Rollout), layout.File(layout.Decisions))
	before, err := os.ReadFile(decisions)
	if err != nil {
		t.Fatal(err)
	}
	prompts, err := schema.ReadFile[schema.PromptRow](schema.Prompts, filepath.Join(r.StageDir(1, layout.Rollout), layout.File(layout.Prompts)))
	if err != nil {
		t.Fatal(err)
	}
	driftFile := filepath.Join(r.StageDir(1, layout.Rescore), layout.RhoDriftFile)
	var first []schema.RhoDriftRow
	for run := range 2 {
		if _, err := r.RunStage(ctx, 1, rescore.Stage{}, run > 0); err != nil {
			t.Fatal(err)
		}
		rows, err := schema.ReadFile[schema.RhoDriftRow](schema.RhoDrift, driftFile)
		if err != nil {
			t.Fatal(err)
		}
		if want := int(math.Ceil(0.5 * float64(len(prompts)))); len(rows) != want || want == 0 {
			t.Fatalf("%d decisions re-queried of %d prompts, want %d", len(rows), len(prompts), want)
		}
		for _, row := range rows {
			if row.Drift > 1e-5 {
				t.Fatalf("the deterministic fake drifts: %+v", row)
			}
		}
		if run == 0 {
			first = rows
		} else if fmt.Sprint(rows) != fmt.Sprint(first) {
			t.Fatalf("a rerun re-queried other decisions:\n%v\n%v", first, rows)
		}
	}
	sum, err := rescore.Summarize(ctx, r, 1)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := sum.Write(&out); err != nil || !strings.Contains(out.String(), fmt.Sprintf("served ρ drift: %d decisions re-queried (rescore_sample 0.5), largest |Δ log ρ| ", len(first))) ||
		!strings.Contains(out.String(), "nats (tolerance 0.1) at ") {
		t.Errorf("summary %v:\n%s", err, out.String())
	}

	fake.Perturb(1)
	_, err = r.RunStage(ctx, 1, rescore.Stage{}, true)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "nats > served_reference.drift_tolerance 0.1 at episode 1/") ||
		!strings.Contains(err.Error(), " decision ") || !strings.Contains(err.Error(), " action {") {
		t.Fatalf("a perturbed server: %v", err)
	}
	after, err := os.ReadFile(decisions)
	if err != nil || string(after) != string(before) {
		t.Fatalf("rescore changed the rollout's decisions (%v)", err)
	}
}
