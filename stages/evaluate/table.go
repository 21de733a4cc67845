package evaluate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/schema"
)

// Table renders results shaped like the paper's Table 1: benchmarks as rows in an IID and an
// OOD block, each closed by an Avg row; policies as columns (evosteer first); each cell the mean
// over runs ± the standard deviation across runs (— where not evaluated, "n/a: why" where na
// says the cell cannot be evaluated; the mean alone after a single run), and for Avg rows the
// mean of the benchmark means ± sqrt(Σ σ_b²)/n (paper appendix D; "n/a: no <benchmark> score"
// when one of them is n/a). Scores are percentages. A last line gives the paired run-by-run
// difference evosteer − reference.
func Table(rows []schema.EvalRow, cfg *config.Config, na Unavailable) string {
	type key struct{ policy, bench string }
	scores := map[key][]float64{}
	blocks := map[string]string{}
	var policies, benches []string
	for _, r := range rows {
		k := key{r.Policy, r.Benchmark}
		scores[k] = append(scores[k], 100*r.Score)
		blocks[r.Benchmark] = r.Block
		if !slices.Contains(policies, r.Policy) {
			policies = append(policies, r.Policy)
		}
		if !slices.Contains(benches, r.Benchmark) {
			benches = append(benches, r.Benchmark)
		}
	}
	slices.Sort(benches)
	type avgRow struct {
		mean, std float64
		runs      int // the fewest runs of a benchmark in the block
	}
	avgs := map[key]avgRow{} // (policy, block) → Avg row
	var b strings.Builder
	if cfg.Executor.Backend == "sim" {
		b.WriteString("Simulated world (internal/sim): these scores say whether the machinery works, not what any LLM scores.\n\n")
	}
	if cfg.Served != nil || cfg.Policy.IsCausalLM() {
		b.WriteString("reference: ρ is " + cfg.Reference() + ".\n\n")
	}
	b.WriteString("| benchmark | " + strings.Join(policies, " | ") + " |\n|---|" + strings.Repeat("---|", len(policies)) + "\n")
	for _, block := range []string{"iid", "ood"} {
		var in []string
		for _, bn := range benches {
			if blocks[bn] == block {
				in = append(in, bn)
			}
		}
		if len(in) == 0 {
			continue
		}
		for _, bn := range in {
			cells := make([]string, len(policies))
			for i, p := range policies {
				cells[i] = "—" // not evaluated
				if why := na[p][bn]; why != "" {
					cells[i] = "n/a: " + why
				}
				if x := scores[key{p, bn}]; len(x) > 0 {
					m, s := meanStd(x)
					cells[i] = withStd(fmt.Sprintf("%.2f", m), s, len(x))
				}
			}
			fmt.Fprintf(&b, "| %s | %s |\n", bn, strings.Join(cells, " | "))
		}
		cells := make([]string, len(policies))
		for i, p := range policies {
			var sum, vars float64
			cells[i] = "—"
			complete, runs := true, math.MaxInt
			var missing []string // n/a benchmarks
			for _, bn := range in {
				x := scores[key{p, bn}]
				if len(x) == 0 {
					complete = false
					if na[p][bn] != "" {
						missing = append(missing, bn)
					}
					continue
				}
				m, s := meanStd(x)
				sum += m
				vars += s * s
				runs = min(runs, len(x))
			}
			if len(missing) > 0 {
				cells[i] = "n/a: no " + strings.Join(missing, ", ") + " score"
			}
			if complete {
				n := float64(len(in))
				avgs[key{p, block}] = avgRow{sum / n, math.Sqrt(vars) / n, runs}
				cells[i] = "**" + withStd(fmt.Sprintf("%.2f", sum/n), math.Sqrt(vars)/n, runs) + "**"
			}
		}
		fmt.Fprintf(&b, "| **%s avg** | %s |\n", strings.ToUpper(block), strings.Join(cells, " | "))
	}
	var gaps []string
	for _, block := range []string{"iid", "ood"} {
		e, eok := avgs[key{EvoSteer, block}]
		r, rok := avgs[key{Reference, block}]
		switch {
		case !eok || !rok:
		case min(e.runs, r.runs) < 2:
			gaps = append(gaps, fmt.Sprintf("%s avg %+.2f (no std from a single evaluation run; use --runs 2 or more)", strings.ToUpper(block), e.mean-r.mean))
		default:
			combined := math.Hypot(e.std, r.std)
			verdict := "not larger"
			if e.mean-r.mean > combined {
				verdict = "larger"
			}
			gaps = append(gaps, fmt.Sprintf("%s avg %+.2f against a combined std of %.2f (%s)", strings.ToUpper(block), e.mean-r.mean, combined, verdict))
		}
	}
	if len(gaps) > 0 {
		b.WriteString("\nAvg rows, evosteer − reference, against the combined std sqrt(σ_θ² + σ_ρ²) when two or more runs give one: " + strings.Join(gaps, "; ") + ".\n")
	}
	b.WriteString(paired(rows, blocks))
	return b.String()
}

// paired is the block averages' difference evosteer − reference run by run: the policies of a
// run share every episode seed, so this difference is far less noisy than the two columns'
// spreads suggest. Empty unless both policies were evaluated.
func paired(rows []schema.EvalRow, blocks map[string]string) string {
	type key struct {
		policy, block string
		run           int32
	}
	sum, n := map[key]float64{}, map[key]float64{}
	var runs []int32
	for _, r := range rows {
		k := key{r.Policy, r.Block, r.Run}
		sum[k] += 100 * r.Score
		n[k]++
		if !slices.Contains(runs, r.Run) {
			runs = append(runs, r.Run)
		}
	}
	var lines []string
	for _, block := range []string{"iid", "ood"} {
		var diffs []float64
		for _, run := range runs {
			e, r := key{EvoSteer, block, run}, key{Reference, block, run}
			if n[e] > 0 && n[r] > 0 {
				diffs = append(diffs, sum[e]/n[e]-sum[r]/n[r])
			}
		}
		if len(diffs) == 0 {
			continue
		}
		m, s := meanStd(diffs)
		pos := 0
		for _, d := range diffs {
			if d > 0 {
				pos++
			}
		}
		lines = append(lines, fmt.Sprintf("%s avg %s (%d of %d runs positive)", strings.ToUpper(block), withStd(fmt.Sprintf("%+.2f", m), s, len(diffs)), pos, len(diffs)))
	}
	if len(lines) == 0 {
		return ""
	}
	return "\nPaired over runs (shared episode seeds), evosteer − reference: " + strings.Join(lines, "; ") + ".\n"
}

// withStd appends to a formatted mean over n runs its std across them, "± std", unless n is 1:
// one run has no std, and "± 0.00" would claim one.
func withStd(mean string, s float64, n int) string {
	if n < 2 {
		return mean
	}
	return fmt.Sprintf("%s ± %.2f", mean, s)
}

// meanStd is the mean and the sample standard deviation (0 for one value) of a non-empty list.
func meanStd(x []float64) (float64, float64) {
	m := 0.0
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	if len(x) == 1 {
		return m, 0
	}
	s := 0.0
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return m, math.Sqrt(s / float64(len(x)-1))
}
