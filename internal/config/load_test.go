package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHugeOrDeepFilesAreRefusedBeforeParsing: a file over MaxFileBytes (an endless one too),
// 100,000 nested brackets and runaway indentation are refused with the file, the limit and, for
// nesting, the line and column, before the YAML parser sees them.
func TestHugeOrDeepFilesAreRefusedBeforeParsing(t *testing.T) {
	dir := t.TempDir()
	keys := strings.Builder{}
	keys.WriteString("sim:\n  families:\n")
	for i := 0; keys.Len() <= MaxFileBytes; i++ {
		fmt.Fprintf(&keys, "    k%d: 1\n", i)
	}
	deepIndent := strings.Builder{}
	for i := range 40 {
		deepIndent.WriteString(strings.Repeat("  ", i) + fmt.Sprintf("k%d:\n", i))
	}
	for _, c := range []struct {
		name, text, want string
	}{
		{"many keys", keys.String(), "larger than 256 KiB"},
		{"nested brackets", "steps: " + strings.Repeat("[", 100_000), ":1:40: nested deeper than 32 levels"},
		{"nested braces in a list", "families: [{a: [{b: " + strings.Repeat("{", 40), "nested deeper than 32 levels"},
		{"deep indentation", deepIndent.String(), ":34:65: indented deeper than 32 levels"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".yaml")
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming %s and %q", c.name, err, path, c.want)
		}
	}
	if _, err := Load("/dev/zero"); err == nil || !strings.Contains(err.Error(), "larger than 256 KiB") {
		t.Errorf("/dev/zero: %v", err)
	}
	// Brackets in quotes and comments are text, not nesting.
	ok := "# " + strings.Repeat("[", 50) + "\nexecutor:\n  openai:\n    model: \"" + strings.Repeat("{", 50) + "\"\n"
	if err := checkShape("ok.yaml", []byte(ok)); err != nil {
		t.Errorf("quoted and commented brackets: %v", err)
	}
}

// TestLearningRatesAreBounded: a learning rate that would make weights infinite (1e308) is
// refused with the key, before any update writes a checkpoint no reader accepts.
func TestLearningRatesAreBounded(t *testing.T) {
	for _, key := range []string{"adapter_lr", "heads_lr", "residual_lr"} {
		loadErr(t, "optimizer:\n  "+key+": 1e308\n", "optimizer."+key, "must be in (0, 10]")
	}
	loadErr(t, "comparison:\n  log_z_lr: 11\n", "comparison.log_z_lr", "must be in (0, 10]")
}

// TestServedReferenceOverlay: served_reference is absent by default (so the default's hash is
// what it was: no key in its canonical JSON), read whole from an overlay, and each bad key is
// named.
func TestServedReferenceOverlay(t *testing.T) {
	def, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if def.Served != nil || strings.Contains(string(def.canonicalJSON()), "served_reference") {
		t.Fatal("the default configuration has a served reference")
	}
	good := "served_reference:\n  dialect: vllm\n  base_url: http://127.0.0.1:8000\n  model: Qwen/Qwen3-8B\n  api_key_env: \"\"\n" +
		"  template: qwen3\n  max_concurrency: 64\n  timeout_seconds: 60\n  outage_seconds: 600\n  cache_decisions: 4096\n" +
		"  rescore_sample: 0.05\n  drift_tolerance: 0.1\n"
	cfg, err := Load(write(t, good))
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Served; s == nil || s.Dialect != "vllm" || s.Model != "Qwen/Qwen3-8B" || s.CacheDecisions != 4096 || s.RescoreSample != 0.05 || s.DriftTolerance != 0.1 || cfg.SHA256() == def.SHA256() {
		t.Fatalf("served reference %+v", cfg.Served)
	}
	loadErr(t, strings.Replace(good, "dialect: vllm", "dialect: llama.cpp", 1), "served_reference.dialect", "must be one of [sglang vllm]")
	loadErr(t, strings.Replace(good, "base_url: http://127.0.0.1:8000", "base_url: 127.0.0.1:8000", 1), "served_reference.base_url", "http://")
	loadErr(t, strings.Replace(good, "template: qwen3", "template: llama3", 1), "served_reference.template")
	loadErr(t, strings.Replace(good, "max_concurrency: 64", "max_concurrency: 0", 1), "served_reference.max_concurrency")
	loadErr(t, strings.Replace(good, "rescore_sample: 0.05", "rescore_sample: 1.5", 1), "served_reference.rescore_sample", "[0, 1]")
	loadErr(t, strings.Replace(good, "  drift_tolerance: 0.1\n", "", 1), "served_reference.drift_tolerance", "must be > 0")
	loadErr(t, "served_reference:\n  dialect: sglang\n", "served_reference.base_url", "served_reference.model")
	two, err := Load(write(t, good+"  replicas: [http://127.0.0.1:8001, http://127.0.0.1:8002/]\n"))
	if err != nil || len(two.Served.Replicas) != 2 {
		t.Fatalf("replicas: %v", err)
	}
	loadErr(t, good+"  replicas: [127.0.0.1:8001]\n", "served_reference.replicas[0]", "http://")
	loadErr(t, good+"  replicas: [http://127.0.0.1:8000/]\n", "served_reference.replicas[0]", "listed twice")
	loadErr(t, "executor:\n  openai:\n    base_url: http://a/v1\n    replicas: [http://b/v1, http://b/v1]\n", "executor.openai.replicas[1]", "listed twice")
}

// TestCausalLMPolicyOverlay: policy.kind and policy.causal_lm are absent by default (the default's
// hash is what it was), read from an overlay, and each bad key is named.
func TestCausalLMPolicyOverlay(t *testing.T) {
	def, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if def.Policy.IsCausalLM() || strings.Contains(string(def.canonicalJSON()), "causal_lm") {
		t.Fatal("the default configuration's policy is a language model")
	}
	good := "policy:\n  kind: causal_lm\n  causal_lm:\n    model: /models/q\n    target_modules: [q_proj, v_proj]\n    micro_batch: 4\n"
	cfg, err := Load(write(t, good))
	if err != nil {
		t.Fatal(err)
	}
	if lm := cfg.Policy.CausalLM; !cfg.Policy.IsCausalLM() || lm == nil || lm.Model != "/models/q" || lm.Micro() != 4 || !cfg.KeepsPrompts() || cfg.SHA256() == def.SHA256() {
		t.Fatalf("policy %+v", cfg.Policy)
	}
	loadErr(t, "policy:\n  kind: gpt\n", "policy.kind", "must be one of")
	loadErr(t, "policy:\n  kind: causal_lm\n", "policy.causal_lm", "is missing")
	loadErr(t, "policy:\n  causal_lm:\n    model: /m\n    target_modules: [q_proj]\n", "policy.causal_lm", "policy.kind")
	loadErr(t, strings.Replace(good, "model: /models/q", "model: \"\"", 1), "policy.causal_lm.model", "is empty")
	loadErr(t, strings.Replace(good, "[q_proj, v_proj]", "[q_proj, lm_head]", 1), "policy.causal_lm.target_modules", "lm_head")
	loadErr(t, strings.Replace(good, "micro_batch: 4", "micro_batch: -1", 1), "policy.causal_lm.micro_batch")
	loadErr(t, good+"    dtype: bfloat16\n", "policy.causal_lm.dtype")
	loadErr(t, good+"    temperature: 2\n", "unknown field \"temperature\"")
}
