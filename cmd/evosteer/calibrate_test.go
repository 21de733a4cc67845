package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/schema"
)

// `evosteer calibrate` at a tiny scale on two benchmarks: the world file reads back as an overlay,
// fit.arrow holds every cell's fit, check and refit rows, fit.md the summary; a bad target table
// is refused with file, line and column before anything is written.
func TestCalibrateCommand(t *testing.T) {
	dir := t.TempDir()
	targets := filepath.Join(dir, "t.csv")
	csv := "benchmark,policy,score\nnq_open,direct,23.59\nnq_open,single_agent,67.19\nnq_open,fixed_template,74.84\n" +
		"nq_open,plan_execute,72.5\nnq_open,searched_workflow,76.41\nnq_open,reference,73.28\nwebshop,direct,32.66\nwebshop,reference,69.84\n"
	if err := os.WriteFile(targets, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "fit")
	text, err := run(t, "", "calibrate", "--targets", targets, "--out", out, "--tasks", "6", "--evals", "3", "--rounds", "1",
		"--search-tasks", "2", "--final-search-tasks", "3", "--check-tasks", "4", "--check-runs", "2", "--refit-seed", "5")
	if err != nil {
		t.Fatalf("calibrate: %v\n%s", err, text)
	}
	for _, want := range []string{"round 1 block nq_open", "round 1 block webshop", "round 1 block reference", "check: 2 runs", "refit from seed 5", "world: "} {
		if !strings.Contains(text, want) {
			t.Errorf("the output lacks %q:\n%s", want, text)
		}
	}
	if _, err := config.Load(filepath.Join(out, "world.yaml")); err != nil {
		t.Fatalf("world.yaml is not a configuration overlay: %v", err)
	}
	rows, err := schema.ReadFile[schema.CalibrationFitRow](schema.CalibrationFit, filepath.Join(out, "fit.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, r := range rows {
		count[r.Source]++
	}
	if len(rows) != 8*5 || count["fit"] != 8 || count["check"] != 16 || count["refit"] != 16 {
		t.Fatalf("%d rows by source %v: want 8 cells × (1 fit + 2 check + 2 refit)", len(rows), count)
	}
	md, err := os.ReadFile(filepath.Join(out, "fit.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"of 8**", "Refit from seed 5", "A world exact in structure", "| nq_open | direct |", "sim.families.webshop.bare_logit"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("fit.md lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "workflows.json")); err != nil {
		t.Fatal(err)
	}

	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("benchmark,policy,score\nhotpotqa,evosteer,87.8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badOut := filepath.Join(dir, "bad-out")
	if _, err := run(t, "", "calibrate", "--targets", bad, "--out", badOut); err == nil || !strings.Contains(err.Error(), "bad.csv:2:10") {
		t.Fatalf("a method row was not refused with file, line and column: %v", err)
	}
	if _, err := os.Stat(badOut); !os.IsNotExist(err) {
		t.Fatalf("a refused table left %s behind: %v", badOut, err)
	}
	if _, err := run(t, "", "calibrate"); err == nil || !strings.Contains(err.Error(), "--targets") {
		t.Fatalf("no --targets: %v", err)
	}
}
