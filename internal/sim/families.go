package sim

import (
	"math"
	"math/rand/v2"

	"github.com/evosteer/evosteer-go/internal/seed"
)

// kind is the answer format a family uses; it decides prompts, outputs and grading.
type kind int

const (
	kindQAPassages kind = iota // short answer, passages in the prompt (hotpotqa, musique)
	kindQA                     // short answer, question only (nq_open, triviaqa)
	kindMC                     // multiple choice A-D (medqa, gpqa_diamond)
	kindMath                   // integer in \boxed{} (aime_2026, math_hard)
	kindCode                   // a python function in a fenced block (mbpp_plus, swe_bench_verified)
	kindEnv                    // interactive environment (alfworld, webshop)
)

type familyInfo struct {
	name     string
	taskType string // the IID task type of the reference's mapping
	kind     kind
	ood      bool
}

// familyTable lists the twelve families of the paper with the reference's OOD -> IID mapping.
var familyTable = map[string]familyInfo{
	"hotpotqa":           {"hotpotqa", "hotpotqa", kindQAPassages, false},
	"nq_open":            {"nq_open", "nq_open", kindQA, false},
	"medqa":              {"medqa", "medqa", kindMC, false},
	"aime_2026":          {"aime_2026", "aime_2026", kindMath, false},
	"mbpp_plus":          {"mbpp_plus", "mbpp_plus", kindCode, false},
	"alfworld":           {"alfworld", "alfworld", kindEnv, false},
	"triviaqa":           {"triviaqa", "nq_open", kindQA, true},
	"musique":            {"musique", "hotpotqa", kindQAPassages, true},
	"gpqa_diamond":       {"gpqa_diamond", "medqa", kindMC, true},
	"math_hard":          {"math_hard", "aime_2026", kindMath, true},
	"swe_bench_verified": {"swe_bench_verified", "mbpp_plus", kindCode, true},
	"webshop":            {"webshop", "alfworld", kindEnv, true},
}

// IIDFamilies are the six in-distribution families, in the task-type one-hot order.
var IIDFamilies = []string{"hotpotqa", "nq_open", "medqa", "aime_2026", "mbpp_plus", "alfworld"}

// OODFamilies maps each out-of-distribution family to the IID task type it uses.
var OODFamilies = map[string]string{
	"triviaqa":           "nq_open",
	"musique":            "hotpotqa",
	"gpqa_diamond":       "medqa",
	"math_hard":          "aime_2026",
	"swe_bench_verified": "mbpp_plus",
	"webshop":            "alfworld",
}

// TaskType returns the IID task type of one of the twelve families the world knows.
func TaskType(family string) (string, bool) {
	f, ok := familyTable[family]
	return f.taskType, ok
}

// Interactive reports whether a family is an environment family (alfworld, webshop).
func Interactive(family string) bool {
	f, ok := familyTable[family]
	return ok && f.kind == kindEnv
}

// stream returns a PCG generator seeded from (base, parts) by seed.Derive: every draw of the
// world comes from one of these, never from global state.
func stream(base uint64, parts ...string) *rand.Rand {
	s1 := seed.Derive(base, parts...)
	s2 := seed.Derive(base, append(append([]string{}, parts...), "pcg-increment")...)
	return rand.New(rand.NewPCG(s1, s2))
}

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

// powerLaw draws an index k in 1..m with probability proportional to k^-exp, skipping exclude.
func powerLaw(r *rand.Rand, m int, exp float64, exclude int) int {
	total := 0.0
	for k := 1; k <= m; k++ {
		if k != exclude {
			total += math.Pow(float64(k), -exp)
		}
	}
	if total == 0 {
		return 0
	}
	u := r.Float64() * total
	last := 0
	for k := 1; k <= m; k++ {
		if k == exclude {
			continue
		}
		last = k
		u -= math.Pow(float64(k), -exp)
		if u < 0 {
			return k
		}
	}
	return last
}

// ToolOf is the tool whose weight sets a benchmark's tool gain: "search" for question answering
// and multiple choice, "python" for math and code, "" for the interactive benchmarks.
func ToolOf(family string) string {
	switch familyTable[family].kind {
	case kindQA, kindQAPassages, kindMC:
		return "search"
	case kindMath, kindCode:
		return "python"
	}
	return ""
}
