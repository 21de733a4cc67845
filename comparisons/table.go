package comparisons

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/evosteer/evosteer-go/internal/paper"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/evosteer/evosteer-go/internal/atomicfile"
	"github.com/evosteer/evosteer-go/internal/duck"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/paradigms"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
	"github.com/evosteer/evosteer-go/stages/evaluate"
)

// Files the study writes besides its run folders.
const (
	Table2File     = "table2.md"
	ObjectivesFile = "objectives.md"
	BetaFile       = "beta.md"
)

// Tables are the study's three Markdown tables.
type Tables struct {
	Table2     string // paper Table 2: paradigms and ablations against the full method
	Objectives string // paper Figure 4a: objectives with update cost
	Beta       string // the β study: θ against ρ at each anchortb.beta
}

// score is one seed's value of a cell.
type score struct {
	seed   int
	value  float64
	tokens float64
}

// study is what the tables are made of: per row key (variant for the trained policy, policy name
// for ρ and the paradigms of the full runs) and benchmark (or avg_iid, avg_ood), the seeds'
// scores; per variant its update cost; and the β study's rows. na holds the cells the full
// method's evaluations could not fill, with the reason (evaluate.ReadUnavailable): the table
// prints "n/a: why" there.
type study struct {
	cells     map[[2]string][]score
	na        map[[2]string]string
	cost      map[string]*cost
	betas     []betaRow
	iid, ood  []string
	seeds     int
	steps     int
	testTasks int
}

type cost struct {
	rowsPerEpisode, policySteps, episodesPerStep float64
	updateMS                                     []float64 // measured update stage walls
}

// betaRow is one β of the β study (comparison_beta.sql): the (seed, evaluation run) pairs of θ
// and ρ and, per block (IID, OOD), their means and the paired difference.
type betaRow struct {
	beta   float64
	pairs  int64
	blocks [2]betaBlock
}

type betaBlock struct{ theta, rho, diff, diffStd float64 }

// blocks are the benchmark blocks in the order of the tables' columns.
var blocks = [2]string{"iid", "ood"}

