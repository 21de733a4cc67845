package comparisons

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/paradigms"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
	"github.com/evosteer/evosteer-go/stages/evaluate"
)

func tinyStudy(t *testing.T, dir string, steps int) Options {
	t.Helper()
	vs, err := Select([]string{"value-head", "ppo", "beta-6"})
	if err != nil {
		t.Fatal(err)
	}
	return Options{Dir: dir, Config: config.Default, Variants: vs, Seeds: 2, Steps: steps, Tasks: 6, TestPerFamily: 3,
		EvalRuns: 2, Paradigms: []string{paradigms.SingleAgent}, SearchPerFamily: 2, Jobs: 2, Version: "test"}
}

// evalRows are a run folder's eval/results.arrow.
func evalRows(t *testing.T, dir string) []schema.EvalRow {
	t.Helper()
	rows, err := schema.ReadFile[schema.EvalRow](schema.EvalResults, filepath.Join(dir, layout.Eval, layout.EvalResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// oracle is a benchmark's or block's score of a run folder's policy computed in plain Go from
// eval/results.arrow: the mean over evaluation runs, in points (blocks: the mean of the block's
// benchmarks).
func oracle(t *testing.T, dir, policy, benchmark string) float64 {
	t.Helper()
	per := map[string][]float64{}
	block := map[string]string{}
	for _, r := range evalRows(t, dir) {
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

// blockPerRun is a block's score of a run folder's policy in each evaluation run, in plain Go
// from eval/results.arrow: the mean of the block's benchmarks, in points.
func blockPerRun(t *testing.T, dir, policy, block string) map[int32]float64 {
	t.Helper()
	sum, n := map[int32]float64{}, map[int32]float64{}
	for _, r := range evalRows(t, dir) {
		if r.Policy == policy && r.Block == block {
			sum[r.Run] += 100 * r.Score
			n[r.Run]++
		}
	}
	for run := range sum {
		sum[run] /= n[run]
	}
	return sum
}

// checkBetaTable compares every cell of beta.md with plain Go over the β study's run folders
// (full and beta-6; two seeds, two evaluation runs): θ and ρ of one run folder and evaluation
// run are a pair, the β is the run's anchortb.beta. It also checks that the runs of a seed share
// the test tasks and evaluation episode seeds.
func checkBetaTable(t *testing.T, dir string, s *study) {
	t.Helper()
	variants := []string{Full, "beta-6"}
	if len(s.betas) != len(variants) {
		t.Fatalf("β study: %d rows, want %d", len(s.betas), len(variants))
	}
	shared := map[int]string{} // per seed: the full run's test tasks and evaluation seeds
	for i, v := range variants {
		row := s.betas[i]
		var theta, rho, diff [len(blocks)][]score
		for seed := 1; seed <= 2; seed++ {
			r, err := rundir.Open(filepath.Join(dir, fmt.Sprintf("%s-s%d", v, seed)))
			if err != nil {
				t.Fatal(err)
			}
			if r.Config.AnchorTB.Beta != row.beta {
				t.Errorf("%s: β %v in run.yaml, row %d has %v", r.Dir, r.Config.AnchorTB.Beta, i, row.beta)
			}
			for b, block := range blocks {
				rh := blockPerRun(t, r.Dir, evaluate.Reference, block)
				for k, x := range blockPerRun(t, r.Dir, evaluate.EvoSteer, block) {
					theta[b] = append(theta[b], score{value: x})
					rho[b] = append(rho[b], score{value: rh[k]})
					diff[b] = append(diff[b], score{value: x - rh[k]})
				}
			}
			ts, err := tasks.ReadFile(r.TasksPath("test"))
			if err != nil {
				t.Fatal(err)
			}
			inputs := fmt.Sprintf("%+v\n", ts)
			for _, e := range evalRows(t, r.Dir) {
				if e.Policy == evaluate.EvoSteer {
					inputs += fmt.Sprintf("%d %s %d %d\n", e.Run, e.Benchmark, e.Seed, e.Tasks)
				}
			}
			if v == Full {
				shared[seed] = inputs
			} else if inputs != shared[seed] {
				t.Errorf("%s does not share the full run's test tasks and evaluation seeds", r.Dir)
			}
		}
		for b, block := range blocks {
			var want betaBlock
			want.theta, _ = meanStd(theta[b])
			want.rho, _ = meanStd(rho[b])
			want.diff, want.diffStd = meanStd(diff[b])
			got := row.blocks[b]
			if row.pairs != 4 || len(diff[b]) != 4 || abs(got.theta-want.theta) > 1e-9 || abs(got.rho-want.rho) > 1e-9 ||
				abs(got.diff-want.diff) > 1e-9 || abs(got.diffStd-want.diffStd) > 1e-9 {
				t.Errorf("β %v %s: SQL %+v over %d pairs, Go %+v over %d", row.beta, block, got, row.pairs, want, len(diff[b]))
			}
		}
	}
}

// TestStudyTablesMatchTheRunFiles runs a tiny study (full, one ablation, one objective, the β
// study's β = 6; two seeds) and checks the SQL-built cells of the three tables against
// plain Go over each run's eval/results.arrow, the paired differences, the rows the tables hold,
// resuming without retraining or re-evaluating, the refusal to reuse a study folder made with
// other settings (β included), and the refusal of a β run evaluated without ρ.
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
	checkBetaTable(t, dir, s)
	if strings.Count(tables.Beta, "\n|") != 2+len(s.betas) || !strings.Contains(tables.Beta, "| 6 | ") {
		t.Errorf("beta table:\n%s", tables.Beta)
	}
	if written, err := os.ReadFile(filepath.Join(dir, BetaFile)); err != nil || string(written) != tables.Beta {
		t.Errorf("beta.md: %v", err)
	}

	// Resuming trains and evaluates nothing: no new timings, the same evaluation files, the same
	// tables.
	before, err := os.ReadFile(filepath.Join(dir, TimingsFolder, "ppo-s1.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	betaResults := filepath.Join(dir, "beta-6-s1", layout.Eval, layout.EvalResultsFile)
	evaluatedAt, err := os.Stat(betaResults)
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
	if st, err := os.Stat(betaResults); err != nil || !st.ModTime().Equal(evaluatedAt.ModTime()) {
		t.Errorf("resume re-evaluated beta-6-s1: %v", err)
	}
	if again.Table2 != tables.Table2 || again.Beta != tables.Beta {
		t.Errorf("resume changed the tables:\n%s\n%s\n%s\n%s", tables.Table2, again.Table2, tables.Beta, again.Beta)
	}

	// The same folder with other settings is refused, naming the run; β is one of them.
	o.Tasks = 7
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "another configuration") {
		t.Errorf("changed settings: %v", err)
	}
	o.Tasks = 6
	o.Variants = slices.Clone(o.Variants)
	o.Variants[slices.IndexFunc(o.Variants, func(v Variant) bool { return v.Name == "beta-6" })].Beta = 5
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "beta-6-s1: run") || !strings.Contains(err.Error(), "another configuration") {
		t.Errorf("changed β: %v", err)
	}

	// A β run whose evaluation lacks ρ is refused, naming it: its θ − ρ has no pair.
	bad := filepath.Join(dir, "beta-6-s2", layout.Eval, layout.EvalResultsFile)
	rows := slices.DeleteFunc(evalRows(t, filepath.Join(dir, "beta-6-s2")), func(r schema.EvalRow) bool { return r.Policy == evaluate.Reference })
	if err := schema.WriteRows(schema.EvalResults, bad, schema.Lineage{Run: "beta-6-s2", Stage: layout.Eval}, rows); err != nil {
		t.Fatal(err)
	}
	if _, err := load(context.Background(), dir, o.runDirs()); err == nil || !strings.Contains(err.Error(), "comparison_beta.sql: β = 6: θ evaluated without ρ") ||
		!strings.Contains(err.Error(), "beta-6-s2") {
		t.Errorf("β run without ρ: %v", err)
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
	if all, _ := Select(nil); len(all) != 1+len(config.Ablations)+len(config.Objectives)-1+len(BetaStudy) {
		t.Fatalf("all variants: %d", len(all))
	}
	if vs, err := Select([]string{"beta-6"}); err != nil || len(vs) != 2 || vs[1] != (Variant{Name: "beta-6", Objective: "anchortb", Beta: 6}) {
		t.Fatalf("β variant: %+v %v", vs, err)
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
