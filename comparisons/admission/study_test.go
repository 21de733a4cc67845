package admission

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/config"
)

// TestTinyStudy runs a small study through the project's ledger, schedule and windows and
// checks real properties, under every rule, attainable spending included: under the null the
// family-wise false promotion share is consistent with at most α (its 95% Clopper–Pearson
// lower bound is ≤ α), no run spends more than α, power grows with p, and the same seed gives
// the same numbers; the paired table pairs every attainable rule with its released one.
func TestTinyStudy(t *testing.T) {
	base, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	st := Study{Base: base, Runs: 40, Seed: 7, FixedN: 256, Workers: 4}
	settings := []Setting{{P: 0.5, Tie: 0.2, Candidates: 6, Steps: 40}, {P: 0.7, Tie: 0.2, Candidates: 6, Steps: 40}, {P: 0.9, Tie: 0.2, Candidates: 6, Steps: 40}}
	rules := []Rule{Released, Exhausted, PaperRun, Attainable, PaperAttainable}
	res, err := st.Run(settings, rules)
	if err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		Table(os.Stdout, res)
	}
	at := func(si, ri int) Result { return res[si*len(rules)+ri] }
	for _, r := range res {
		if r.OverSpent != 0 || r.AlphaMax > r.Alpha {
			t.Errorf("%v %s: alpha spent up to %g > %g", r.Setting, r.Rule.Name, r.AlphaMax, r.Alpha)
		}
		if r.First != r.Runs*r.Setting.Candidates {
			t.Errorf("%v %s: %d first candidates, want %d", r.Setting, r.Rule.Name, r.First, r.Runs*r.Setting.Candidates)
		}
	}
	for ri := range rules {
		null, mid, strong := at(0, ri), at(1, ri), at(2, ri)
		if null.FamilyWiseLower() > null.Alpha {
			t.Errorf("%s: null family-wise false promotion %d/%d, lower bound %g > α", null.Rule.Name, null.RunsPromoting, null.Runs, null.FamilyWiseLower())
		}
		if !(null.Power() <= mid.Power() && mid.Power() < strong.Power()) || strong.Power() < 0.5 {
			t.Errorf("%s: power %g, %g, %g does not grow with p", null.Rule.Name, null.Power(), mid.Power(), strong.Power())
		}
	}
	for si := range settings { // 40 steps exhaust no comparison: the rule changes nothing
		if a, b := at(si, 0), at(si, 1); a.FirstPromoted != b.FirstPromoted || a.Promotions != b.Promotions || a.AlphaSum != b.AlphaSum {
			t.Errorf("%v: undecided_when_exhausted changed a run that exhausts nothing", a.Setting)
		}
	}
	var paired strings.Builder
	if err := PairedTable(&paired, res); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(paired.String(), "\n"); n != 2+len(settings)*len(Contrasts) {
		t.Errorf("paired table: %d lines\n%s", n, paired.String())
	}
	if testing.Verbose() {
		fmt.Print(paired.String())
	}
	again, err := Study{Base: base, Runs: 40, Seed: 7, FixedN: 256, Workers: 1}.Run(settings[1:2], rules[:1])
	if err != nil {
		t.Fatal(err)
	}
	if a, b := again[0], at(1, 0); a.FirstPromoted != b.FirstPromoted || a.AlphaSum != b.AlphaSum || a.MedianPairs() != b.MedianPairs() {
		t.Errorf("the same seed with another worker count gave other numbers: %+v vs %+v", a, b)
	}
	t.Logf("tiny study: %v", time.Since(start))
}
