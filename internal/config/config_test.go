package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultHoldsTable5(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"budget.tokens", float64(c.Budget.Tokens), 98304},
		{"budget.tool_calls", float64(c.Budget.ToolCalls), 50},
		{"budget.wall_seconds", float64(c.Budget.WallSeconds), 600},
		{"batch.tasks", float64(c.Batch.Tasks), 32},
		{"batch.current_rollouts", float64(c.Batch.CurrentRollouts), 2},
		{"batch.reference_rollouts", float64(c.Batch.ReferenceRollouts), 2},
		{"anchortb.beta", c.AnchorTB.Beta, 2},
		{"baselines.kappa_global", c.Baselines.KappaGlobal, 2},
		{"baselines.kappa_category", c.Baselines.KappaCategory, 4},
		{"baselines.kappa_task", c.Baselines.KappaTask, 0.5},
		{"baselines.prior_count_cap", c.Baselines.PriorCountCap, 20},
		{"buckets.minimum", float64(c.Buckets.Minimum), 8},
		{"buckets.pseudocount", c.Buckets.Pseudocount, 8},
		{"buckets.correction_bound", c.Buckets.CorrectionBound, 0.25},
		{"admission.alpha", c.Admission.Alpha, 0.05},
		{"admission.max_validated_per_family", float64(c.Admission.MaxValidatedPerFamily), 3},
		{"admission.max_candidates_per_family", float64(c.Admission.MaxCandidatesPerFamily), 1},
		{"admission.max_library", float64(c.Admission.MaxLibrary), 60},
		{"admission.max_library_per_family", float64(c.Admission.MaxLibraryPerFamily), 12},
		{"optimizer.adapter_lr", c.Optimizer.AdapterLR, 3e-3},   // paper 5e-6 for a 9B LoRA; see pipeline.yaml
		{"optimizer.residual_lr", c.Optimizer.ResidualLR, 3e-2}, // paper: heads_lr; see pipeline.yaml
		{"optimizer.adapter_beta1", c.Optimizer.AdapterBeta1, 0.95},
		{"optimizer.heads_lr", c.Optimizer.HeadsLR, 1e-3},
		{"optimizer.grad_clip", c.Optimizer.GradClip, 1},
		{"value_head.hidden", float64(c.ValueHead.Hidden), 32},
		{"residual_head.hidden", float64(c.ResidualHead.Hidden), 128},
		{"policy.adapter_rank", float64(c.Policy.AdapterRank), 64},
		{"executor.temperature", c.Executor.Temperature, 0.3},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %g, want %g", ch.name, ch.got, ch.want)
		}
	}
	if c.Executor.Backend != "sim" || len(c.Ablations) != 0 || c.Objective != "anchortb" {
		t.Errorf("executor %q ablations %v objective %q", c.Executor.Backend, c.Ablations, c.Objective)
	}
	if want := []string{"hotpotqa", "nq_open", "medqa", "aime_2026", "mbpp_plus", "alfworld"}; strings.Join(c.Families, ",") != strings.Join(want, ",") {
		t.Errorf("families %v", c.Families)
	}
	if tt, ok := c.TaskType("webshop"); !ok || tt != "alfworld" {
		t.Errorf("TaskType(webshop) = %q %v", tt, ok)
	}
}

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOverlayKeepsDefaultsAndReplacesLists(t *testing.T) {
	c, err := Load(write(t, "anchortb:\n  beta: 1.0\nablations: [learnable-repair]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.AnchorTB.Beta != 1 || c.Baselines.KappaTask != 0.5 || !c.Ablated("learnable-repair") || c.Ablated("value-head") {
		t.Fatalf("overlay: beta %g kappa_task %g ablations %v", c.AnchorTB.Beta, c.Baselines.KappaTask, c.Ablations)
	}
	def, _ := Default()
	if c.SHA256() == def.SHA256() {
		t.Fatal("changed config has the default hash")
	}
	same, err := Load(write(t, "anchortb:\n  beta: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if same.SHA256() != def.SHA256() {
		t.Fatal("a file restating a default changed the hash")
	}
}

func TestYAMLRoundTrip(t *testing.T) {
	def, _ := Default()
	back, err := Parse("resolved", def.YAML())
	if err != nil {
		t.Fatalf("parse resolved YAML: %v\n%s", err, def.YAML())
	}
	if back.SHA256() != def.SHA256() {
		t.Fatalf("round trip changed the hash:\n%s", def.YAML())
	}
}

func TestBadInputNamesKeyLineColumn(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{
		{"unknown key", "anchortb:\n  beta: 2\n  gamma: 1\n", []string{":3:3:", "gamma"}},
		{"unknown top key", "seed: 1\nbogus: true\n", []string{":2:1:", "bogus"}},
		{"wrong type", "batch:\n  tasks: many\n", []string{":2:10:", "many"}},
		{"negative beta", "anchortb:\n  beta: -1\n", []string{":2:9:", "anchortb.beta", ">= 0"}},
		{"alpha out of range", "admission:\n  alpha: 1.5\n", []string{":2:10:", "admission.alpha", "(0, 1)"}},
		{"alpha zero", "admission:\n  alpha: 0\n", []string{":2:10:", "admission.alpha"}},
		{"kappa zero", "baselines:\n  kappa_task: 0\n", []string{":2:15:", "baselines.kappa_task", "> 0"}},
		{"negative budget", "budget:\n  tokens: -5\n", []string{":2:11:", "budget.tokens", ">= 1"}},
		{"negative tool budget", "budget:\n  tool_calls: -1\n", []string{"budget.tool_calls"}},
		{"unknown ablation", "ablations: [no-such-thing]\n", []string{"ablations[0]", "no-such-thing"}},
		{"bad enum", "executor:\n  backend: gpt\n", []string{":2:12:", "executor.backend"}},
		{"openai author without model", "author:\n  backend: openai\n", []string{":2:12:", "author.backend", "author.model"}},
		{"clip out of range", "comparison:\n  clip: 1\n", []string{":2:9:", "comparison.clip", "(0, 1)"}},
		{"no epochs", "comparison:\n  epochs: 0\n", []string{":2:11:", "comparison.epochs", ">= 1"}},
		{"ood to unknown", "ood_families:\n  triviaqa: nowhere\n", []string{"ood_families.triviaqa", "nowhere"}},
		{"syntax", "anchortb: [\n", []string{"pipeline.yaml"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := write(t, tc.text)
			_, err := Load(path)
			if err == nil {
				t.Fatal("want an error")
			}
			msg := err.Error()
			if !strings.Contains(msg, path) {
				t.Errorf("error does not name the file: %s", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

func TestSeveralViolationsReportedTogether(t *testing.T) {
	_, err := Load(write(t, "anchortb:\n  beta: -1\nadmission:\n  alpha: 2\n"))
	if err == nil || !strings.Contains(err.Error(), "anchortb.beta") || !strings.Contains(err.Error(), "admission.alpha") {
		t.Fatalf("want both violations, got %v", err)
	}
}

func TestMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "absent.yaml"))
	if err == nil || !strings.Contains(err.Error(), "absent.yaml") {
		t.Fatalf("got %v", err)
	}
}

func TestAblate(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ablate("value-head", "learnable-repair", "value-head"); err != nil {
		t.Fatal(err)
	}
	if len(c.Ablations) != 2 || !c.Ablated("value-head") || !c.Ablated("learnable-repair") {
		t.Fatalf("ablations %v", c.Ablations)
	}
	if err := c.Ablate("no-such-thing"); err == nil || !strings.Contains(err.Error(), "known: interleaved-execution") {
		t.Fatalf("unknown ablation: %v", err)
	}
	d, _ := Default()
	if c.SHA256() == d.SHA256() {
		t.Fatal("ablations do not change the configuration hash")
	}
}

// TestUndecidedWhenExhaustedKeepsTheHash: the rule's key is omitted at its default, so the
// default configuration keeps its hash and canonical JSON; switching it on changes the hash.
func TestUndecidedWhenExhaustedKeepsTheHash(t *testing.T) {
	def, _ := Default()
	if strings.Contains(string(def.canonicalJSON()), "undecided_when_exhausted") || strings.Contains(string(def.YAML()), "undecided_when_exhausted") {
		t.Fatal("admission.undecided_when_exhausted is written at its default")
	}
	on, err := Load(write(t, "admission:\n  undecided_when_exhausted: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !on.Admission.UndecidedWhenExhausted || on.SHA256() == def.SHA256() {
		t.Fatalf("undecided_when_exhausted: true: parsed %v, hash unchanged %v", on.Admission.UndecidedWhenExhausted, on.SHA256() == def.SHA256())
	}
}
