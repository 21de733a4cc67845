package pipeline

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/gpu/qwen3"
	"github.com/evosteer/evosteer-go/gpu/qwen3/qwen3tok"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/runtest"
	"github.com/evosteer/evosteer-go/schema"
)

// TestLMGPUCheck is the training part of make gpu-check (scripts/gpu-check.sh), run only where
// EVOSTEER_LM_GPU_CHECK names a scratch folder: a random model of Qwen3-0.6B's shape with Qwen3's
// tokenizer as the orchestrator on the simulated world, 32 tasks a step (Table 5), a LoRA adapter
// of r 64 and α 128 on every projection, on EVOSTEER_TEST_BACKEND (xla:cuda there), for 2 training
// steps; it writes decisions/s and tokens/s of each rollout and rescore, the update's seconds and
// the process's peak host memory to metrics.json there (the script records the GPU's peak memory
// beside it). EVOSTEER_LM_GPU_CHECK_TINY runs the same on a 1-layer shape, 2 tasks and a short
// token budget, as a dry run on a CPU.
func TestLMGPUCheck(t *testing.T) {
	out := os.Getenv("EVOSTEER_LM_GPU_CHECK")
	if out == "" {
		t.Skip("EVOSTEER_LM_GPU_CHECK is not set (make gpu-check sets it)")
	}
	backend := os.Getenv("EVOSTEER_TEST_BACKEND")
	if backend == "" {
		backend = "simplego"
	}
	cfg, tasks, micro, budget := qwen3.Config0_6B(), 32, 8, int64(0)
	if os.Getenv("EVOSTEER_LM_GPU_CHECK_TINY") != "" {
		cfg = qwen3.Config{Architectures: []string{"Qwen3ForCausalLM"}, ModelType: "qwen3", VocabSize: qwen3tok.VocabSize,
			HiddenSize: 32, IntermediateSize: 64, NumHiddenLayers: 1, NumAttentionHeads: 1, NumKeyValueHeads: 1, HeadDim: 16,
			HiddenAct: "silu", MaxPositionEmbeddings: 40960, RMSNormEps: 1e-6, RopeTheta: 1e6, TieWordEmbeddings: true,
			EOSTokenID: qwen3tok.EOSTokenID}
		tasks, micro, budget = 2, 2, 32768 // short episodes: the dry run checks the path, not the speed
	}
	model := filepath.Join(out, "model")
	if err := os.MkdirAll(model, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := qwen3.WriteFolder(model, cfg, qwen3.RandomWeights(cfg, 1, 0.02), qwen3.BF16); err != nil {
		t.Fatal(err)
	}
	if err := qwen3tok.Write(model); err != nil {
		t.Fatal(err)
	}
	r := runtest.SimRun(t, out, 4, func(c *config.Config) {
		c.Batch.Tasks = tasks
		if budget > 0 {
			c.Budget.Tokens = budget
		}
		c.Compute.Backend = backend
		c.Policy.Kind = config.PolicyCausalLM
		c.Policy.AdapterRank, c.Policy.AdapterAlpha = 64, 128
		c.Policy.CausalLM = &config.CausalLM{Model: model, TargetModules: []string{"all-linear"}, MicroBatch: micro}
	})
	metrics := map[string]any{"date": time.Now().UTC().Format(time.DateOnly), "backend": backend, "tasks_per_step": tasks,
		"layers": cfg.NumHiddenLayers, "hidden": cfg.HiddenSize}
	walls := map[string]float64{}
	for step := 1; step <= 2; step++ {
		err := Step(context.Background(), r, step, false, func(d StageDone) {
			walls[d.Stage] = d.Wall.Seconds()
			t.Logf("step %d %s: %v", d.Step, d.Stage, d.Wall.Round(time.Millisecond))
		})
		if err != nil {
			t.Fatal(err)
		}
		prompts, err := schema.ReadFile[schema.PromptRow](schema.Prompts, filepath.Join(r.StageDir(step, layout.Rollout), layout.File(layout.Prompts)))
		if err != nil {
			t.Fatal(err)
		}
		var fed int64
		for _, p := range prompts {
			fed += p.TokensSent
		}
		s := map[string]float64{"decisions": float64(len(prompts)), "rollout_seconds": walls[layout.Rollout],
			"rollout_decisions_per_second": float64(len(prompts)) / walls[layout.Rollout],
			"rollout_tokens_per_second":    float64(fed) / walls[layout.Rollout],
			"rescore_decisions_per_second": float64(len(prompts)) / walls[layout.Rescore],
			"update_seconds":               walls[layout.Update]}
		metrics[layout.StepDir(step)] = s
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	metrics["host_heap_peak_bytes"] = ms.HeapSys
	b, err := json.MarshalIndent(metrics, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "metrics.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("metrics: %s", b)
}
