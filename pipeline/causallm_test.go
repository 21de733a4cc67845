package pipeline

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/gpu/qwen3"
	"github.com/evosteer/evosteer-go/gpu/qwen3/qwen3test"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/runtest"
	"github.com/evosteer/evosteer-go/schema"
)

// lmRun is a run on the simulated world whose orchestrator is a tiny random Qwen3 model (the
// tiny tokenizer) with a rank-2 adapter on every projection: 4 tasks a step.
func lmRun(t *testing.T, parent, model string) *rundir.Folder {
	t.Helper()
	return runtest.SimRun(t, parent, 4, func(c *config.Config) {
		c.Batch.Tasks = 4
		c.Policy.Kind = config.PolicyCausalLM
		c.Policy.AdapterRank, c.Policy.AdapterAlpha = 2, 4
		c.Policy.CausalLM = &config.CausalLM{Model: model, TargetModules: []string{"all-linear"}, MicroBatch: 8}
	})
}

// TestCausalLMPolicyRunsTheSteps plays two steps with the language model as the orchestrator:
// at step 1 θ = ρ bit for bit (every Δℓ is 0), rescore agrees with the rollout's behaviour
// log-probabilities (the stage checks it to 1e-5), the update's recomputation with rescore, the
// step's PEFT adapter folder reads back to the learner's log-probabilities, and a repeat of the
// run writes the same bytes.
func TestCausalLMPolicyRunsTheSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two steps through a language model")
	}
	model := qwen3test.QwenFolder(t, qwen3test.QwenVocab(), 11)
	ctx := context.Background()
	runs := make([]*rundir.Folder, 2)
	for i := range runs {
		runs[i] = lmRun(t, t.TempDir(), model)
		for step := 1; step <= 2; step++ {
			if err := Step(ctx, runs[i], step, false, nil); err != nil {
				t.Fatalf("run %d step %d: %v", i, step, err)
			}
		}
	}
	r := runs[0]
	scores, err := schema.ReadFile[schema.ScoreRow](schema.Scores, filepath.Join(r.StageDir(1, layout.Rescore), layout.ScoresFile))
	if err != nil {
		t.Fatal(err)
	}
	branch := 0
	for _, s := range scores {
		if s.DeltaL != 0 || s.LogpTheta != s.LogpRho {
			t.Fatalf("step 1 episode %s decision %d: log π_θ %v, log π_ρ %v: θ ≠ ρ at step 0", s.EpisodeID, s.T, s.LogpTheta, s.LogpRho)
		}
		if s.LegalCount > 1 {
			branch++
		}
	}
	if branch == 0 {
		t.Fatal("no decision with a choice at step 1")
	}
	m, err := schema.ReadFile[schema.UpdateMetricsRow](schema.UpdateMetrics, filepath.Join(r.StageDir(2, layout.Update), layout.UpdateMetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("step 2: %d decisions (%d with a choice), rescore mismatch %.2g, grad norm %.3g, policy |Δℓ| %.3g", m[0].Decisions, m[0].BranchDecisions, m[0].RescoreMismatch, m[0].GradNorm, m[0].PolicyAbsLogRatio)
	if !(m[0].GradNorm > 0) || !(m[0].PolicyAbsLogRatio > 0) {
		t.Errorf("step 2 did not move the adapter: grad norm %v, |Δℓ| %v", m[0].GradNorm, m[0].PolicyAbsLogRatio)
	}

	// The step's adapter folder, read back onto the model, gives the learner's log π_θ.
	l, err := learner.Load(r, 2)
	if err != nil {
		t.Fatal(err)
	}
	lm := l.Policy.(*gpu.CausalLM)
	dir := filepath.Dir(filepath.Join(r.StageDir(2, layout.Update), filepath.FromSlash(layout.AdapterConfigFile)))
	ad, err := qwen3.ReadAdapter(dir, lm.ModelConfig())
	if err != nil {
		t.Fatal(err)
	}
	for li, mods := range ad.Layers {
		for name, p := range mods {
			want := lm.Adapter().Layers[li][name]
			if !slices.Equal(p.A.Data, want.A.Data) || !slices.Equal(p.B.Data, want.B.Data) {
				t.Fatalf("adapter folder layer %d %s differs from the checkpoint", li, name)
			}
		}
	}

	for _, rel := range []string{
		filepath.Join(layout.StepDir(2), layout.Update, filepath.FromSlash(layout.CheckpointFile)),
		filepath.Join(layout.StepDir(2), layout.Update, filepath.FromSlash(layout.AdapterModelFile)),
		filepath.Join(layout.StepDir(2), layout.Rescore, layout.ScoresFile),
		filepath.Join(layout.StepDir(2), layout.Rollout, layout.File(layout.Decisions)),
	} {
		a, err := os.ReadFile(filepath.Join(runs[0].Dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(runs[1].Dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs of the same seed", rel)
		}
	}
}
