package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/evosteer/evosteer-go/internal/sandbox"
)

// Grader versions. A score records the grader that produced it, so scores of different
// versions are never mixed silently; bump a version whenever its rule changes.
const (
	GraderQA      = "qa-exact-match@1"   // HotpotQA/NQ/TriviaQA/MuSiQue EM, F1 alongside
	GraderChoice  = "choice-letter@1"    // MedQA/GPQA option letter
	GraderInteger = "aime-integer@1"     // AIME integer as a decimal
	GraderMath    = "math-equivalence@1" // MATH-Hard normalised string or fraction
	GraderCode    = "mbpp-plus-pass1@3"  // MBPP+ hidden tests in the sandbox, judged apart from the candidate with EvalPlus's checks
)

// Score is the grade of one output. Every reward is binary (METHOD.md §6.2).
type Score struct {
	Reward     float64  `json:"reward"`
	F1         *float64 `json:"f1,omitempty"` // QA only: HotpotQA token F1, stored, not the reward
	Prediction string   `json:"prediction"`   // what the grader read as the answer
	Grader     string   `json:"grader"`       // name@version of the grader
}

// Graders score outputs by the task's family. Code tasks need a sandbox. A code grade is kept
// by what it was computed from (the output and the task's hidden tests), so an output that an
// episode grades after every decision runs the sandbox once, and concurrent grades of the same
// output share one run. Safe for concurrent use.
type Graders struct {
	sandbox *sandbox.Sandbox
	codes   *lru.Cache[[sha256.Size]byte, Score]
	running singleflight.Group
	ran     atomic.Int64
}

// codeGradesKept is how many code grades the graders keep: a rollout's outputs in progress.
const codeGradesKept = 4096

// NewGraders returns the graders; sb runs the hidden tests of code tasks (nil: code tasks
// cannot be graded).
func NewGraders(sb *sandbox.Sandbox) *Graders {
	codes, err := lru.New[[sha256.Size]byte, Score](codeGradesKept)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &Graders{sandbox: sb, codes: codes}
}

// CodeRuns is how many code grades ran the sandbox (the others were kept ones).
func (g *Graders) CodeRuns() int64 { return g.ran.Load() }

func errorf(t Task, format string, args ...any) error {
	return fmt.Errorf("grade %s (%s): %s", t.ID, t.Family, fmt.Sprintf(format, args...))
}

// Check reports whether a task can be graded here: environment families (ALFWorld, WebShop,
// SWE-bench Verified) are scored by their own harness, which this program does not include.
func (g *Graders) Check(t Task) error {
	fam, ok := FamilyOf(t.Family)
	switch {
	case !ok:
		return errorf(t, "unknown family")
	case fam.Grading == KindEnvironment:
		return errorf(t, "%s tasks are scored by their own environment harness, which this program does not include", t.Family)
	case fam.Grading == KindCode && g.sandbox == nil:
		return errorf(t, "code tasks need the python sandbox")
	case fam.Grading != KindCode && len(t.Answers) == 0:
		return errorf(t, "no gold answer")
	}
	return nil
}

// Grade scores the output of a task.
func (g *Graders) Grade(ctx context.Context, t Task, output string) (Score, error) {
	if err := g.Check(t); err != nil {
		return Score{}, err
	}
	switch fam, _ := FamilyOf(t.Family); fam.Grading {
	case KindQA:
		return gradeQA(output, t.Answers), nil
	case KindChoice:
		return gradeChoice(output, t), nil
	case KindInteger:
		return gradeInteger(output, t)
	case KindMath:
		return gradeMath(output, t), nil
	default:
		return g.keptCode(ctx, t, output)
	}
}

// keptCode is the code grade of output, run once per distinct output and hidden tests; a grade
// that failed is not kept.
func (g *Graders) keptCode(ctx context.Context, t Task, output string) (Score, error) {
	key := codeKey(t, output)
	if s, ok := g.codes.Get(key); ok {
		return s, nil
	}
	v, err, _ := g.running.Do(string(key[:]), func() (any, error) {
		if s, ok := g.codes.Get(key); ok {
			return s, nil
		}
		g.ran.Add(1)
		s, err := g.gradeCode(ctx, t, output)
		if err == nil {
			g.codes.Add(key, s)
		}
		return s, err
	})
	return v.(Score), err
}

// codeKey identifies a code grade by everything it reads: the output, the task's hidden tests
// (the fields gradeCode reads, as the task file wrote them) and its ids (which pick an EvalPlus
// oracle), each length-prefixed so that no two different inputs share a key.
func codeKey(t Task, output string) [sha256.Size]byte {
	h := sha256.New()
	for _, part := range []string{output, string(t.Extra["plus_test"]), string(t.Extra["test_list"]), string(t.Extra["test_imports"]), t.SourceID, t.ID} {
		_ = binary.Write(h, binary.LittleEndian, uint64(len(part)))
		h.Write([]byte(part))
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}
