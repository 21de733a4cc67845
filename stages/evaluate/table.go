package evaluate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/evosteer/evosteer-go/schema"
)

// Table renders results shaped like the paper's Table 1: benchmarks as rows in an IID and an
// OOD block, each closed by an Avg row; policies as columns (evosteer first); each cell the mean
// over runs ± the standard deviation across runs, and for Avg rows the mean of the benchmark
// means ± sqrt(Σ σ_b²)/n (paper appendix D). Scores are percentages.
func Table(rows []schema.EvalRow, simulated bool) string {
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
	var b strings.Builder
	if simulated {
		b.WriteString("Simulated world (internal/sim): these scores say whether the machinery works, not what any LLM scores.\n\n")
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
				m, s := meanStd(scores[key{p, bn}])
				cells[i] = fmt.Sprintf("%.2f ± %.2f", m, s)
			}
			fmt.Fprintf(&b, "| %s | %s |\n", bn, strings.Join(cells, " | "))
		}
		cells := make([]string, len(policies))
		for i, p := range policies {
			var sum, vars float64
			for _, bn := range in {
				m, s := meanStd(scores[key{p, bn}])
				sum += m
				vars += s * s
			}
			n := float64(len(in))
			cells[i] = fmt.Sprintf("**%.2f ± %.2f**", sum/n, math.Sqrt(vars)/n)
		}
		fmt.Fprintf(&b, "| **%s avg** | %s |\n", strings.ToUpper(block), strings.Join(cells, " | "))
	}
	return b.String()
}

// meanStd is the mean and the sample standard deviation (0 for one value).
func meanStd(x []float64) (float64, float64) {
	if len(x) == 0 {
		return math.NaN(), math.NaN()
	}
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
