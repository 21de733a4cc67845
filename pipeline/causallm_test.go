package pipeline

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

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

// lmRun is a run on the simulated world whose orchestrator is a tiny random Qwen3 model (Qwen3's
// tokenizer) with a rank-2 adapter on the MLP's down projection (with one layer its gradient does
// not reach back through the attention, the cost of a ~4,500-token prompt): 4 tasks a step, one π_θ and one ρ episode
// each, and a token budget that ends an episode after a few decisions (each charged its prompt
// of about 4,500 tokens).
func lmRun(t *testing.T, parent, model string) *rundir.Folder {
	t.Helper()
	return runtest.SimRun(t, parent, 4, func(c *config.Config) {
		c.Batch.Tasks, c.Batch.CurrentRollouts, c.Batch.ReferenceRollouts = 4, 1, 1
		c.Budget.Tokens = 40960
		c.Policy.Kind = config.PolicyCausalLM
		c.Policy.AdapterRank, c.Policy.AdapterAlpha = 2, 4
		c.Policy.CausalLM = &config.CausalLM{Model: model, TargetModules: []string{"down_proj"}, MicroBatch: 4}
	})
}

// TestCausalLMPolicyRunsTheSteps plays a step with the language model as the orchestrator: θ = ρ
// bit for bit at step 0 (every Δℓ of step 1 is 0), rescore agrees with the rollout's behaviour
// log-probabilities (the stage checks it to 1e-5) and the update's recomputation with rescore,
// the adapter moves, the step's PEFT adapter folder holds the checkpoint's adapter, and the step
// played again from a copy of the run at step 0 writes the same bytes. (That an update moves θ
// away from ρ and what the next rollout then samples is gpu's TestCausalLMUpdateMovesTheAdapter;
// a step costs about a minute here, nearly all of it the adapter's gradient through prompts of
// ~4,500 tokens.)
func TestCausalLMPolicyRunsTheSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a step through a language model")
	}
	cfg := qwen3test.QwenVocab()
	cfg.NumHiddenLayers = 1
	model := qwen3test.QwenFolder(t, cfg, 11)
	ctx := context.Background()
	r := lmRun(t, t.TempDir(), model)
	again := filepath.Join(t.TempDir(), "demo")
	if err := os.CopyFS(again, os.DirFS(r.Dir)); err != nil {
		t.Fatal(err)
	}
	logStages := func(d StageDone) { t.Logf("step %d %s: %v", d.Step, d.Stage, d.Wall.Round(time.Millisecond)) }
	if err := Step(ctx, r, 1, false, logStages); err != nil {
		t.Fatal(err)
	}
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
	m, err := schema.ReadFile[schema.UpdateMetricsRow](schema.UpdateMetrics, filepath.Join(r.StageDir(1, layout.Update), layout.UpdateMetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("step 1: %d decisions (%d with a choice), mean reward %.2f, rescore mismatch %.2g, grad norm %.3g", m[0].Decisions, branch, m[0].MeanReward, m[0].RescoreMismatch, m[0].GradNorm)
	if branch == 0 || !(m[0].GradNorm > 0) || m[0].RescoreMismatch > 1e-5 {
		t.Fatalf("step 1: %d decisions with a choice, grad norm %v, rescore mismatch %v", branch, m[0].GradNorm, m[0].RescoreMismatch)
	}

	// The step's adapter folder holds the checkpoint's adapter, which the update moved.
	l, err := learner.Load(r, 1)
	if err != nil {
		t.Fatal(err)
	}
	lm := l.Policy.(*gpu.CausalLM)
	dir := filepath.Dir(filepath.Join(r.StageDir(1, layout.Update), filepath.FromSlash(layout.AdapterConfigFile)))
	ad, err := qwen3.ReadAdapter(dir, lm.ModelConfig())
	if err != nil {
		t.Fatal(err)
	}
	moved := false
	for li, mods := range ad.Layers {
		for name, p := range mods {
			want := lm.Adapter().Layers[li][name]
			if !slices.Equal(p.A.Data, want.A.Data) || !slices.Equal(p.B.Data, want.B.Data) {
				t.Fatalf("adapter folder layer %d %s differs from the checkpoint", li, name)
			}
			moved = moved || slices.ContainsFunc(p.B.Data, func(v float32) bool { return v != 0 })
		}
	}
	if !moved {
		t.Error("every B of the step-1 adapter is still zero")
	}

	// The step's rollout and update played again from the same state: the same bytes.
	r2, err := rundir.Open(again)
	if err != nil {
		t.Fatal(err)
	}
	if err := Step(ctx, r2, 1, false, nil); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{
		filepath.Join(layout.StepDir(1), layout.Update, filepath.FromSlash(layout.CheckpointFile)),
		filepath.Join(layout.StepDir(1), layout.Update, filepath.FromSlash(layout.AdapterModelFile)),
		filepath.Join(layout.StepDir(1), layout.Rescore, layout.ScoresFile),
		filepath.Join(layout.StepDir(1), layout.Rollout, layout.File(layout.Decisions)),
		filepath.Join(layout.StepDir(1), layout.Rollout, layout.File(layout.Prompts)),
	} {
		a, err := os.ReadFile(filepath.Join(r.Dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(r2.Dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two plays of step 1 from the same state", rel)
		}
	}
}
