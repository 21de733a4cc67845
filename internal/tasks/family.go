package tasks

import "slices"

// Grading kinds: how a family's outputs are scored (METHOD.md §6.2).
const (
	KindQA          = "qa"          // short answer, exact match after normalisation (F1 stored too)
	KindChoice      = "choice"      // multiple-choice letter
	KindInteger     = "integer"     // AIME: an integer compared as a decimal
	KindMath        = "math"        // MATH-Hard: normalised LaTeX or an exact fraction
	KindCode        = "code"        // MBPP+: pass@1 of the hidden tests in the sandbox
	KindEnvironment = "environment" // scored by an external environment harness
)

// Family is one benchmark of the reference release.
type Family struct {
	Name     string // the row's kind
	TaskType string // the IID family whose one-hot slot and grader the family uses
	Grading  string // one of the Kind constants
}

// families are the twelve benchmarks of the reference release (METHOD.md §6.1): six IID and
// six OOD, each OOD family mapped to the IID task type whose grader it uses. MATH-Hard is the
// one OOD family graded differently from its task type (reference curve_benchmarks._score).
var families = map[string]Family{
	"hotpotqa":           {"hotpotqa", "hotpotqa", KindQA},
	"nq_open":            {"nq_open", "nq_open", KindQA},
	"medqa":              {"medqa", "medqa", KindChoice},
	"aime_2026":          {"aime_2026", "aime_2026", KindInteger},
	"mbpp_plus":          {"mbpp_plus", "mbpp_plus", KindCode},
	"alfworld":           {"alfworld", "alfworld", KindEnvironment},
	"triviaqa":           {"triviaqa", "nq_open", KindQA},
	"musique":            {"musique", "hotpotqa", KindQA},
	"gpqa_diamond":       {"gpqa_diamond", "medqa", KindChoice},
	"math_hard":          {"math_hard", "aime_2026", KindMath},
	"swe_bench_verified": {"swe_bench_verified", "mbpp_plus", KindEnvironment},
	"webshop":            {"webshop", "alfworld", KindEnvironment},
}

// testItems caps a benchmark's test split where the benchmark holds fewer items than the
// protocol's per-benchmark count (paper appendix D, METHOD.md §6.3: 128 per benchmark, AIME
// 2026: 30): AIME 2026 is one year's contest, 30 problems, all of them test items.
var testItems = map[string]int{"aime_2026": 30}

// TestSize is the number of test items of a benchmark when the protocol asks for perBenchmark:
// perBenchmark, or fewer where the benchmark holds fewer items.
func TestSize(family string, perBenchmark int) int {
	if n, ok := testItems[family]; ok {
		return min(n, perBenchmark)
	}
	return perBenchmark
}

// alfworldPrompt is the fixed task text of ALFWorld rows, whose prompt field is null: the
// instruction comes from the environment's reset observation.
const alfworldPrompt = "Complete the ALFWorld instruction shown by the reset observation."

// FamilyOf returns the benchmark a row kind names.
func FamilyOf(kind string) (Family, bool) {
	f, ok := families[kind]
	return f, ok
}

// FamilyNames lists the known families, sorted.
func FamilyNames() []string {
	names := make([]string, 0, len(families))
	for n := range families {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
