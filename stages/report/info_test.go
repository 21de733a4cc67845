package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/gpu/qwen3"
	"github.com/evosteer/evosteer-go/gpu/qwen3/qwen3test"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
)

// TestAdmissionSettingsNameTheRules: the report's admission row names the look interval and
// every rule that changes which pairs count or how alpha is spent.
func TestAdmissionSettingsNameTheRules(t *testing.T) {
	for _, c := range []struct {
		a    config.Admission
		want string
	}{
		{config.Admission{ValidationInterval: 1}, "a look every 1 step(s)"},
		{config.Admission{ValidationInterval: 30, AllowRepeatedTasks: true}, "a look every 30 step(s), repeated pair tasks"},
		{config.Admission{ValidationInterval: 1, UndecidedWhenExhausted: true, Spending: config.SpendingAttainable},
			"a look every 1 step(s), exhausted comparisons end undecided, attainable spending"},
	} {
		if got := admissionSettings(c.a); got != c.want {
			t.Errorf("%+v: %q, want %q", c.a, got, c.want)
		}
	}
}

// TestOrchestratorRows: the header names the compact network's sizes; for the language model,
// the model folder with its shape and parameter count from config.json (a folder that cannot be
// read is said, not an error), the adapter as configured, and the PEFT folder of the last step
// that wrote one (init's before any update).
func TestOrchestratorRows(t *testing.T) {
	info := func(rows []Row) map[string]string {
		out := map[string]string{}
		for _, r := range rows {
			out[r.Cells[0]] = r.Cells[1]
		}
		return out
	}
	rep, err := Build(synthRun(t))
	if err != nil {
		t.Fatal(err)
	}
	got := info(rep.Info)
	for label, want := range map[string]string{
		"orchestrator": "the compact network (policy.kind compact): hidden 128, h_ρ width (encoder_dim) 64, up to 512 legal actions",
		"adapter":      "low-rank adapter r 64, α 128; θ = the network with it, ρ = without",
		"reference ρ":  "the calibrated prior (reference_prior)",
	} {
		if got[label] != want {
			t.Errorf("compact %s: %q, want %q", label, got[label], want)
		}
	}
	if _, ok := got["adapter folder"]; ok {
		t.Error("the compact network's header names an adapter folder")
	}

	mcfg := qwen3test.Config()
	model := qwen3test.Folder(t, mcfg, 1, qwen3.BF16, 1)
	n, _ := mcfg.ParamCount()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policy.Kind = config.PolicyCausalLM
	cfg.Policy.AdapterRank, cfg.Policy.AdapterAlpha = 4, 8
	cfg.Policy.CausalLM = &config.CausalLM{Model: model, TargetModules: []string{"all-linear"}, RSLoRA: true}
	r, err := rundir.Init(filepath.Join(t.TempDir(), "lm"), cfg, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	got = info(orchestratorRows(r, []int{1, 2, 3}))
	for label, want := range map[string]string{
		"orchestrator":   fmt.Sprintf("a language model (policy.kind causal_lm): the Qwen3 folder %s: 2 layers, hidden 16, query/key-value heads 4/2 of width 8, MLP 24, vocab 300, tied embedding and lm_head; %s parameters (bfloat16); h_ρ width (encoder_dim) 64", model, thousands(n)),
		"adapter":        "LoRA r 4, α 8 (rsLoRA, scale α/√r = 4) on all-linear (q_proj k_proj v_proj o_proj gate_proj up_proj down_proj); θ = the model with it, ρ = the adapter off; float32 graphs",
		"adapter folder": "none yet: no update has written step-NNNNNN/update/checkpoint/adapter",
	} {
		if got[label] != want {
			t.Errorf("causal_lm %s: %q, want %q", label, got[label], want)
		}
	}
	if want := "the language model " + model + " with its adapter off (policy.kind causal_lm)"; cfg.Reference() != want {
		t.Errorf("reference ρ %q, want %q", cfg.Reference(), want)
	}
	adapter := func(step int) {
		dir := filepath.Join(r.StageDir(step, layout.Update), filepath.Dir(filepath.FromSlash(layout.AdapterConfigFile)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, os.WriteFile(filepath.Join(dir, qwen3.AdapterConfigFile), []byte("{}"), 0o644))
	}
	adapter(0)
	if got := info(orchestratorRows(r, []int{1, 2, 3}))["adapter folder"]; !strings.HasPrefix(got, "step-000000/update/checkpoint/adapter in the run folder (init's") {
		t.Errorf("with init's adapter only: %q", got)
	}
	adapter(1)
	adapter(2)
	if got := info(orchestratorRows(r, []int{1, 2, 3}))["adapter folder"]; !strings.HasPrefix(got, "step-000002/update/checkpoint/adapter in the run folder (step 2's θ") {
		t.Errorf("with steps 1 and 2's adapters: %q", got)
	}

	cfg.Policy.CausalLM.Model = filepath.Join(t.TempDir(), "gone")
	cfg.Policy.CausalLM.TargetModules = []string{"q_proj", "v_proj"}
	cfg.Policy.CausalLM.RSLoRA = false
	got = info(orchestratorRows(r, nil))
	if want := "the Qwen3 folder " + cfg.Policy.CausalLM.Model + " (its config.json cannot be read here: open "; !strings.Contains(got["orchestrator"], want) {
		t.Errorf("a missing model folder: %q, want it to contain %q", got["orchestrator"], want)
	}
	if want := "LoRA r 4, α 8 (scale α/r = 2) on q_proj v_proj;"; !strings.HasPrefix(got["adapter"], want) {
		t.Errorf("adapter %q, want %q…", got["adapter"], want)
	}
}
