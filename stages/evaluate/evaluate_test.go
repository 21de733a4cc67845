package evaluate

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/runtest"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/pipeline"
	"github.com/evosteer/evosteer-go/schema"
)

// The table: per benchmark the mean ± sample std over runs (percent), and the block's Avg row the
// mean of the means ± sqrt(Σσ²)/n.
func TestTable(t *testing.T) {
	rows := []schema.EvalRow{
		{Policy: "evosteer", Benchmark: "a", Block: "iid", Run: 0, Score: 0.80},
		{Policy: "evosteer", Benchmark: "a", Block: "iid", Run: 1, Score: 0.84},
		{Policy: "evosteer", Benchmark: "b", Block: "iid", Run: 0, Score: 0.50},
		{Policy: "evosteer", Benchmark: "b", Block: "iid", Run: 1, Score: 0.56},
		{Policy: "evosteer", Benchmark: "c", Block: "ood", Run: 0, Score: 0.30},
		{Policy: "evosteer", Benchmark: "c", Block: "ood", Run: 1, Score: 0.30},
		{Policy: "reference", Benchmark: "a", Block: "iid", Run: 0, Score: 0.70},
		{Policy: "reference", Benchmark: "a", Block: "iid", Run: 1, Score: 0.80},
		{Policy: "reference", Benchmark: "b", Block: "iid", Run: 0, Score: 0.50},
		{Policy: "reference", Benchmark: "b", Block: "iid", Run: 1, Score: 0.50},
	}
	got := Table(rows, &config.Config{Executor: config.Executor{Backend: "sim"}}, nil)
	sa, sb := math.Sqrt(2*0.02*0.02)*100, math.Sqrt(2*0.03*0.03)*100 // sample std of two values
	for _, want := range []string{
		"Simulated world",
		"| a | 82.00 ± 2.83 | 75.00 ± 7.07 |", "| b | 53.00 ± 4.24 | 50.00 ± 0.00 |", "| c | 30.00 ± 0.00 | — |",
		fmt.Sprintf("| **IID avg** | **67.50 ± %.2f** | **62.50 ± 3.54** |", math.Sqrt(sa*sa+sb*sb)/2),
		"| **OOD avg** | **30.00 ± 0.00** | — |",
		// Run 0: IID means 65 vs 60; run 1: 70 vs 65 → +5.00 ± 0.00, both positive.
		"evosteer − reference: IID avg +5.00 ± 0.00 (2 of 2 runs positive).",
		// Avg rows: 5.00 against sqrt(2.55² + 3.54²) = 4.36; OOD has no reference.
		fmt.Sprintf("IID avg +5.00 against a combined std of %.2f (larger).", math.Hypot(math.Sqrt(sa*sa+sb*sb)/2, 3.5355339)),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "OOD avg +") {
		t.Errorf("a combined-std verdict for a block ρ was not evaluated on:\n%s", got)
	}
	if strings.Index(got, "| c |") < strings.Index(got, "IID avg") {
		t.Errorf("OOD rows before the IID block:\n%s", got)
	}
}

