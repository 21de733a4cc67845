//go:build duckdb_arrow

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/probetable"
	"github.com/evosteer/evosteer-go/internal/runtest"
)

// `evosteer probe` on a small run: it prints the summary, writes the step's folder, and the
// table is queried by `evosteer sql` with the probed step in the step column; a step without a
// checkpoint says what to run first.
func TestProbeCommand(t *testing.T) {
	dir, r := initDemo(t)
	runtest.Untrained(t, r, 1) // step 1's learner (still π_θ = ρ) and its author's empty library, no training data
	if out, err := run(t, "", "probe", "--run", dir, "--step", "1", "--tasks", "2", "--continuations", "2"); err == nil ||
		!strings.Contains(err.Error(), "loss targets of step 1") || !strings.Contains(err.Error(), "--target-window 0") {
		t.Fatalf("probe of a step without training data: %v\n%s", err, out)
	}
	// Six tasks: on fewer, every first action of the calibrated world can lead to the same reward
	// (no target to move toward, no verdict).
	out, err := run(t, "", "probe", "--run", dir, "--step", "1", "--tasks", "6", "--continuations", "2", "--target-window", "0")
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, out)
	}
	for _, want := range []string{"# Probe of step 1", "6 training tasks", "**Verdict.** θ is limited by optimisation", "| **all** | 6 |",
		"probe: 6/6 tasks", filepath.Join(dir, probetable.Folder, "step-000001")} {
		if !strings.Contains(out, want) {
			t.Errorf("probe output lacks %q:\n%s", want, out)
		}
	}
	out, err = run(t, "", "sql", "--run", dir, "--format", "csv",
		"SELECT step, stage, count(DISTINCT task_id) AS tasks, bool_and(theta = rho) AS untrained FROM probe GROUP BY ALL")
	if err != nil || out != "step,stage,tasks,untrained\n1,probe,6,true\n" {
		t.Fatalf("sql over the probe table: %v\n%q", err, out)
	}
	if out, err := run(t, "", "probe", "--run", dir, "--step", "2"); err == nil || !strings.Contains(err.Error(), "evosteer train --run "+dir+" --steps 2") {
		t.Fatalf("probe of an untrained step: %v\n%s", err, out)
	}
	if _, err := run(t, "", "probe", "--run", dir); err == nil || !strings.Contains(err.Error(), "--step") {
		t.Fatalf("probe without --step: %v", err)
	}
}
