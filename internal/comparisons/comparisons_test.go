package comparisons

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/paradigms"
	"github.com/evosteer/evosteer-go/schema"
	"github.com/evosteer/evosteer-go/stages/evaluate"
)

func tinyStudy(t *testing.T, dir string, steps int) Options {
	t.Helper()
	vs, err := Select([]string{"value-head", "ppo"})
	if err != nil {
		t.Fatal(err)
	}
	return Options{Dir: dir, Config: config.Default, Variants: vs, Seeds: 2, Steps: steps, Tasks: 6, TestPerFamily: 3,
		EvalRuns: 2, Paradigms: []string{paradigms.SingleAgent}, SearchPerFamily: 2, Jobs: 2, Version: "test"}
}

// oracle is a benchmark's or block's score of a run folder's policy computed in plain Go from
// eval/results.arrow: the mean over evaluation runs, in points (blocks: the mean of the block's
// benchmarks).
func oracle(t *testing.T, dir, policy, benchmark string) float64 {
	t.Helper()
	rows, err := schema.ReadFile[schema.EvalRow](schema.EvalResults, filepath.Join(dir, evaluate.Folder, evaluate.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	per := map[string][]float64{}
	block := map[string]string{}
	for _, r := range rows {
		if r.Policy == policy {
			per[r.Benchmark] = append(per[r.Benchmark], 100*r.Score)
			block[r.Benchmark] = r.Block
		}
	}
	mean := func(xs []float64) float64 {
		var s float64
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	if b, ok := strings.CutPrefix(benchmark, "avg_"); ok {
		var ms []float64
		for bm, xs := range per {
			if block[bm] == b {
				ms = append(ms, mean(xs))
			}
		}
		return mean(ms)
	}
	return mean(per[benchmark])
}

// TestStudyTablesMatchTheRunFiles runs a tiny study (full, one ablation, one objective; two seeds)
// and checks the SQL-built cells against plain Go over each run's eval/results.arrow, the paired
// differences, the rows the tables hold, resuming without retraining, and the refusal to reuse a
// study folder made with other settings.
func TestStudyTablesMatchTheRunFiles(t *testing.T) {
	dir := t.TempDir()
	o := tinyStudy(t, dir, 1)
	tables, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	s, err := load(context.Background(), dir, o.runDirs())
	if err != nil {
		t.Fatal(err)
	}
	if s.seeds != 2 {
		t.Fatalf("seeds %d", s.seeds)
	}
	checks := 0
	for _, c := range []struct{ key, run, policy string }{
		{Full, Full, evaluate.EvoSteer}, {"value-head", "value-head", evaluate.EvoSteer}, {"ppo", "ppo", evaluate.EvoSteer},
		{evaluate.Reference, Full, evaluate.Reference}, {paradigms.SingleAgent, Full, paradigms.SingleAgent},
	} {
		for _, bm := range append(append([]string{"avg_iid", "avg_ood"}, s.iid...), s.ood...) {
			var want float64
			for seed := 1; seed <= 2; seed++ {
				want += oracle(t, filepath.Join(dir, fmt.Sprintf("%s-s%d", c.run, seed)), c.policy, bm) / 2
			}
			xs := s.cells[[2]string{c.key, bm}]
			got, _ := meanStd(xs)
			if len(xs) != 2 || abs(got-want) > 1e-9 {
				t.Errorf("%s %s: SQL %v over %d seeds, Go %v", c.key, bm, got, len(xs), want)
			}
			checks++
		}
	}
	// The paired difference is the mean of the seed-by-seed differences.
	d, _, ok := s.paired("value-head", "avg_iid")
	var want float64
	for seed := 1; seed <= 2; seed++ {
		want += (oracle(t, filepath.Join(dir, fmt.Sprintf("value-head-s%d", seed)), evaluate.EvoSteer, "avg_iid") -
			oracle(t, filepath.Join(dir, fmt.Sprintf("full-s%d", seed)), evaluate.EvoSteer, "avg_iid")) / 2
	}
	if !ok || abs(d-want) > 1e-9 {
		t.Errorf("paired IID difference %v, Go %v", d, want)
	}
	for _, want := range []string{"EvoSteer arch., untrained (ρ)", "Single agent with tools", "− Reference value head", "EvoSteer (full)", "*Online orchestration (Sec. 4.1)*"} {
		if !strings.Contains(tables.Table2, want) {
			t.Errorf("table 2 lacks %q:\n%s", want, tables.Table2)
		}
	}
	if strings.Contains(tables.Table2, "Skill admission") {
		t.Errorf("table 2 shows a section none of whose variants ran:\n%s", tables.Table2)
	}
	for _, want := range []string{"No training (ρ)", "PPO", "AnchorTB (ours)"} {
		if !strings.Contains(tables.Objectives, want) {
			t.Errorf("objective table lacks %q:\n%s", want, tables.Objectives)
		}
	}
	if c := s.cost["ppo"]; c == nil || c.policySteps != 4 || len(c.updateMS) != 2 || s.cost[Full].policySteps != 1 {
		t.Errorf("update cost: ppo %+v, full %+v", c, s.cost[Full])
	}
	if written, err := os.ReadFile(filepath.Join(dir, Table2File)); err != nil || string(written) != tables.Table2 {
		t.Errorf("table2.md: %v", err)
	}

	// Resuming trains and evaluates nothing: no new timings, the same tables.
	before, err := os.ReadFile(filepath.Join(dir, TimingsFolder, "ppo-s1.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, TimingsFolder, "ppo-s1.tsv"))
	if string(after) != string(before) {
		t.Errorf("resume retrained: timings\n%s\nbecame\n%s", before, after)
	}
	if again.Table2 != tables.Table2 {
		t.Errorf("resume changed table 2:\n%s\n%s", tables.Table2, again.Table2)
	}

	// The same folder with other settings is refused, naming the run.
	o.Tasks = 7
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "another configuration") {
		t.Errorf("changed settings: %v", err)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestSelect(t *testing.T) {
	vs, err := Select([]string{"ppo"})
	if err != nil || len(vs) != 2 || vs[0].Name != Full || vs[1].Objective != "ppo" {
		t.Fatalf("%+v %v", vs, err)
	}
	if all, _ := Select(nil); len(all) != 1+len(config.Ablations)+len(config.Objectives)-1 {
		t.Fatalf("all variants: %d", len(all))
	}
	if _, err := Select([]string{"nope"}); err == nil || !strings.Contains(err.Error(), "learnable-repair") {
		t.Fatalf("unknown variant: %v", err)
	}
}

func TestRound2HasNoNegativeZero(t *testing.T) {
	for x, want := range map[float64]string{-1e-15: "+0.00", -0.004: "+0.00", -0.006: "-0.01", 1.005: "+1.00", 2.675: "+2.68"} {
		if got := fmt.Sprintf("%+.2f", round2(x)); got != want {
			t.Errorf("round2(%v) prints %s, want %s", x, got, want)
		}
	}
}
