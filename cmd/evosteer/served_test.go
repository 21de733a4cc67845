//go:build duckdb_arrow

package main

import (
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/executor/scoring/fakeengine"
	"github.com/evosteer/evosteer-go/schema"
)

// TestServedReferenceEndToEnd: init, train and eval with served_reference on the fake SGLang
// engine: every decision of a step stores the served ρ (a distribution over its legal actions),
// the untrained θ of step 1 samples from ρ exactly, and the evaluation's reference row is played
// by the served ρ, which the table and the report name.
func TestServedReferenceEndToEnd(t *testing.T) {
	fake := fakeengine.NewSGLang(fakeengine.Model{Name: "fake/qwen"}, fakeengine.SGLangOptions{})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "served.yaml")
	writeFile(t, cfg, trainConfig+"served_reference:\n  dialect: sglang\n  base_url: "+srv.URL+"\n  model: fake/qwen\n  api_key_env: \"\"\n"+
		"  template: qwen3\n  max_concurrency: 8\n  timeout_seconds: 30\n  outage_seconds: 5\n  cache_decisions: 1024\n"+
		"  rescore_sample: 0.2\n  drift_tolerance: 0.1\n")
	runDir := filepath.Join(dir, "run")
	var trained int // scoring requests before the evaluation
	for _, args := range [][]string{{"init", "--run", runDir, "--config", cfg}, {"train", "--run", runDir, "--steps", "2"}, {"eval", "--run", runDir, "--runs", "1"}, {"report", "--run", runDir}} {
		if args[0] == "eval" {
			trained = fake.Generates()
		}
		if out, err := run(t, "", args...); err != nil {
			t.Fatalf("%s: %v\n%s", args[0], err, out)
		}
	}
	rows, err := schema.ReadFile[schema.DecisionRow](schema.Decisions, filepath.Join(runDir, "step-000001", "rollout", "decisions.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	prompts, err := schema.ReadFile[schema.PromptRow](schema.Prompts, filepath.Join(runDir, "step-000001", "rollout", "prompts.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	drift, err := schema.ReadFile[schema.RhoDriftRow](schema.RhoDrift, filepath.Join(runDir, "step-000001", "rescore", "rho_drift.arrow"))
	if err != nil || len(drift) != int(math.Ceil(0.2*float64(len(prompts)))) {
		t.Fatalf("%d decisions re-queried of %d prompts (%v)", len(drift), len(prompts), err)
	}
	choices := 0
	for _, d := range rows {
		if len(d.PriorLogits) < 2 {
			continue
		}
		choices++
		total := 0.0
		for _, v := range d.PriorLogits {
			total += math.Exp(float64(v))
		}
		if math.Abs(total-1) > 1e-5 {
			t.Fatalf("%s t=%d: Σ ρ = %v", d.EpisodeID, d.T, total)
		}
		if !d.Forced && math.Abs(d.LogpBehavior-float64(d.PriorLogits[d.Chosen])) > 1e-5 {
			t.Fatalf("%s t=%d: behaviour %v, log ρ %v: step 1's untrained θ is not the served ρ", d.EpisodeID, d.T, d.LogpBehavior, d.PriorLogits[d.Chosen])
		}
	}
	if choices == 0 || choices != len(prompts) || fake.Generates() == 0 {
		t.Fatalf("%d decisions with a choice, %d prompts, %d scoring requests", choices, len(prompts), fake.Generates())
	}
	table, err := os.ReadFile(filepath.Join(runDir, "eval", "table.md"))
	if err != nil || !strings.Contains(string(table), `reference: ρ is the served model "fake/qwen"`) || fake.Generates() == trained {
		t.Fatalf("eval table (%v), %d scoring requests during the evaluation:\n%s", err, fake.Generates()-trained, table)
	}
	if report, err := os.ReadFile(filepath.Join(runDir, "report", "report.md")); err != nil || !strings.Contains(string(report), `| reference ρ | the served model "fake/qwen"`) {
		t.Fatalf("the report does not name the served reference (%v)", err)
	}
}
