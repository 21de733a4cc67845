package calibrate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/schema"
)

// ArrowRows are the fit as calibration_fit rows: every cell's fit-sample score, its score on
// each run of the check and, after a refit, the refit world's score on the same runs.
func ArrowRows(cfg *config.Config, t *Targets, fitTasks int, res *Result, c Check) []schema.CalibrationFitRow {
	var out []schema.CalibrationFitRow
	for _, tc := range t.inOrder() {
		k, b, p := Key{tc.Benchmark, tc.Policy}, tc.Benchmark, tc.Policy
		add := func(source string, run int, tasks int, score float64) {
			out = append(out, schema.CalibrationFitRow{Benchmark: b, Policy: p, Block: block(cfg, b), Source: source, Run: int32(run),
				Tasks: int64(tasks), Score: score, Target: tc.Score, TargetStd: tc.Std})
		}
		add("fit", 0, fitTasks, res.Fit[k])
		for i, r := range c.Runs {
			add("check", i, c.TasksPer[b], r[k])
		}
		for i, r := range c.RefitRuns {
			add("refit", i, c.TasksPer[b], r[k])
		}
	}
	return out
}

// Check is the fitted world measured on fresh seeds: the test split, several evaluation runs.
type Check struct {
	Runs      []Scores // one per evaluation run
	RefitRuns []Scores // the refit world on the same runs; nil when there was no refit
	// RefitSeed is the second fit's seed (0: none).
	RefitSeed uint64
	TasksPer  map[string]int // test tasks per benchmark
}

// CellRow is one cell of the fit report.
type CellRow struct {
	Benchmark, Policy, Block string
	Target, TargetStd        float64
	Fit                      float64   // on the fit sample
	Test, TestStd            float64   // mean and std over the check's runs
	TestRuns                 []float64 // the score on each of the check's runs
	Tolerance                float64   // max(3, 2·std of the cell)
	Within                   bool
	Refit                    float64 // NaN without a refit
}

// Rows assembles the report's cells, in the table's order.
func Rows(cfg *config.Config, t *Targets, fit Scores, c Check) []CellRow {
	var out []CellRow
	for _, tc := range t.inOrder() {
		k, b, p := Key{tc.Benchmark, tc.Policy}, tc.Benchmark, tc.Policy
		var xs []float64
		for _, r := range c.Runs {
			xs = append(xs, r[k])
		}
		m, sd := meanStd(xs)
		tol := math.Max(3, 2*math.Max(tc.Std, sd))
		row := CellRow{Benchmark: b, Policy: p, Block: block(cfg, b), Target: tc.Score, TargetStd: tc.Std, Fit: fit[k],
			Test: m, TestStd: sd, TestRuns: xs, Tolerance: tol, Within: math.Abs(m-tc.Score) <= tol, Refit: math.NaN()}
		if c.RefitRuns != nil {
			row.Refit = Mean(c.RefitRuns)[k]
		}
		out = append(out, row)
	}
	return out
}

func block(cfg *config.Config, b string) string {
	if slices.Contains(cfg.Families, b) {
		return "iid"
	}
	return "ood"
}

func meanStd(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	var m float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	if len(xs) < 2 {
		return m, 0
	}
	var v float64
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, math.Sqrt(v / float64(len(xs)-1))
}

// Summary counts what the acceptance of a calibrated world asks.
type Summary struct {
	Cells, Within         int
	WorstAverage          float64 // largest |test − target| of a policy's IID or OOD average
	AtBound               []string
	Unmoved               []string // parameters whose fitted value is their start value
	RefitMax              float64  // largest |refit − test| of a cell (NaN without a refit)
	Params, DegreesOfFree int
}

