package paper

import (
	"math"
	"testing"
)

// TestPaperAveragesMatchThePaper: the transcribed Table 2 rows give the block averages the paper
// states (Avg IID / Avg OOD of its Table 1, to its one decimal), and Score reads a row's column.
func TestPaperAveragesMatchThePaper(t *testing.T) {
	for _, c := range []struct {
		key      string
		iid, ood float64
	}{
		{"direct", 54.5, 47.1}, {"single_agent", 71.4, 66.8}, {"fixed_template", 74.8, 67.2}, {"plan_execute", 72.8, 67.4},
		{"searched_workflow", 77.6, 70.5}, {"reference", 75.5, 71.2}, {Full, 87.8, 82.4},
	} {
		iid, ok1 := Average(c.key, "iid")
		ood, ok2 := Average(c.key, "ood")
		if !ok1 || !ok2 || math.Abs(iid-c.iid) > 0.05 || math.Abs(ood-c.ood) > 0.05 {
			t.Errorf("%s: paper averages %.3f / %.3f, the paper states %.1f / %.1f", c.key, iid, ood, c.iid, c.ood)
		}
	}
	if _, ok := Average("ppo", "iid"); ok {
		t.Error("an objective of Figure 4a has a Table 2 row")
	}
	if v, ok := Score("reference", "triviaqa"); !ok || v != 90.47 {
		t.Errorf("ρ on TriviaQA: %v %v, want 90.47", v, ok)
	}
	if _, ok := Score(Full, "gsm8k"); ok {
		t.Error("a benchmark outside Table 2 has a score")
	}
}
