package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/gpu/qwen3/qwen3test"
	"github.com/evosteer/evosteer-go/schema"
)

// `evosteer exact` on a tiny world: one curve row per objective and step (step 0 included) in
// curve.arrow, a verdict per objective in curve.md and on stdout; an unknown objective or a world
// too small to have a choice is refused before anything is written.
func TestExactCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "exact")
	text, err := run(t, "", "exact", "--objectives", "anchortb,tb", "--steps", "2", "--families", "1", "--tasks", "2", "--roles", "2", "--out", out)
	if err != nil {
		t.Fatalf("exact: %v\n%s", err, text)
	}
	rows, err := schema.ReadFile[schema.ExactCurveRow](schema.ExactCurve, filepath.Join(out, "curve.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 || rows[0].Objective != "anchortb" || rows[0].Step != 0 || rows[5].Objective != "tb" || rows[5].Step != 2 {
		t.Fatalf("curve rows: %+v", rows)
	}
	if rows[0].TV != rows[0].TVRho || rows[0].TV <= 0 {
		t.Fatalf("step 0: θ = ρ, so TV(θ, P*) = TV(ρ, P*) > 0; got %v and %v", rows[0].TV, rows[0].TVRho)
	}
	md, err := os.ReadFile(filepath.Join(out, "curve.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"- **anchortb**: ", "- **tb**: ", "| tb | 2 |"} {
		if !strings.Contains(string(md), want) || !strings.Contains(text, want) {
			t.Fatalf("curve.md and the output should hold %q:\n%s", want, md)
		}
	}
	// --check fails when a verdict does: two steps are far too few to reach P*.
	checked := filepath.Join(t.TempDir(), "checked")
	if _, err := run(t, "", "exact", "--objectives", "anchortb", "--steps", "2", "--families", "1", "--tasks", "2", "--roles", "2", "--out", checked, "--check"); err == nil || !strings.Contains(err.Error(), "anchortb: does NOT reach P*") {
		t.Fatalf("--check after 2 steps: %v", err)
	}
	if _, err := os.Stat(filepath.Join(checked, "curve.arrow")); err != nil {
		t.Fatalf("--check must still write the curve: %v", err)
	}
	// The noisy world: its summary adds P_KL, which differs from P* there, and the curve can be
	// queried with its own step column.
	noisy := filepath.Join(t.TempDir(), "noisy")
	text, err = run(t, "", "exact", "--objectives", "anchortb", "--steps", "2", "--families", "1", "--tasks", "2", "--roles", "2", "--out", noisy, "--reward-noise")
	if err != nil {
		t.Fatalf("exact --reward-noise: %v\n%s", err, text)
	}
	if !strings.Contains(text, "Exact world with noisy rewards") || !strings.Contains(text, "| TV(θ, P_KL) | TV(ρ, P_KL) |") {
		t.Fatalf("the noisy world's summary:\n%s", text)
	}
	rows, err = schema.ReadFile[schema.ExactCurveRow](schema.ExactCurve, filepath.Join(noisy, "curve.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].TVKL != rows[0].TVKLRho || rows[0].TVKL == rows[0].TV {
		t.Fatalf("step 0 of the noisy world: TV to P_KL %v (ρ %v) should differ from TV to P* %v", rows[0].TVKL, rows[0].TVKLRho, rows[0].TV)
	}
	text, err = run(t, "", "sql", "--run", noisy, "--format", "csv", "SELECT max(step) AS last, count(*) AS n FROM exact_curve")
	if err != nil || !strings.Contains(text, "last,n\n2,3") {
		t.Fatalf("sql over the curve (its own step column, 3 rows): %v\n%s", err, text)
	}
	for _, bad := range [][]string{{"--objectives", "sgd"}, {"--roles", "1"}} {
		dir := filepath.Join(t.TempDir(), "bad")
		args := append([]string{"exact", "--steps", "1", "--out", dir}, bad...)
		if _, err := run(t, "", args...); err == nil {
			t.Fatalf("%v was accepted", bad)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("%v: %s was created", bad, dir)
		}
	}
}

// `evosteer exact --causal-lm DIR` trains the language-model policy (a tiny random Qwen3 with
// Qwen3's tokenizer): θ = ρ at step 0, curve.md names the model and its adapter; a folder that
// is not a model is refused before anything is written.
func TestExactCommandCausalLM(t *testing.T) {
	model := qwen3test.QwenFolder(t, qwen3test.QwenVocab(), 1)
	out := filepath.Join(t.TempDir(), "exact-lm")
	text, err := run(t, "", "exact", "--causal-lm", model, "--objectives", "anchortb", "--steps", "1", "--families", "1", "--tasks", "2", "--roles", "2", "--out", out)
	if err != nil {
		t.Fatalf("exact --causal-lm: %v\n%s", err, text)
	}
	rows, err := schema.ReadFile[schema.ExactCurveRow](schema.ExactCurve, filepath.Join(out, "curve.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].TV != rows[0].TVRho || rows[0].TV <= 0 || rows[1].Step != 1 {
		t.Fatalf("curve rows: %+v", rows)
	}
	if !strings.Contains(text, "Policy: Qwen3 "+model+" (2 layers, hidden 32") || !strings.Contains(text, "LoRA r 64 α 128 on [q_proj k_proj v_proj o_proj gate_proj up_proj down_proj]") {
		t.Fatalf("the summary should name the model and its adapter:\n%s", text)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	if _, err := run(t, "", "exact", "--causal-lm", t.TempDir(), "--steps", "1", "--out", bad); err == nil || !strings.Contains(err.Error(), "policy.causal_lm.model") {
		t.Fatalf("an empty model folder: %v", err)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Fatalf("%s was created", bad)
	}
}
