package skills

import (
	"fmt"
	"testing"

	"github.com/evosteer/evosteer-go/internal/stats"
)

// The admission ledger's error rates with known truths, fed with simulated pair outcomes:
// six families, five pairs per family and step, every family always holding a candidate (the
// author proposes whenever a family can take one), paper limits (α = 0.05, looks every step).

var statFamilies = []string{"a", "b", "c", "d", "e", "f"}

// admissionRun plays one run of steps steps in which the candidates of families a, b and c
// are helpful (P(win) 0.35, P(loss) 0.05) and those of d, e and f null (0.2, 0.2: 60% ties),
// and returns the number of null candidates proposed and of false rejections: any promotion
// or retirement of a null skill, any retirement of a helpful one. The helpful families keep
// promoting, so new candidates and changed menus register fresh comparisons throughout.
func admissionRun(t testing.TB, seed uint64, steps int) (nullCandidates, falseRejections int) {
	b := newBench(t, paperLimits, false, statFamilies, 5, seed)
	helpful, null := effect{0.35, 0.05}, effect{0.2, 0.2}
	for step := 0; step <= steps; step++ {
		if step > 0 {
			for _, r := range b.validate(step, b.pairs(step)) {
				isNull := b.effects[*r.SkillID] == null
				if (r.Event == EventPromote && isNull) || r.Event == EventRetire {
					falseRejections++
				}
			}
		}
		lib := b.g.Library()
		for i, f := range statFamilies {
			if !lib.CanPropose(f) {
				continue
			}
			law := helpful
			if i >= 3 {
				law, nullCandidates = null, nullCandidates+1
			}
			b.propose(step, f, fmt.Sprintf("%s-%d-%d", f, seed, step), law)
		}
	}
	return nullCandidates, falseRejections
}

// The share of runs with any false rejection is the family-wise error, which Prop. C.6 bounds
// by α. The test requires the 95% upper Clopper–Pearson bound of it to be ≤ α.
func TestNullFamilyWiseError(t *testing.T) {
	runs, steps := 1000, 60
	if testing.Short() {
		runs = 300
	}
	bad, candidates := 0, 0
	for run := range runs {
		c, f := admissionRun(t, uint64(run), steps)
		candidates += c
		if f > 0 {
			bad++
		}
	}
	_, hi := stats.ClopperPearson(bad, runs, 0.95)
	fwer := float64(bad) / float64(runs)
	t.Logf("%d runs x %d steps, %d null candidates; runs with a false promotion or retirement: %d = %.4f (95%% upper bound %.4f; alpha %.2f)",
		runs, steps, candidates, bad, fwer, hi, paperLimits.Alpha)
	if !testing.Short() && candidates < 1000 {
		t.Errorf("only %d null candidates", candidates)
	}
	if fwer > paperLimits.Alpha || (!testing.Short() && hi > paperLimits.Alpha) {
		t.Errorf("family-wise error %.4f (upper bound %.4f) above alpha %.2f", fwer, hi, paperLimits.Alpha)
	}
}

// With a strong true effect (P(win) = 0.35, P(loss) = 0.05: Δ = 0.3), most candidates are
// promoted within 30 steps (150 pairs), and as many harmful ones (mirror law) retired.
func TestStrongEffectPower(t *testing.T) {
	runs, steps := 300, 30
	if testing.Short() {
		runs = 60
	}
	for _, c := range []struct {
		name string
		law  effect
	}{{"helpful", effect{0.35, 0.05}}, {"harmful", effect{0.05, 0.35}}} {
		total, decided, wrong := 0, 0, 0
		for run := range runs {
			// Only the first candidate of each family is scored: the ones proposed later have
			// less than the horizon.
			b := newBench(t, paperLimits, false, statFamilies, 5, uint64(1000+run))
			var first []string
			for _, f := range statFamilies {
				first = append(first, b.propose(0, f, fmt.Sprintf("%s-%d", f, run), c.law).ID)
			}
			for step := 1; step <= steps; step++ {
				b.validate(step, b.pairs(step))
			}
			lib := b.g.Library()
			for _, id := range first {
				s, _ := lib.Get(id)
				total++
				switch {
				case (c.name == "helpful" && s.Status == Validated) || (c.name == "harmful" && s.Status == Retired):
					decided++
				case s.Status != Candidate:
					wrong++
				}
			}
		}
		lo, _ := stats.ClopperPearson(decided, total, 0.95)
		power := float64(decided) / float64(total)
		t.Logf("%s (win %.2f, loss %.2f): %d of %d candidates decided correctly within %d steps = %.3f (95%% lower bound %.3f); wrong direction %d",
			c.name, c.law.win, c.law.loss, decided, total, steps, power, lo, wrong)
		if power < 0.8 || wrong > 0 {
			t.Errorf("%s: power %.3f below 0.8 or %d wrong-direction decisions", c.name, power, wrong)
		}
	}
}
