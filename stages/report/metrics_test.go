package report

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/schema"
)

func TestAUCHandComputed(t *testing.T) {
	// Positives 0.9, 0.5, 0.5; negatives 0.5, 0.1. Pairs (p > n counts 1, p = n counts ½):
	// 0.9: 1 + 1; 0.5: ½ + 1; 0.5: ½ + 1  →  5 of 6.
	scores := []float64{0.5, 0.9, 0.1, 0.5, 0.5}
	pos := []bool{true, true, false, false, true}
	if got := AUC(scores, pos); math.Abs(got-5.0/6) > 1e-15 {
		t.Errorf("AUC = %v, want 5/6", got)
	}
	// Perfect, inverted and all-tied rankings.
	for _, c := range []struct {
		scores []float64
		pos    []bool
		want   float64
	}{
		{[]float64{0.1, 0.2, 0.8, 0.9}, []bool{false, false, true, true}, 1},
		{[]float64{0.1, 0.2, 0.8, 0.9}, []bool{true, true, false, false}, 0},
		{[]float64{0.3, 0.3, 0.3}, []bool{true, false, false}, 0.5},
	} {
		if got := AUC(c.scores, c.pos); got != c.want {
			t.Errorf("AUC(%v, %v) = %v, want %v", c.scores, c.pos, got, c.want)
		}
	}
	if got := AUC([]float64{0.2, 0.4}, []bool{true, true}); !math.IsNaN(got) {
		t.Errorf("AUC with no negative = %v, want NaN", got)
	}
}

// The midrank form agrees with counting every (positive, negative) pair, on scores with many ties.
func TestAUCMatchesPairCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 2 + rng.IntN(30)
		scores, pos := make([]float64, n), make([]bool, n)
		for i := range n {
			scores[i], pos[i] = float64(rng.IntN(5))/4, rng.IntN(2) == 0
		}
		var wins, pairs float64
		for i := range n {
			for j := range n {
				if !pos[i] || pos[j] {
					continue
				}
				pairs++
				switch {
				case scores[i] > scores[j]:
					wins++
				case scores[i] == scores[j]:
					wins += 0.5
				}
			}
		}
		got := AUC(scores, pos)
		if pairs == 0 {
			if !math.IsNaN(got) {
				t.Fatalf("%v %v: AUC %v, want NaN", scores, pos, got)
			}
			continue
		}
		if math.Abs(got-wins/pairs) > 1e-12 {
			t.Fatalf("%v %v: AUC %v, pair count %v", scores, pos, got, wins/pairs)
		}
	}
}

func f64(v float64) *float64 { return &v }

func TestClassifyEdit(t *testing.T) {
	for _, c := range []struct {
		before, after *float64
		want          Outcome
		ok            bool
	}{
		{f64(0), f64(1), Better, true},
		{f64(0.4), f64(0.4), Same, true},
		{f64(1), f64(0.5), Worse, true},
		{nil, f64(1), 0, false},
		{f64(1), nil, 0, false},
	} {
		got, ok := ClassifyEdit(c.before, c.after)
		if got != c.want || ok != c.ok {
			t.Errorf("ClassifyEdit(%v, %v) = %v, %v; want %v, %v", c.before, c.after, got, ok, c.want, c.ok)
		}
	}
}

