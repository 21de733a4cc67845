package paper

// Benchmarks are Table 2's columns in order: the six IID benchmarks, then the six OOD ones.
var Benchmarks = [12]string{"hotpotqa", "nq_open", "medqa", "aime_2026", "mbpp_plus", "alfworld",
	"triviaqa", "musique", "gpqa_diamond", "math_hard", "swe_bench_verified", "webshop"}

// Full is the key of the full method's row (the study's variant name).
const Full = "full"

// Table2 are the paper's Table 2 scores, in points, in the order of Benchmarks, by the row's
// policy or variant name (the baselines as internal/paradigms names them, "reference" for ρ, the
// ablations by their appendix D names, Full for the method).
var Table2 = map[string][12]float64{
	"direct":                {57.66, 23.59, 71.41, 48.67, 78.91, 46.88, 44.22, 39.22, 61.72, 89.06, 15.94, 32.66},
	"reference":             {82.34, 73.28, 82.97, 53.33, 87.66, 73.59, 90.47, 71.88, 75.31, 90.00, 29.53, 69.84},
	"single_agent":          {75.94, 67.19, 80.78, 48.67, 85.63, 70.16, 86.25, 61.41, 70.31, 89.84, 27.03, 66.09},
	"fixed_template":        {82.03, 74.84, 85.47, 56.67, 83.28, 66.72, 89.84, 70.31, 73.75, 90.47, 24.06, 54.84},
	"plan_execute":          {80.47, 72.50, 81.88, 51.33, 84.84, 65.63, 90.78, 68.59, 71.56, 89.53, 25.94, 57.81},
	"searched_workflow":     {87.19, 76.41, 88.91, 54.67, 85.16, 73.13, 91.56, 77.50, 75.63, 90.78, 28.28, 59.06},
	"interleaved-execution": {89.38, 83.75, 89.53, 58.67, 90.63, 80.94, 95.00, 79.84, 81.41, 93.28, 31.25, 75.47},
	"execution-features":    {88.28, 83.75, 90.31, 66.67, 91.41, 81.88, 93.91, 81.25, 82.34, 93.28, 37.34, 82.81},
	"learnable-repair":      {90.31, 84.06, 89.84, 67.33, 90.47, 83.59, 95.31, 80.16, 82.81, 92.50, 31.88, 87.03},
	"value-head":            {83.28, 84.22, 91.09, 68.00, 89.84, 80.16, 94.22, 79.22, 81.09, 92.81, 39.22, 82.66},
	"measured-flows":        {90.16, 83.59, 89.22, 56.67, 90.00, 77.81, 94.38, 76.25, 81.88, 91.09, 33.75, 80.63},
	"flow-corrections":      {85.94, 82.66, 89.84, 64.00, 90.31, 82.50, 95.00, 83.75, 82.81, 92.19, 38.13, 85.16},
	"skill-evolution":       {88.28, 80.94, 90.16, 68.67, 84.53, 82.81, 94.38, 80.63, 83.28, 92.81, 38.59, 85.16},
	"sequential-validation": {90.47, 81.72, 89.22, 66.00, 90.00, 78.59, 94.84, 81.25, 83.28, 94.53, 35.00, 86.09},
	Full:                    {92.34, 85.00, 93.13, 74.67, 92.19, 89.69, 95.63, 84.53, 85.63, 95.47, 42.50, 90.63},
}

// Score is row's score on benchmark, in points.
func Score(row, benchmark string) (float64, bool) {
	r, ok := Table2[row]
	if !ok {
		return 0, false
	}
	for i, b := range Benchmarks {
		if b == benchmark {
			return r[i], true
		}
	}
	return 0, false
}

// Average is a row's plain mean over the IID (first six) or OOD (last six) benchmarks.
func Average(row, block string) (float64, bool) {
	r, ok := Table2[row]
	if !ok {
		return 0, false
	}
	cols := r[:6]
	if block == "ood" {
		cols = r[6:]
	}
	var s float64
	for _, x := range cols {
		s += x
	}
	return s / 6, true
}