// Summarize counts the cells within tolerance, the worst row average, the parameters at a bound
// and the refit's largest move.
func Summarize(rows []CellRow, params []Fitted) Summary {
	s := Summary{Cells: len(rows), RefitMax: math.NaN(), Params: len(params), DegreesOfFree: len(rows) - len(params)}
	for _, r := range rows {
		if r.Within {
			s.Within++
		}
		if !math.IsNaN(r.Refit) {
			s.RefitMax = math.Max(nanZero(s.RefitMax), math.Abs(r.Refit-r.Test))
		}
	}
	for _, a := range Averages(rows) {
		s.WorstAverage = math.Max(s.WorstAverage, math.Abs(a.Test-a.Target))
	}
	for _, p := range params {
		if p.AtBound(p.Value) {
			s.AtBound = append(s.AtBound, p.Name)
		}
		if p.Value == p.Start {
			s.Unmoved = append(s.Unmoved, p.Name)
		}
	}
	return s
}

// The acceptance a calibrated world is held to (beside the cells' own tolerance): a refit from
// another seed moves no cell by more than refitTolerance points, and every policy's IID and OOD
// average lies within averageTolerance points of its target on the check.
const refitTolerance, averageTolerance = 1.0, 1.5

// SampleNoise is what the fit sample's and the check's own episode noise allow, whatever the
// world: it compares the refit's moves with the moves sampling alone would cause, and gives the
// chance that a world exact in structure — every cell's true score on its target, each matched
// on its fit sample — would meet the two tolerances above.
type SampleNoise struct {
	MedianMove, MedianNoise float64
	Within                  int // cells whose |refit − check| is at most twice their noise
	// PRefitWithin: every cell's refit move within refitTolerance; PAveragesWithin: every
	// average within averageTolerance on this check (the fit samples' and the check's noise).
	PRefitWithin, PAveragesWithin float64
}

// sampleNoise: a fit matches each cell on runs runs of its sample, plays[b] plays of each of b's
// tasks per run for every one of the check's, so a cell's fitted score is off its true one by
// about f = std/√(runs · plays), std the cell's spread over the check's runs (the same episode
// noise), and two fits from different seeds differ by √2 · f. An average of k cells is off by
// √(Σ f²)/k on the fit sample and by its se on the check. The chances treat these as normal and
// independent.
func sampleNoise(rows []CellRow, runs int, plays map[string]int) SampleNoise {
	var moves, noise []float64
	out := SampleNoise{PRefitWithin: 1, PAveragesWithin: 1}
	type key struct{ policy, block string }
	fitVar := map[key]float64{}
	for _, r := range rows {
		f := r.TestStd / math.Sqrt(float64(runs*max(1, plays[r.Benchmark])))
		fitVar[key{r.Policy, r.Block}] += f * f
		if math.IsNaN(r.Refit) {
			continue
		}
		m, n := math.Abs(r.Refit-r.Test), math.Sqrt2*f
		moves, noise = append(moves, m), append(noise, n)
		if m <= 2*n {
			out.Within++
		}
		out.PRefitWithin *= withinNormal(refitTolerance, n)
	}
	for _, a := range Averages(rows) {
		k := float64(a.Benchmarks)
		out.PAveragesWithin *= withinNormal(averageTolerance, math.Sqrt(fitVar[key{a.Policy, a.Block}]/(k*k)+nanZero(a.TestSE)*nanZero(a.TestSE)))
	}
	out.MedianMove, out.MedianNoise = median(moves), median(noise)
	return out
}

// withinNormal is P(|X| ≤ tol) for X normal with mean 0 and standard deviation sd.
func withinNormal(tol, sd float64) float64 {
	if sd == 0 {
		return 1
	}
	return math.Erf(tol / (sd * math.Sqrt2))
}

// median of xs (NaN when empty).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	ys := slices.Sorted(slices.Values(xs))
	if len(ys)%2 == 1 {
		return ys[len(ys)/2]
	}
	return (ys[len(ys)/2-1] + ys[len(ys)/2]) / 2
}