func TestEditOutcomesHandComputed(t *testing.T) {
	// Episode a (θ): t0 ADD_AGENT null; t1 SET_OUTPUT 0 (no before: skipped); t2 RERUN_AGENT 1
	// (better); t3 ADD_EDGE 1 (same); t4 DROP_AGENT 0 (worse); t5 STOP 0 (not an edit).
	// Episode b (ρ): t0 SET_OUTPUT 1 (t = 0: no before); t1 RERUN_AGENT 0.5 (worse);
	// t3 RERUN_AGENT 1 (t2 missing: no before). Episode c is a paired arm: left out.
	// Rows come shuffled: the order of the input must not matter.
	decs := []EditDecision{
		{"a", 3, "ADD_EDGE", f64(1)}, {"b", 1, "RERUN_AGENT", f64(0.5)}, {"a", 0, "ADD_AGENT", nil},
		{"a", 5, "STOP", f64(0)}, {"a", 1, "SET_OUTPUT", f64(0)}, {"c", 0, "SET_OUTPUT", f64(0)},
		{"a", 4, "DROP_AGENT", f64(0)}, {"b", 0, "SET_OUTPUT", f64(1)}, {"a", 2, "RERUN_AGENT", f64(1)},
		{"c", 1, "RERUN_AGENT", f64(1)}, {"b", 3, "RERUN_AGENT", f64(1)},
	}
	src := map[string]string{"a": SourceTheta, "b": SourceRho, "c": "paired_treatment"}
	got := map[[2]string][3]int{}
	for _, c := range EditOutcomes(decs, src) {
		if c.Total() > 0 {
			got[[2]string{c.Source, c.Kind}] = c.N
		}
	}
	want := map[[2]string][3]int{
		{SourceTheta, "RERUN_AGENT"}: {1, 0, 0},
		{SourceTheta, "ADD_EDGE"}:    {0, 1, 0},
		{SourceTheta, "DROP_AGENT"}:  {0, 0, 1},
		{SourceRho, "RERUN_AGENT"}:   {0, 0, 1},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%v: %v, want %v", k, got[k], w)
		}
	}
	if n := len(EditOutcomes(nil, nil)); n != 2*len(EditKinds) {
		t.Errorf("empty input gives %d entries, want one per source and kind (%d)", n, 2*len(EditKinds))
	}
}

func ep(step int, id, source string, reward float64, healthy bool) StepEpisode {
	return StepEpisode{Step: step, EpisodeRow: schema.EpisodeRow{EpisodeID: id, Source: source, Reward: reward, Healthy: healthy}}
}

func TestRewards(t *testing.T) {
	eps := []StepEpisode{
		ep(2, "2/a", SourceTheta, 1, true), ep(1, "1/a", SourceTheta, 1, true), ep(1, "1/b", SourceTheta, 0, true),
		ep(1, "1/c", SourceRho, 0.5, true), ep(1, "1/d", SourceRho, 1, false), ep(1, "1/e", "paired_control", 1, true),
		ep(2, "2/b", SourceRho, 0, false),
	}
	got := Rewards(eps)
	if len(got) != 2 || got[0].Step != 1 || got[1].Step != 2 {
		t.Fatalf("steps: %+v", got)
	}
	s1 := got[0]
	if s1.Theta != 0.5 || s1.NTheta != 2 || s1.Rho != 0.5 || s1.NRho != 1 || s1.Episodes != 5 || s1.NUnhealthy != 1 || s1.Unhealthy != 0.2 {
		t.Errorf("step 1: %+v", s1)
	}
	if s2 := got[1]; s2.Theta != 1 || !math.IsNaN(s2.Rho) || s2.Unhealthy != 0.5 {
		t.Errorf("step 2 (no healthy ρ episode): %+v", s2)
	}
}

func anchor(step int, id string, pHat, family float64, loo bool) StepAnchor {
	return StepAnchor{Step: step, AnchorRow: schema.AnchorRow{EpisodeID: id, PHat: pHat, MCategory: family, LOO: loo}}
}

