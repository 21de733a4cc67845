package validate

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/internal/stats"
	"github.com/evosteer/evosteer-go/schema"
)

// Summary describes what validate did at one step.
type Summary struct {
	Step       int
	Ablated    bool               // skill-evolution ablated: nothing was validated
	Events     []schema.LedgerRow // the step's ledger segment
	Library    []skills.Skill     // after the step
	AlphaSpent float64            // over the whole run so far
	Alpha      float64
}

// Summary reads the step's outputs back (Summarize).
func (Stage) Summary(ctx context.Context, r *rundir.Folder, step int) (rundir.Summary, error) {
	return rundir.AsSummary(Summarize(ctx, r, step))
}

// Summarize reads the stage's outputs back: the step's segment, and the ledger state with the
// library the author of step continues from (skills.LoadLedger, which checks that they agree),
// so it reads three files whatever the step.
func Summarize(_ context.Context, r *rundir.Folder, step int) (*Summary, error) {
	s := &Summary{Step: step, Ablated: !skills.Enabled(r.Config), Alpha: r.Config.Admission.Alpha}
	if s.Ablated {
		return s, nil
	}
	g, err := skills.LoadLedger(r, step, layout.Author)
	if err != nil {
		return nil, err
	}
	s.Events, err = schema.ReadFile[schema.LedgerRow](schema.Ledger, filepath.Join(r.StageDir(step, layout.Validate), layout.LedgerFile))
	if err != nil {
		return nil, err
	}
	s.Library, s.AlphaSpent = g.Library().Skills(), g.AlphaSpent()
	return s, nil
}

// Write prints the summary: pairs, registrations, looks and their outcomes (each promotion and
// retirement with its counts and p-values), alpha spent and the library's statuses.
func (s *Summary) Write(w io.Writer) error {
	var b strings.Builder
	if s.Ablated {
		fmt.Fprintf(&b, "skill-evolution is ablated: no skills, empty ledger segment and library\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	n := map[string]int{}
	var wins, losses, ties int
	for _, e := range s.Events {
		n[e.Event]++
		if e.Event == skills.EventPair {
			switch *e.Outcome {
			case stats.OutcomeWin:
				wins++
			case stats.OutcomeLoss:
				losses++
			default:
				ties++
			}
		}
	}
	fmt.Fprintf(&b, "pairs recorded: %d (W %d, L %d, T0 %d); comparisons registered %d, superseded %d\n",
		n[skills.EventPair], wins, losses, ties, n[skills.EventRegister], n[skills.EventSupersede])
	fmt.Fprintf(&b, "looks: %d; promote %d, retire %d, retain %d, defer %d, defer_capacity %d\n",
		n[skills.EventLook], n[skills.EventPromote], n[skills.EventRetire], n[skills.EventRetain], n[skills.EventDefer], n[skills.EventDeferCapacity])
	for _, e := range s.Events {
		switch e.Event {
		case skills.EventPromote, skills.EventRetire, skills.EventRetain:
			fmt.Fprintf(&b, "  %-7s %s (comparison j=%d", e.Event, *e.SkillID, *e.J)
			if e.Look != nil {
				fmt.Fprintf(&b, ", look %d): W=%d L=%d T0=%d p+=%.3g p-=%.3g level=%.3g\n", *e.Look, *e.W, *e.L, *e.T0, *e.PPlus, *e.PMinus, *e.Level)
			} else {
				fmt.Fprintf(&b, "): W=%d L=%d T0=%d, fixed-count admission\n", *e.W, *e.L, *e.T0)
			}
		}
	}
	fmt.Fprintf(&b, "alpha spent so far: %.6g of %g\n", s.AlphaSpent, s.Alpha)
	b.WriteString(skills.Summary(s.Library) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}