func nanZero(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// Average is a policy's plain mean over one block's benchmarks.
type Average struct {
	Policy, Block     string
	Target, Fit, Test float64
	// TestSE is the standard error of Test: the std of the average over the check's runs, over
	// the square root of their number. It says how much of Test − Target is the check's own noise.
	TestSE     float64
	Refit      float64
	Benchmarks int
}

// Averages are every policy's IID and OOD averages (target, fit sample, test and its standard
// error, refit).
func Averages(rows []CellRow) []Average {
	var out []Average
	for _, p := range Policies {
		for _, blk := range []string{"iid", "ood"} {
			a := Average{Policy: p, Block: blk}
			var perRun []float64
			for _, r := range rows {
				if r.Policy == p && r.Block == blk {
					a.Target += r.Target
					a.Fit += r.Fit
					a.Test += r.Test
					a.Refit += r.Refit
					a.Benchmarks++
					perRun = addRuns(perRun, r.TestRuns)
				}
			}
			if a.Benchmarks == 0 {
				continue
			}
			n := float64(a.Benchmarks)
			a.Target, a.Fit, a.Test, a.Refit = a.Target/n, a.Fit/n, a.Test/n, a.Refit/n
			a.TestSE = math.NaN()
			if len(perRun) > 1 {
				_, sd := meanStd(perRun)
				a.TestSE = sd / n / math.Sqrt(float64(len(perRun)))
			}
			out = append(out, a)
		}
	}
	return out
}

// addRuns is sum + runs element by element (runs alone when sum is empty).
func addRuns(sum, runs []float64) []float64 {
	if len(sum) == 0 {
		return runs
	}
	out := make([]float64, len(sum))
	for i := range sum {
		out[i] = sum[i] + runs[i]
	}
	return out
}

// Markdown renders the fit report.
func Markdown(t *Targets, o Options, res *Result, c Check, version string) string {
	rows := Rows(res.Config, t, res.Fit, c)
	s := Summarize(rows, res.Params)
	var b strings.Builder
	fmt.Fprintf(&b, "# World fit report\n\n")
	fmt.Fprintf(&b, "Targets `%s` (sha256 `%s`, %d cells). Fit: algorithm %d, code %s, seed %d, %d rounds, the check's %d test tasks per benchmark in %d runs (episode seeds of the fit's own), "+
		"a workflow search on %d then (its best four) %d tasks per task type, at most %d evaluations per block; %d evaluations in %s.\n\n",
		t.Path, t.SHA256, len(t.Cells), Algorithm, version, o.Seed, o.Rounds, o.PerBenchmark, o.Runs, o.SearchPerType, o.FinalSearch, o.MaxEvals, res.Evaluations, res.Elapsed.Round(1e9))
	fmt.Fprintf(&b, "Check on fresh seeds: the test split (tasks per benchmark: %s), %d evaluation runs, each with its own episode seeds.\n\n", tasksLine(t, c), len(c.Runs))
	fmt.Fprintf(&b, "## Summary\n\n")
	fmt.Fprintf(&b, "- Cells within max(3 points, 2 std of the cell) of the target on the check: **%d of %d**.\n", s.Within, s.Cells)
	fmt.Fprintf(&b, "- Largest gap of a policy's IID or OOD average to its target: **%.2f points**.\n", s.WorstAverage)
	if len(s.AtBound) == 0 {
		fmt.Fprintf(&b, "- Parameters at a bound: none.\n")
	} else {
		fmt.Fprintf(&b, "- Parameters at a bound: %s.\n", strings.Join(s.AtBound, ", "))
	}
	if len(s.Unmoved) > 0 {
		fmt.Fprintf(&b, "- Parameters the optimizer left at their start value (no evaluated point along them lowered the loss; not a bound, "+
			"nor a located optimum): %d, %s.\n", len(s.Unmoved), strings.Join(s.Unmoved, ", "))
	}
	if math.IsNaN(s.RefitMax) {
		fmt.Fprintf(&b, "- Refit from a second seed: not run.\n")
	} else {
		fmt.Fprintf(&b, "- Refit from seed %d: the largest move of a cell on the check is **%.2f points**.\n", c.RefitSeed, s.RefitMax)
		plays, replayed := map[string]int{}, ""
		for _, bm := range t.Benchmarks() {
			if plays[bm] = playsToReach(c.TasksPer[bm], o.PerBenchmark); plays[bm] > 1 {
				replayed += fmt.Sprintf(", %s's %d %d times, to reach %d episodes", bm, c.TasksPer[bm], plays[bm], o.PerBenchmark)
			}
		}
		n := sampleNoise(rows, o.Runs, plays)
		fmt.Fprintf(&b, "- The refit's moves against the samples' own noise: each fit matches a cell on %d runs of its sample, each playing a task "+
			"plays times (once%s), so two fits from different seeds differ by about √2 · std/√(%d · plays) per cell from their samples' episode noise alone "+
			"(std: the cell's spread over the check's runs). Median move %.2f points, median of that noise %.2f; %d of %d cells move within twice "+
			"their noise. A world exact in structure, fitted on such samples, would keep every refit move within %g point with probability %.2g, "+
			"and every IID and OOD average within ±%g of its target on this check with probability %.2f.\n",
			o.Runs, replayed, o.Runs, n.MedianMove, n.MedianNoise, n.Within, len(rows), refitTolerance, n.PRefitWithin, averageTolerance, n.PAveragesWithin)
	}
	rest := "the rest are a fit with fewer parameters than cells"
	if s.DegreesOfFree < 0 {
		rest = "the rest have more parameters than cells, so they are not identified" // a few benchmarks against the global blocks
	}
	fmt.Fprintf(&b, "- Degrees of freedom: %d fitted parameters against %d cells (%d left). Each benchmark's direct cell is matched by its own "+
		"executor-alone offset, so those %d cells are reproduced by construction; %s.\n",
		s.Params, s.Cells, s.DegreesOfFree, len(t.Benchmarks()), rest)
	fmt.Fprintf(&b, "- Loss (Σ ((score − target)/σ)², σ = √(std² + 1) points) after each round on the fit sample: %s.\n\n", floats(res.Loss))

	fmt.Fprintf(&b, "## Averages\n\nse: the standard error of the check's average, from the spread of its runs; a Δ of several se is the world's, not the check's noise.\n\n")
	fmt.Fprintf(&b, "| policy | block | target | fit sample | check | se | Δ check | refit |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, a := range Averages(rows) {
		fmt.Fprintf(&b, "| %s | %s | %.2f | %.2f | %.2f | %s | %+.2f | %s |\n", a.Policy, a.Block, a.Target, a.Fit, a.Test, num(a.TestSE), a.Test-a.Target, num(a.Refit))
	}
	fmt.Fprintf(&b, "\n## Cells\n\nScores in points. Δ = check − target; tol = max(3, 2·std).\n\n")
	fmt.Fprintf(&b, "| benchmark | policy | target | fit sample | check (mean ± std) | Δ | tol | within | refit |\n|---|---|---:|---:|---:|---:|---:|:-:|---:|\n")
	for _, r := range rows {
		mark := "yes"
		if !r.Within {
			mark = "**no**"
		}
		fmt.Fprintf(&b, "| %s | %s | %.2f | %.2f | %.2f ± %.2f | %+.2f | %.2f | %s | %s |\n", r.Benchmark, r.Policy, r.Target, r.Fit, r.Test, r.TestStd,
			r.Test-r.Target, r.Tolerance, mark, num(r.Refit))
	}
	fmt.Fprintf(&b, "\n## Parameters\n\n| parameter | start | fitted | bounds | at bound |\n|---|---:|---:|---|:-:|\n")
	for _, p := range res.Params {
		mark := ""
		if p.AtBound(p.Value) {
			mark = "**yes**"
		}
		fmt.Fprintf(&b, "| %s | %g | %g | [%g, %g] | %s |\n", p.Name, p.Start, p.Value, p.Lo, p.Hi, mark)
	}
	fmt.Fprintf(&b, "\n## Searched workflows (last round)\n\n| task type | template |\n|---|---|\n")
	for _, tt := range res.Config.Families {
		if w, ok := res.Workflows[tt]; ok {
			fmt.Fprintf(&b, "| %s | %s |\n", tt, w.Name)
		}
	}
	return b.String()
}

func tasksLine(t *Targets, c Check) string {
	var parts []string
	for _, b := range t.Benchmarks() {
		parts = append(parts, fmt.Sprintf("%s %d", b, c.TasksPer[b]))
	}
	return strings.Join(parts, ", ")
}

func floats(xs []float64) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprintf("%.1f", x))
	}
	return strings.Join(parts, ", ")
}

func num(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.2f", x)
}