func TestAnchorAUC(t *testing.T) {
	// Step 1 never counts; at step 2, p̂ ranks the two reference episodes right (AUC 1) and the
	// family mean ties them (½); the θ episode and the one not left out are ignored. Step 3 adds
	// a success p̂ ranks below the step-2 failure: p̂ wins 3 of 4 (positives .9, .2 against
	// negatives .3, .1 → .9 beats both, .2 beats .1), family ties all (½). Reward 0.5 is a
	// success at threshold 0.5.
	eps := []StepEpisode{
		ep(1, "1/r", SourceRho, 1, true), ep(2, "2/r0", SourceRho, 1, true), ep(2, "2/r1", SourceRho, 0, true),
		ep(2, "2/t", SourceTheta, 1, true), ep(3, "3/r0", SourceRho, 0.5, true), ep(3, "3/r1", SourceRho, 0, true),
		ep(3, "3/x", SourceRho, 1, false),
	}
	anchors := []StepAnchor{
		anchor(3, "3/r0", 0.2, 0.5, true), anchor(3, "3/r1", 0.1, 0.5, true), anchor(3, "3/x", 0.0, 0.5, false),
		anchor(1, "1/r", 0.0, 0.5, true), anchor(2, "2/r0", 0.9, 0.5, true), anchor(2, "2/r1", 0.3, 0.5, true),
		anchor(2, "2/t", 0.0, 0.5, false),
	}
	got := AnchorAUC(anchors, eps, 0.5)
	want := []AUCPoint{{Step: 2, Positives: 1, Negatives: 1, PHat: 1, Family: 0.5}, {Step: 3, Positives: 2, Negatives: 2, PHat: 0.75, Family: 0.5}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestSkillTimelineCarriesAlpha(t *testing.T) {
	id := "evosteer-0123"
	w, l, t0 := int64(12), int64(0), int64(1)
	segs := []skills.Segment{
		{Step: 2, Stage: layout.Author, Rows: []schema.LedgerRow{{Event: skills.EventProposal, SkillID: &id}, {Event: skills.EventProposal}}},
		{Step: 3, Stage: layout.Validate, Rows: []schema.LedgerRow{
			{Event: skills.EventRegister, AlphaSpent: 0}, {Event: skills.EventLook, AlphaSpent: 0.0125},
			{Event: skills.EventPromote, SkillID: &id, W: &w, L: &l, T0: &t0, AlphaSpent: 0.0125}}},
		{Step: 5, Stage: layout.Validate, Rows: []schema.LedgerRow{{Event: skills.EventLook, AlphaSpent: 0.02}, {Event: skills.EventDefer, AlphaSpent: 0.02}}},
	}
	tl := SkillTimeline(segs, []int{1, 2, 3, 4, 5})
	alpha := []float64{0, 0, 0.0125, 0.0125, 0.02}
	count := func(s SkillStep, event string) int { return s.Events[slices.Index(SkillEvents, event)] }
	for i, s := range tl {
		if s.Step != i+1 || s.AlphaSpent != alpha[i] {
			t.Errorf("step %d: %+v, want alpha %v", i+1, s, alpha[i])
		}
	}
	if count(tl[1], skills.EventProposal) != 2 || count(tl[2], skills.EventPromote) != 1 || count(tl[4], skills.EventDefer) != 1 || count(tl[3], skills.EventDefer) != 0 {
		t.Errorf("event counts: %+v", tl)
	}
	lib := []schema.SkillRow{{SkillID: id, Name: "check units"}}
	d := SkillDecisions(segs, lib)
	if len(d) != 1 || d[0].Step != 3 || d[0].Name != "check units" || *d[0].W != 12 {
		t.Errorf("decisions: %+v", d)
	}
}

// TestRollingGap: the rolling means and the mean difference with its standard error, by hand
// on four steps and a window of three; a step without θ episodes is left out of the difference.
func TestRollingGap(t *testing.T) {
	rs := []StepRewards{{Step: 1, Theta: 0.5, Rho: 0.3}, {Step: 2, Theta: 0.7, Rho: 0.4}, {Step: 3, Theta: math.NaN(), Rho: 0.5}, {Step: 4, Theta: 0.9, Rho: 0.5}}
	gs := RollingGap(rs, 3)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 || math.IsNaN(a) && math.IsNaN(b) }
	want := []GapPoint{
		{Step: 1, Theta: 0.5, Rho: 0.3, Gap: 0.2, SE: math.NaN(), Steps: 1},
		{Step: 2, Theta: 0.6, Rho: 0.35, Gap: 0.25, SE: math.Sqrt(0.005) / math.Sqrt(2), Steps: 2},
		{Step: 3, Theta: 0.6, Rho: 0.4, Gap: 0.25, SE: math.Sqrt(0.005) / math.Sqrt(2), Steps: 2},
		{Step: 4, Theta: 0.8, Rho: 1.4 / 3, Gap: 0.35, SE: math.Sqrt(0.005) / math.Sqrt(2), Steps: 2},
	}
	for i, w := range want {
		g := gs[i]
		if g.Step != w.Step || g.Steps != w.Steps || !near(g.Theta, w.Theta) || !near(g.Rho, w.Rho) || !near(g.Gap, w.Gap) || !near(g.SE, w.SE) {
			t.Errorf("step %d: %+v, want %+v", w.Step, g, w)
		}
	}
}
