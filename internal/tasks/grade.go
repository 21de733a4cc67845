package tasks

import (
	"context"
	"fmt"

	"github.com/evosteer/evosteer-go/internal/sandbox"
)

// Grader versions. A score records the grader that produced it, so scores of different
// versions are never mixed silently; bump a version whenever its rule changes.
const (
	GraderQA      = "qa-exact-match@1"   // HotpotQA/NQ/TriviaQA/MuSiQue EM, F1 alongside
	GraderChoice  = "choice-letter@1"    // MedQA/GPQA option letter
	GraderInteger = "aime-integer@1"     // AIME integer as a decimal
	GraderMath    = "math-equivalence@1" // MATH-Hard normalised string or fraction
	GraderCode    = "mbpp-plus-pass1@2"  // MBPP+ hidden tests in the sandbox, judged apart from the candidate
)

// Score is the grade of one output. Every reward is binary (METHOD.md §6.2).
type Score struct {
	Reward     float64  `json:"reward"`
	F1         *float64 `json:"f1,omitempty"` // QA only: HotpotQA token F1, stored, not the reward
	Prediction string   `json:"prediction"`   // what the grader read as the answer
	Grader     string   `json:"grader"`       // name@version of the grader
}

// Graders score outputs by the task's family. Code tasks need a sandbox.
type Graders struct {
	sandbox *sandbox.Sandbox
}

// NewGraders returns the graders; sb runs the hidden tests of code tasks (nil: code tasks
// cannot be graded).
func NewGraders(sb *sandbox.Sandbox) *Graders { return &Graders{sandbox: sb} }

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
		return g.gradeCode(ctx, t, output)
	}
}