// WriteTables reads the runs of a study with DuckDB (comparison_scores.sql,
// comparison_update_cost.sql and comparison_beta.sql over eval_results and update_metrics of
// every run folder) and the study's timings, and writes table2.md, objectives.md and beta.md
// into the study folder.
func WriteTables(ctx context.Context, studyDir string, runDirs []string) (*Tables, error) {
	s, err := load(ctx, studyDir, runDirs)
	if err != nil {
		return nil, err
	}
	t := &Tables{Table2: s.table2(), Objectives: s.objectives(), Beta: s.betaTable()}
	for _, f := range []struct{ name, text string }{{Table2File, t.Table2}, {ObjectivesFile, t.Objectives}, {BetaFile, t.Beta}} {
		if err := atomicfile.WriteBytes(filepath.Join(studyDir, f.name), []byte(f.text), 0o644); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// variantOf is the variant of a study run's name "<variant>-s<seed>".
func variantOf(run string) string {
	if i := strings.LastIndex(run, "-s"); i >= 0 {
		return run[:i]
	}
	return run
}

func load(ctx context.Context, studyDir string, runDirs []string) (*study, error) {
	if len(runDirs) == 0 {
		return nil, fmt.Errorf("comparisons: no runs to tabulate")
	}
	first, err := rundir.Open(runDirs[0])
	if err != nil {
		return nil, err
	}
	cfg := first.Config
	s := &study{cells: map[[2]string][]score{}, na: map[[2]string]string{}, cost: map[string]*cost{}, iid: cfg.Families,
		steps: cfg.Steps, testTasks: cfg.Tasks.TestPerFamily}
	// OOD benchmarks in the order of their IID task types, as in the paper's tables.
	for _, f := range cfg.Families {
		for ood, tt := range cfg.OODFamilies {
			if tt == f {
				s.ood = append(s.ood, ood)
			}
		}
	}
	db, err := duck.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	runLabels := duck.RunLabels(runDirs)
	if _, err := db.LoadRuns(ctx, runDirs, runLabels, []string{"eval_results", "update_metrics"}); err != nil {
		return nil, err
	}
	seeds := map[int]bool{}
	err = query(ctx, db, "comparison_scores", nil, func(rec arrow.RecordBatch) error {
		variants, e1 := schema.Column[*array.String](rec, "variant")
		seedCol, e2 := schema.Column[*array.Int32](rec, "seed")
		policies, e3 := schema.Column[*array.String](rec, "policy")
		benchmarks, e4 := schema.Column[*array.String](rec, "benchmark")
		scores, e5 := schema.Column[*array.Float64](rec, "score")
		tokens, e6 := schema.Column[*array.Float64](rec, "tokens")
		if err := errors.Join(e1, e2, e3, e4, e5, e6); err != nil {
			return err
		}
		for i := range int(rec.NumRows()) {
			// Strings are copied: the batch's memory belongs to DuckDB and is freed with it.
			variant, policy, seed := strings.Clone(variants.Value(i)), strings.Clone(policies.Value(i)), int(seedCol.Value(i))
			key := variant
			if policy != evaluate.EvoSteer {
				if v, _ := lookup(variant); policy == evaluate.Reference && v.Beta != 0 {
					continue // the β study's own ρ: beta.md (comparison_beta.sql)
				}
				if variant != Full {
					return fmt.Errorf("policy %s evaluated in run %s-s%d (only the full method's runs evaluate it, and ρ the β study's)", policy, variant, seed)
				}
				key = policy
			}
			seeds[seed] = true
			k := [2]string{key, strings.Clone(benchmarks.Value(i))}
			s.cells[k] = append(s.cells[k], score{seed, scores.Value(i), tokens.Value(i)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.seeds = len(seeds)
	err = query(ctx, db, "comparison_update_cost", nil, func(rec arrow.RecordBatch) error {
		variants, e1 := schema.Column[*array.String](rec, "variant")
		rows, e2 := schema.Column[*array.Float64](rec, "rows_per_episode")
		steps, e3 := schema.Column[*array.Float64](rec, "policy_steps")
		episodes, e4 := schema.Column[*array.Float64](rec, "episodes_per_step")
		if err := errors.Join(e1, e2, e3, e4); err != nil {
			return err
		}
		n := float64(s.seeds)
		for i := range int(rec.NumRows()) {
			v := strings.Clone(variants.Value(i))
			if s.cost[v] == nil {
				s.cost[v] = &cost{}
			}
			s.cost[v].rowsPerEpisode += rows.Value(i) / n
			s.cost[v].policySteps += steps.Value(i) / n
			s.cost[v].episodesPerStep += episodes.Value(i) / n
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, d := range runDirs {
		name := filepath.Base(d)
		ms, err := readUpdateTimings(filepath.Join(studyDir, TimingsFolder, name+".tsv"))
		if err != nil {
			return nil, err
		}
		if c := s.cost[variantOf(name)]; c != nil {
			c.updateMS = append(c.updateMS, ms...)
		}
	}
	if s.betas, err = loadBetas(ctx, db, runDirs, runLabels); err != nil {
		return nil, err
	}
	if err := s.loadUnavailable(runDirs); err != nil {
		return nil, err
	}
	return s, nil
}

// loadUnavailable reads, from the full method's runs, the cells their evaluation could not fill
// and why (searched_workflow on a benchmark whose task type has no training task).
func (s *study) loadUnavailable(runDirs []string) error {
	for _, d := range runDirs {
		if variantOf(filepath.Base(d)) != Full {
			continue
		}
		r, err := rundir.Open(d)
		if err != nil {
			return err
		}
		na, err := evaluate.ReadUnavailable(r)
		if err != nil {
			return err
		}
		for policy, benchmarks := range na {
			for bm, why := range benchmarks {
				s.na[[2]string{policy, bm}] = why
			}
		}
	}
	return nil
}

// unavailableIn is the benchmarks of a block that key's row cannot be computed on; its block
// average, and every difference from it, is then not computed either.
func (s *study) unavailableIn(key, block string) []string {
	benchmarks := s.iid
	if block == "ood" {
		benchmarks = s.ood
	}
	var out []string
	for _, bm := range benchmarks {
		if s.na[[2]string{key, bm}] != "" {
			out = append(out, bm)
		}
	}
	return out
}

// naAvg is the cell of a block average (or a difference of one) over an n/a benchmark, "" when
// every benchmark of the block has a score.
func (s *study) naAvg(key, block string) string {
	if bms := s.unavailableIn(key, block); len(bms) > 0 {
		return "n/a: no " + strings.Join(bms, ", ") + " score"
	}
	return ""
}

// loadBetas runs comparison_beta.sql over the β study's runs — those that evaluate ρ: the full
// method's and the beta-<β> variants' — each with the anchortb.beta of its run.yaml.
func loadBetas(ctx context.Context, db *duck.DB, runDirs, runLabels []string) ([]betaRow, error) {
	var runs []string
	var betas []float64
	for i, d := range runDirs {
		if v, ok := lookup(variantOf(filepath.Base(d))); !ok || !v.evaluatesReference() {
			continue
		}
		r, err := rundir.Open(d)
		if err != nil {
			return nil, err
		}
		runs = append(runs, runLabels[i])
		betas = append(betas, r.Config.AnchorTB.Beta)
	}
	var rows []betaRow
	err := query(ctx, db, "comparison_beta", map[string]any{"runs": runs, "betas": betas}, func(rec arrow.RecordBatch) error {
		beta, e1 := schema.Column[*array.Float64](rec, "beta")
		pairs, e2 := schema.Column[*array.Int64](rec, "pairs")
		unpaired, e3 := schema.Column[*array.String](rec, "unpaired")
		errs := []error{e1, e2, e3}
		var stats [len(blocks)][4]*array.Float64 // θ, ρ, θ − ρ, its std
		for b, block := range blocks {
			for k, name := range []string{"theta", "rho", "diff", "diff_std"} {
				var err error
				stats[b][k], err = schema.Column[*array.Float64](rec, name+"_"+block)
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		for i := range int(rec.NumRows()) {
			if u := unpaired.Value(i); u != "" {
				return fmt.Errorf("β = %g: θ evaluated without ρ in the same evaluation run in %s (the β study pairs them within a run: run the study again to evaluate ρ)", beta.Value(i), u)
			}
			row := betaRow{beta: beta.Value(i), pairs: pairs.Value(i)}
			for b := range blocks {
				c := stats[b]
				row.blocks[b] = betaBlock{c[0].Value(i), c[1].Value(i), c[2].Value(i), c[3].Value(i)}
			}
			rows = append(rows, row)
		}
		return nil
	})
	return rows, err
}

// readUpdateTimings returns the update stage walls (ms) of a run's timings file (none when the
// file is absent: the steps were trained outside the study).
func readUpdateTimings(path string) ([]float64, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ms []float64
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s line %d: want step, stage and milliseconds separated by tabs", path, line)
		}
		if fields[1] != layout.Update {
			continue
		}
		v, err := strconv.ParseFloat(fields[2], 64)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: milliseconds: %w", path, line, err)
		}
		ms = append(ms, v)
	}
	return ms, sc.Err()
}

// query runs an embedded SQL file with its parameters and calls batch for every result batch.
func query(ctx context.Context, db *duck.DB, file string, params map[string]any, batch func(arrow.RecordBatch) error) error {
	rr, err := db.RunFile(ctx, file, params)
	if err != nil {
		return err
	}
	defer rr.Release()
	for rr.Next() {
		if err := batch(rr.RecordBatch()); err != nil {
			return fmt.Errorf("%s.sql: %w", file, err)
		}
	}
	return rr.Err()
}

// meanStd is the mean and sample standard deviation (0 for one value) of the seeds' values.
func meanStd(xs []score) (float64, float64) {
	var m float64
	for _, x := range xs {
		m += x.value
	}
	m /= float64(len(xs))
	if len(xs) < 2 {
		return m, 0
	}
	var v float64
	for _, x := range xs {
		v += (x.value - m) * (x.value - m)
	}
	return m, math.Sqrt(v / float64(len(xs)-1))
}

// paired is the mean and std over seeds of key's value minus the full method's, seed by seed
// (the variants of a seed share tasks and evaluation episode seeds).
func (s *study) paired(key, benchmark string) (float64, float64, bool) {
	full := map[int]float64{}
	for _, x := range s.cells[[2]string{Full, benchmark}] {
		full[x.seed] = x.value
	}
	var d []score
	for _, x := range s.cells[[2]string{key, benchmark}] {
		if f, ok := full[x.seed]; ok {
			d = append(d, score{seed: x.seed, value: x.value - f})
		}
	}
	if len(d) == 0 {
		return 0, 0, false
	}
	m, sd := meanStd(d)
	return m, sd, true
}

func (s *study) cell(key, benchmark string) string {
	if why := s.na[[2]string{key, benchmark}]; why != "" {
		return "n/a: " + why
	}
	xs := s.cells[[2]string{key, benchmark}]
	if len(xs) == 0 {
		return "—"
	}
	m, _ := meanStd(xs)
	return points(m)
}

// points prints a score in points with the two decimals shown.
func points(x float64) string { return fmt.Sprintf("%.2f", round2(x)) }

// diffCell prints a difference, signed, with its std.
func diffCell(m, sd float64) string { return fmt.Sprintf("%+.2f ± %.2f", round2(m), round2(sd)) }

// round2 rounds to the two decimals shown, without a negative zero: a difference of −1e-15
// prints as +0.00, not −0.00.
func round2(x float64) float64 { return math.Round(x*100)/100 + 0 }

func (s *study) avgCell(key, block string) string {
	if na := s.naAvg(key, block); na != "" {
		return na
	}
	xs := s.cells[[2]string{key, "avg_" + block}]
	if len(xs) == 0 {
		return "—"
	}
	m, sd := meanStd(xs)
	return fmt.Sprintf("%.2f ± %.2f", round2(m), round2(sd))
}

func (s *study) deltaCell(key, block string) string {
	if key == Full {
		return "0"
	}
	if na := s.naAvg(key, block); na != "" {
		return na
	}
	m, sd, ok := s.paired(key, "avg_"+block)
	if !ok {
		return "—"
	}
	return diffCell(m, sd)
}

// paperCell is the paper's block average of a row (Table 2), "—" for a row the paper lacks.
func (s *study) paperCell(key, block string) string {
	p, ok := paper.Average(key, block)
	if !ok {
		return "—"
	}
	return points(p)
}

// paperDelta is the simulated block average (mean over seeds) minus the paper's.
func (s *study) paperDelta(key, block string) string {
	if na := s.naAvg(key, block); na != "" {
		return na
	}
	p, ok := paper.Average(key, block)
	xs := s.cells[[2]string{key, "avg_" + block}]
	if !ok || len(xs) == 0 {
		return "—"
	}
	m, _ := meanStd(xs)
	return fmt.Sprintf("%+.2f", round2(m-p))
}

func (s *study) caption() string {
	return fmt.Sprintf("Simulated world (internal/sim), reduced scale: %d training steps per run, %d seed(s); every cell is the mean over seeds of the mean over evaluation runs on %d test tasks per benchmark (aime_2026: %d; points). Avg: mean ± std over seeds of the block average; Δ vs full: the paired difference from the full method, seed by seed (shared tasks and episode seeds), mean ± std over seeds.\n\n",
		s.steps, s.seeds, s.testTasks, tasks.TestSize("aime_2026", s.testTasks))
}

func (s *study) table2() string {
	var b strings.Builder
	b.WriteString("# Component ablation and paradigm comparison (paper Table 2, simulated)\n\n")
	b.WriteString(s.caption())
	b.WriteString("Paper: the row's block average in the paper's Table 2, and the simulated average minus it (the baseline rows are what the world is calibrated to; the method's rows are the world's predictions).\n\n")
	if len(s.na) > 0 {
		b.WriteString("n/a: a cell this study cannot compute, with the reason (e.g. the searched workflow on a benchmark whose task type has no training task to search a workflow on, such as one a pilot left out of the training pool); a block average over such a benchmark, and its differences, are n/a too.\n\n")
	}
	header := append(append(append([]string{"Variant"}, s.iid...), s.ood...), "IID avg", "OOD avg", "Δ IID vs full", "Δ OOD vs full",
		"paper IID", "paper OOD", "Δ IID vs paper", "Δ OOD vs paper")
	writeHeader(&b, header)
	benchmarks := append(append([]string{}, s.iid...), s.ood...)
	row := func(key string) string {
		if !slices.ContainsFunc(benchmarks, func(bm string) bool { return len(s.cells[[2]string{key, bm}]) > 0 || s.na[[2]string{key, bm}] != "" }) {
			return ""
		}
		cells := []string{labels[key]}
		for _, bm := range benchmarks {
			cells = append(cells, s.cell(key, bm))
		}
		cells = append(cells, s.avgCell(key, "iid"), s.avgCell(key, "ood"), s.deltaCell(key, "iid"), s.deltaCell(key, "ood"))
		for _, blk := range []string{"iid", "ood"} {
			cells = append(cells, s.paperCell(key, blk))
		}
		for _, blk := range []string{"iid", "ood"} {
			cells = append(cells, s.paperDelta(key, blk))
		}
		return mdRow(cells)
	}
	// section writes its title and rows, or nothing when none of its variants ran.
	section := func(title string, keys ...string) {
		var rows string
		for _, k := range keys {
			rows += row(k)
		}
		if rows != "" && title != "" {
			b.WriteString("| *" + title + "* |" + strings.Repeat(" |", len(header)-1) + "\n")
		}
		b.WriteString(rows)
	}
	section("", paradigms.Direct, evaluate.Reference)
	section("Fixed orchestration paradigms", paradigms.Names...)
	section("Online orchestration (Sec. 4.1)", "interleaved-execution", "execution-features", "learnable-repair", "value-head")
	section("AnchorTB (Sec. 4.2)", "measured-flows", "flow-corrections")
	section("Skill admission (Sec. 4.3)", "skill-evolution", "sequential-validation")
	section("", Full)
	return b.String()
}

func (s *study) objectives() string {
	var b strings.Builder
	b.WriteString("# Objective comparison and training cost (paper Figure 4a, simulated)\n\n")
	b.WriteString(s.caption())
	b.WriteString("Update cost: wall milliseconds of the update stage per trained episode and seconds per step (measured while the study ran its runs side by side on this machine's CPU, so compare ratios within this table), and the deterministic work: network rows evaluated per episode (forward and gradient rows of the policy, head rows). Tokens / OOD problem: executor tokens per OOD test task.\n\n")
	header := append(append([]string{"Objective"}, s.ood...), "OOD avg", "IID avg", "Δ OOD vs AnchorTB", "update ms / episode", "update s / step", "rows / episode", "tokens / OOD problem")
	writeHeader(&b, header)
	for _, key := range []string{evaluate.Reference, "ppo", "grpo", "tb", "ttb", Full} {
		if len(s.cells[[2]string{key, "avg_ood"}]) == 0 {
			continue
		}
		label := labels[key]
		switch key {
		case evaluate.Reference:
			label = "No training (ρ)"
		case Full:
			label = labels["anchortb"]
		}
		cells := []string{label}
		for _, bm := range s.ood {
			cells = append(cells, s.cell(key, bm))
		}
		cells = append(cells, s.avgCell(key, "ood"), s.avgCell(key, "iid"), s.deltaCell(key, "ood"))
		if c := s.cost[key]; c != nil && key != evaluate.Reference {
			ms, sec := "—", "—"
			if len(c.updateMS) > 0 {
				var sum float64
				for _, v := range c.updateMS {
					sum += v
				}
				mean := sum / float64(len(c.updateMS))
				ms = fmt.Sprintf("%.1f", mean/c.episodesPerStep)
				sec = fmt.Sprintf("%.2f", mean/1000)
			}
			cells = append(cells, ms, sec, fmt.Sprintf("%.0f", c.rowsPerEpisode))
		} else {
			cells = append(cells, "—", "—", "—")
		}
		var tok float64
		xs := s.cells[[2]string{key, "avg_ood"}]
		for _, x := range xs {
			tok += x.tokens / float64(len(xs))
		}
		cells = append(cells, fmt.Sprintf("%.0f", tok))
		b.WriteString(mdRow(cells))
	}
	return b.String()
}

// betaTable is beta.md: per β, θ and ρ of the same run folders and their paired difference.
func (s *study) betaTable() string {
	var b strings.Builder
	b.WriteString("# AnchorTB's temperature β: the trained policy against the reference (simulated)\n\n")
	fmt.Fprintf(&b, "Simulated world (internal/sim), reduced scale: %d training steps per run, %d seed(s). Each row is the full method trained at that anchortb.beta (the configuration's β: the full method's runs; the others: the variants beta-<β>), with θ of the last step and the untrained reference ρ evaluated in the same run folder on the same %d test tasks per benchmark (aime_2026: %d), with the same episode seeds and skill menus (ρ differs between rows only through the run's skill library). θ and ρ: mean over (seed, evaluation run) of the block average (points); θ − ρ: the paired difference, mean ± std over those pairs; pairs: seeds × evaluation runs.\n\n",
		s.steps, s.seeds, s.testTasks, tasks.TestSize("aime_2026", s.testTasks))
	writeHeader(&b, []string{"β", "θ IID avg", "ρ IID avg", "θ − ρ IID", "θ OOD avg", "ρ OOD avg", "θ − ρ OOD", "pairs"})
	for _, r := range s.betas {
		cells := []string{fmt.Sprintf("%g", r.beta)}
		for _, bl := range r.blocks {
			cells = append(cells, points(bl.theta), points(bl.rho), diffCell(bl.diff, bl.diffStd))
		}
		b.WriteString(mdRow(append(cells, strconv.FormatInt(r.pairs, 10))))
	}
	return b.String()
}

// writeHeader writes a Markdown table's header and separator rows.
func writeHeader(b *strings.Builder, header []string) {
	b.WriteString(mdRow(header))
	b.WriteString("|" + strings.Repeat("---|", len(header)) + "\n")
}

// mdRow is one Markdown table row.
func mdRow(cells []string) string { return "| " + strings.Join(cells, " | ") + " |\n" }