// A cell the evaluation could not fill says so and why, and so does the Avg of its block; a
// cell merely not evaluated keeps its dash.
func TestTableSaysWhyACellIsUnavailable(t *testing.T) {
	rows := []schema.EvalRow{
		{Policy: "evosteer", Benchmark: "a", Block: "iid", Score: 0.80},
		{Policy: "evosteer", Benchmark: "b", Block: "iid", Score: 0.60},
		{Policy: "evosteer", Benchmark: "c", Block: "ood", Score: 0.40},
		{Policy: "searched_workflow", Benchmark: "a", Block: "iid", Score: 0.70},
	}
	why := "no training task of type b to search a workflow on"
	got := Table(rows, &config.Config{}, Unavailable{"searched_workflow": {"b": why}})
	for _, want := range []string{
		"| a | 80.00 | 70.00 |", "| b | 60.00 | n/a: " + why + " |", "| c | 40.00 | — |",
		"| **IID avg** | **70.00** | n/a: no b score |", "| **OOD avg** | **40.00** | — |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}

// Run after one training step: every policy × benchmark × run has a row, the runs have distinct
// seeds, and the results are written.
// One evaluation run has no std: cells and the paired line show the mean alone, and the verdict
// says why it has no combined std instead of comparing against 0.
func TestTableSingleRun(t *testing.T) {
	rows := []schema.EvalRow{
		{Policy: "evosteer", Benchmark: "a", Block: "iid", Score: 0.80},
		{Policy: "reference", Benchmark: "a", Block: "iid", Score: 0.70},
	}
	served := &config.Config{Executor: config.Executor{Backend: "openai"}, Served: &config.ServedReference{Dialect: "vllm", BaseURL: "http://127.0.0.1:8000", Model: "Qwen/Qwen3-8B"}}
	got := Table(rows, served, nil)
	if strings.Contains(got, "Simulated world") || !strings.Contains(got, `reference: ρ is the served model "Qwen/Qwen3-8B" (vllm at http://127.0.0.1:8000).`) {
		t.Errorf("the served reference is not named:\n%s", got)
	}
	for _, want := range []string{
		"| a | 80.00 | 70.00 |", "| **IID avg** | **80.00** | **70.00** |",
		"evosteer − reference: IID avg +10.00 (1 of 1 runs positive).",
		"IID avg +10.00 (no std from a single evaluation run; use --runs 2 or more)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "±") || strings.Contains(got, "(larger)") {
		t.Errorf("a std or a verdict from a single run:\n%s", got)
	}
}

func TestRunWritesResults(t *testing.T) {
	cfg, err := config.Parse("eval test", []byte("batch:\n  tasks: 6\nablations: [skill-evolution]\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := rundir.Init(filepath.Join(t.TempDir(), "demo"), cfg, "test", func(r *rundir.Folder) error {
		lin := schema.Lineage{Run: "demo", Stage: "init", ConfigSHA256: cfg.SHA256()}
		for split, n := range map[string]int{"train": 4, "test": 3} {
			var ts []tasks.Task
			for _, f := range cfg.Families {
				ts = append(ts, sim.Tasks(cfg.Sim, cfg.Seed, f, f, split, n)...)
			}
			if err := tasks.WriteFile(r.TasksPath(split), lin, ts); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	runtest.Untrained(t, r, 0)
	if err := pipeline.Train(context.Background(), r, 1, false, nil); err != nil {
		t.Fatal(err)
	}
	if learner.LatestStep(r) != 1 {
		t.Fatalf("latest step %d", learner.LatestStep(r))
	}
	rows, err := Run(context.Background(), r, Options{Step: 1, Runs: 2, Paradigms: []string{"single_agent"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 * len(cfg.Families) * 2; len(rows) != want {
		t.Fatalf("%d rows, want %d", len(rows), want)
	}
	seeds := map[int32]uint64{}
	for _, row := range rows {
		if row.Tasks != 3 || row.Score < 0 || row.Score > 1 || row.Block != "iid" {
			t.Fatalf("row %+v", row)
		}
		if s, ok := seeds[row.Run]; ok && s != row.Seed {
			t.Fatalf("run %d has two seeds", row.Run)
		}
		seeds[row.Run] = row.Seed
		// Tokens per task are the agents' for every policy; only a controller policy has
		// controller tokens, counted apart (estimated: ρ here is the prior).
		if fixed := row.Policy == "single_agent"; row.TokensPerTask <= 0 || fixed != (row.ControllerTokensPerTask == 0) ||
			row.ControllerCount != schema.ControllerCountEstimated {
			t.Fatalf("row %+v: agents' and controller's tokens per task", row)
		}
	}
	if seeds[0] == seeds[1] {
		t.Fatal("the two runs share a seed")
	}
	written, err := schema.ReadFile[schema.EvalRow](schema.EvalResults, filepath.Join(r.Dir, layout.Eval, layout.EvalResultsFile))
	if err != nil || len(written) != len(rows) {
		t.Fatalf("written %d rows: %v", len(written), err)
	}
	if _, err := Run(context.Background(), r, Options{Step: 0, Runs: 1}); err == nil {
		t.Fatal("step 0 accepted")
	}
	if _, err := Run(context.Background(), r, Options{Step: 99, Runs: 1001}); err == nil || !strings.Contains(err.Error(), "runs must be in [1, 1000]") {
		t.Fatalf("1001 runs: %v", err)
	}
}

// An OOD benchmark plays with the skill slots of the IID task type it maps to (paper Table 5):
// musique (→ hotpotqa) sees hotpotqa's menu, triviaqa (→ nq_open) nq_open's empty one.
func TestOODTasksGetTheMenuOfTheirTaskType(t *testing.T) {
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	rec := skills.Record{Name: "Bridge entities", Description: "Find the bridge entity first.", Trigger: "Use when two hops are needed.",
		Plan: []string{"Name the bridge entity", "Answer from it"}, Pitfalls: []string{"Answering the first hop"}, Constraint: []string{"One answer"}}
	lib, err := skills.NewLibrary(cfg.Admission, []skills.Skill{{ID: rec.ID(), Family: "hotpotqa", Status: skills.Candidate,
		Basis: skills.BasisProposal, Record: rec, ContentHash: rec.ContentHash(), CreatedStep: 9}})
	if err != nil {
		t.Fatal(err)
	}
	var test []tasks.Task
	for _, f := range []string{"hotpotqa", "musique", "triviaqa"} {
		tt, _ := cfg.TaskType(f)
		test = append(test, sim.Tasks(cfg.Sim, cfg.Seed, f, tt, "test", 1)...)
	}
	js := jobs(test, lib, 0, 1, EvoSteer, nil)
	hotpot, musique, trivia := js[0].Menu, js[1].Menu, js[2].Menu
	if len(hotpot.Skills) != 1 || hotpot.Skills[0].ID != rec.ID() {
		t.Fatalf("hotpotqa menu %+v", hotpot)
	}
	if musique.ID != hotpot.ID || len(musique.Skills) != 1 {
		t.Fatalf("musique (task type hotpotqa) got menu %+v, want hotpotqa's %+v", musique, hotpot)
	}
	if len(trivia.Skills) != 0 {
		t.Fatalf("triviaqa (task type nq_open) got hotpotqa's skill: %+v", trivia)
	}
}
