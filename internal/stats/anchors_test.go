package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Remark B.1: two same-task reference records with rewards 1 and 0, m_0 = 1/2, κ_q = 0.5:
// p̂^(−x1) = 1/6 for the success and p̂^(−x2) = 5/6 for the failure.
func TestAnchorsRemarkB1(t *testing.T) {
	pool := []Episode{
		ep("x1", "q", "f", sourceNatural, 1),
		ep("x2", "q", "f", sourceNatural, 0),
	}
	// m_g = 1/2; m_c = (1 + 2·1/2)/(2 + 2) = 1/2; m_0 = m_c = 1/2 exactly.
	got := Anchors(paperAnchor, pool, pool, nil)
	if len(got) != 2 {
		t.Fatalf("got %d anchors", len(got))
	}
	a := math.Exp(paperAnchor.Beta) - 1
	for i, want := range []struct {
		id   string
		pHat float64
	}{{"x1", 1.0 / 6}, {"x2", 5.0 / 6}} {
		g := got[i]
		if g.EpisodeID != want.id || g.TaskID != "q" || g.Family != "f" || !g.LOO {
			t.Errorf("row %d = %+v", i, g)
		}
		if g.MGlobal != 0.5 || g.MCategory != 0.5 || g.MPrior != 0.5 {
			t.Errorf("%s: m levels %v %v %v, want 1/2", want.id, g.MGlobal, g.MCategory, g.MPrior)
		}
		near(t, want.id+" p_hat", g.PHat, want.pHat, tight)
		near(t, want.id+" anchor", g.Anchor, math.Log(1+a*want.pHat), tight)
		if g.Anchor < 0 || g.Anchor > paperAnchor.Beta {
			t.Errorf("%s anchor %v outside [0, β]", want.id, g.Anchor)
		}
	}
	near(t, "success anchor", got[0].Anchor, math.Log(1+a/6), tight)
	near(t, "failure anchor", got[1].Anchor, math.Log(1+5*a/6), tight)
	if got[0].Anchor == got[1].Anchor {
		t.Error("the common root should receive two distinct values")
	}
}

func TestAnchorsColdStart(t *testing.T) {
	scored := []Episode{ep("c", "q", "f", sourceCurrent, 1), ep("n", "q", "f", sourceNatural, 1)}
	got := Anchors(paperAnchor, nil, scored, nil)
	a := math.Exp(2) - 1
	for _, g := range got {
		if g.MGlobal != 0.5 || g.MCategory != 0.5 || g.MPrior != 0.5 || g.PHat != 0.5 || g.LOO {
			t.Errorf("cold start %+v, want every level 1/2 and no LOO", g)
		}
		near(t, "anchor", g.Anchor, math.Log(1+a/2), tight)
	}
	// ColdStart is a parameter, not a constant.
	p := paperAnchor
	p.ColdStart = 0.25
	if g := Anchors(p, nil, scored[:1], nil)[0]; g.MGlobal != 0.25 || g.PHat != 0.25 {
		t.Errorf("cold start 0.25: %+v", g)
	}
}

// A full hand computation with distinct numbers at every level, so that swapped strengths or
// levels show.
func TestAnchorsHandComputed(t *testing.T) {
	pool := []Episode{
		ep("a1", "qa", "F", sourceNatural, 1),
		ep("a2", "qa", "F", sourceNatural, 1),
		ep("a3", "qa", "F", sourceNatural, 0),
		ep("b1", "qb", "F", sourceNatural, 0),
		ep("g1", "qg", "G", sourceNatural, 1),
		ep("g2", "qg", "G", sourceNatural, 0.25),
		ep("cur", "qa", "F", sourceCurrent, 1),  // no statistics
		ep("pt", "qa", "F", sourceTreatment, 1), // no statistics
		ep("pc", "qa", "F", sourceControl, 1),   // no statistics
		{ID: "sick", TaskID: "qa", Family: "F", Source: sourceNatural, Healthy: false, Reward: 1},
	}
	p := AnchorParams{Beta: 1.5, KappaGlobal: 3, KappaCategory: 5, KappaTask: 0.7, PriorCountCap: 10, ColdStart: 0.5}
	priors := map[string]TaskPrior{"qa": {Rate: rate(0.9), Count: 6}}
	scored := []Episode{pool[0], pool[6], pool[3], pool[9]}
	got := Anchors(p, pool, scored, priors)

	mg := 3.25 / 6
	mcF := (2 + 3*mg) / (4 + 3)
	m0a := (6*0.9 + 5*mcF) / (6 + 5)
	aB := math.Exp(1.5) - 1
	type want struct {
		id     string
		mc, m0 float64
		pHat   float64
		loo    bool
	}
	wants := []want{
		{"a1", mcF, m0a, ((2.0 - 1) + 0.7*m0a) / ((3.0 - 1) + 0.7), true},
		{"cur", mcF, m0a, (2.0 + 0.7*m0a) / (3.0 + 0.7), false},
		{"b1", mcF, mcF, ((0.0 - 0) + 0.7*mcF) / ((1.0 - 1) + 0.7), true},
		{"sick", mcF, m0a, (2.0 + 0.7*m0a) / (3.0 + 0.7), false},
	}
	for i, w := range wants {
		g := got[i]
		if g.EpisodeID != w.id || g.LOO != w.loo {
			t.Errorf("row %d: %+v, want id %s loo %v", i, g, w.id, w.loo)
		}
		near(t, w.id+" m_global", g.MGlobal, mg, tight)
		near(t, w.id+" m_category", g.MCategory, w.mc, tight)
		near(t, w.id+" m_prior", g.MPrior, w.m0, tight)
		near(t, w.id+" p_hat", g.PHat, w.pHat, tight)
		near(t, w.id+" anchor", g.Anchor, math.Log(1+aB*w.pHat), tight)
	}
}

func TestAnchorsPriorCap(t *testing.T) {
	pool := []Episode{ep("n1", "q", "f", sourceNatural, 0), ep("n2", "r", "f", sourceNatural, 1)}
	scored := []Episode{ep("c", "q", "f", sourceCurrent, 0)}
	at := func(count float64) Anchor {
		return Anchors(paperAnchor, pool, scored, map[string]TaskPrior{"q": {Rate: rate(0.9), Count: count}})[0]
	}
	capped, at20, at10 := at(50), at(20), at(10)
	if capped.MPrior != at20.MPrior || capped.PHat != at20.PHat || capped.Anchor != at20.Anchor {
		t.Errorf("count 50 should act as 20: %+v vs %+v", capped, at20)
	}
	mc := at20.MCategory // (1 + 2·1/2)/(2 + 2) = 1/2
	near(t, "m_category", mc, 0.5, tight)
	near(t, "m_prior(20)", at20.MPrior, (20*0.9+4*mc)/(20+4), tight)
	near(t, "m_prior(10)", at10.MPrior, (10*0.9+4*mc)/(10+4), tight)
	if at10.MPrior == at20.MPrior {
		t.Error("a count below the cap must not be capped")
	}
	near(t, "p_hat(20)", at20.PHat, (0+0.5*at20.MPrior)/(1+0.5), tight)
	// The cap is the parameter.
	p := paperAnchor
	p.PriorCountCap = 5
	g := Anchors(p, pool, scored, map[string]TaskPrior{"q": {Rate: rate(0.9), Count: 50}})[0]
	near(t, "m_prior(cap 5)", g.MPrior, (5*0.9+4*mc)/(5+4), tight)
}

func TestAnchorsPriorRateWithoutCount(t *testing.T) {
	pool := []Episode{ep("n1", "q", "f", sourceNatural, 1), ep("n2", "r", "g", sourceNatural, 0), ep("n3", "r", "g", sourceNatural, 0)}
	scored := []Episode{ep("c", "q", "f", sourceCurrent, 0)}
	none := Anchors(paperAnchor, pool, scored, nil)[0]
	for name, pr := range map[string]TaskPrior{
		"rate, no count":  {Rate: rate(0.9)},
		"count, no rate":  {Count: 15},
		"zero everything": {},
	} {
		g := Anchors(paperAnchor, pool, scored, map[string]TaskPrior{"q": pr})[0]
		if g.MPrior != g.MCategory || g != none {
			t.Errorf("%s: %+v, want m_prior = m_category and the no-prior row %+v", name, g, none)
		}
	}
	// A prior on another task does not apply.
	if g := Anchors(paperAnchor, pool, scored, map[string]TaskPrior{"r": {Rate: rate(0.9), Count: 20}})[0]; g != none {
		t.Errorf("other task's prior applied: %+v", g)
	}
}

func TestAnchorsClip(t *testing.T) {
	scored := []Episode{ep("c", "q", "f", sourceCurrent, 0)}
	hi := Anchors(paperAnchor, nil, scored, map[string]TaskPrior{"q": {Rate: rate(3), Count: 20}})[0]
	if hi.MPrior <= 1 || hi.PHat != 1 || hi.Anchor != math.Log(1+(math.Exp(2)-1)*1) {
		t.Errorf("high: %+v, want m_prior > 1 unclipped, p_hat 1, anchor β", hi)
	}
	near(t, "high anchor", hi.Anchor, 2, tight)
	lo := Anchors(paperAnchor, nil, scored, map[string]TaskPrior{"q": {Rate: rate(-3), Count: 20}})[0]
	if lo.MPrior >= 0 || lo.PHat != 0 || lo.Anchor != 0 {
		t.Errorf("low: %+v, want m_prior < 0 unclipped, p_hat 0, anchor 0", lo)
	}
	// Out-of-range rewards clip too.
	pool := []Episode{ep("n", "q", "f", sourceNatural, 5)}
	if g := Anchors(paperAnchor, pool, []Episode{ep("c", "q", "f", sourceCurrent, 0)}, nil)[0]; g.PHat != 1 {
		t.Errorf("reward 5: p_hat %v, want 1", g.PHat)
	}
}

func TestAnchorsLOOOnlyForPoolMembers(t *testing.T) {
	nat := []Episode{ep("n1", "q", "f", sourceNatural, 1), ep("n2", "q", "f", sourceNatural, 0), ep("n3", "q", "f", sourceNatural, 1)}
	cur := ep("c", "q", "f", sourceCurrent, 0)
	pt := ep("pt", "q", "f", sourceTreatment, 0)
	pc := ep("pc", "q", "f", sourceControl, 0)
	pool := append(append([]Episode{}, nat...), cur, pt, pc)
	got := Anchors(paperAnchor, pool, []Episode{cur, pt, pc, nat[0], nat[1]}, nil)
	full := got[0]
	// Paired and current rewards (all 0) do not enter: m_g = 2/3.
	near(t, "m_global", full.MGlobal, 2.0/3, tight)
	for _, g := range got[:3] {
		if g.LOO {
			t.Errorf("%s: LOO for a non-pool episode", g.EpisodeID)
		}
		near(t, g.EpisodeID+" p_hat", g.PHat, (2+0.5*full.MPrior)/(3+0.5), tight)
		if g.PHat != full.PHat {
			t.Errorf("%s p_hat %v differs from current's %v", g.EpisodeID, g.PHat, full.PHat)
		}
	}
	if !got[3].LOO || !got[4].LOO {
		t.Error("natural pool members need LOO")
	}
	near(t, "n1 p_hat", got[3].PHat, (1+0.5*full.MPrior)/(2+0.5), tight)
	near(t, "n2 p_hat", got[4].PHat, (2+0.5*full.MPrior)/(2+0.5), tight)
	// Global and category include the scored episode.
	if got[3].MGlobal != full.MGlobal || got[3].MCategory != full.MCategory {
		t.Error("LOO must apply at the task level only")
	}
	// A natural episode scored but not in pool: no LOO.
	if g := Anchors(paperAnchor, nat[1:], nat[:1], nil)[0]; g.LOO {
		t.Error("LOO for a natural episode absent from pool")
	}
}

func TestAnchorsUnhealthyExcluded(t *testing.T) {
	sick := ep("s", "q", "f", sourceNatural, 1)
	sick.Healthy = false
	pool := []Episode{ep("n", "q", "f", sourceNatural, 0), sick}
	got := Anchors(paperAnchor, pool, []Episode{sick}, nil)[0]
	if got.LOO || got.MGlobal != 0 {
		t.Errorf("%+v: unhealthy natural must be out of the statistics and not LOO", got)
	}
	near(t, "p_hat", got.PHat, (0+0.5*got.MPrior)/(1+0.5), tight)
}

func TestAnchorsFamilyWithoutDataFallsBackToGlobal(t *testing.T) {
	pool := []Episode{ep("n1", "q", "f", sourceNatural, 1), ep("n2", "q", "f", sourceNatural, 1), ep("n3", "r", "g", sourceNatural, 0)}
	g := Anchors(paperAnchor, pool, []Episode{ep("c", "new", "unseen", sourceCurrent, 0)}, nil)[0]
	near(t, "m_global", g.MGlobal, 2.0/3, tight)
	near(t, "m_category", g.MCategory, g.MGlobal, tight)
	near(t, "m_prior", g.MPrior, g.MGlobal, tight)
	near(t, "p_hat (task without data)", g.PHat, g.MGlobal, tight)
}

func TestAnchorsOrderAndEmpty(t *testing.T) {
	if got := Anchors(paperAnchor, nil, nil, nil); len(got) != 0 {
		t.Errorf("no scored episodes: %v", got)
	}
	scored := []Episode{ep("z", "q", "f", sourceCurrent, 0), ep("a", "q", "f", sourceCurrent, 0), ep("m", "q", "f", sourceCurrent, 0)}
	got := Anchors(paperAnchor, nil, scored, nil)
	for i, e := range scored {
		if got[i].EpisodeID != e.ID {
			t.Fatalf("order: row %d is %s, want %s", i, got[i].EpisodeID, e.ID)
		}
	}
}

// Lemma B.2: every level lies in [0,1] and 0 ≤ u ≤ β for valid inputs.
func TestAnchorsLemmaB3Range(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sources := []string{sourceNatural, sourceNatural, sourceCurrent, sourceTreatment, sourceControl}
	for trial := 0; trial < 300; trial++ {
		p := AnchorParams{
			Beta:          rng.Float64() * 6,
			KappaGlobal:   0.01 + rng.Float64()*5,
			KappaCategory: 0.01 + rng.Float64()*5,
			KappaTask:     0.01 + rng.Float64()*5,
			PriorCountCap: rng.Float64() * 40,
			ColdStart:     rng.Float64(),
		}
		n := rng.IntN(40)
		pool := make([]Episode, n)
		for i := range pool {
			r := rng.Float64()
			if rng.IntN(3) == 0 {
				r = float64(rng.IntN(2))
			}
			pool[i] = ep(string(rune('A'+i)), string(rune('q'+rng.IntN(4))), string(rune('f'+rng.IntN(3))), sources[rng.IntN(len(sources))], r)
			pool[i].Healthy = rng.IntN(5) != 0
		}
		scored := append([]Episode{ep("x", "q", "f", sourceCurrent, 0), ep("y", "new", "nofam", sourceCurrent, 0)}, pool...)
		priors := map[string]TaskPrior{}
		for _, q := range []string{"q", "r", "s"} {
			if rng.IntN(2) == 0 {
				priors[q] = TaskPrior{Rate: rate(rng.Float64()), Count: rng.Float64() * 60}
			}
		}
		for _, g := range Anchors(p, pool, scored, priors) {
			for name, v := range map[string]float64{"m_global": g.MGlobal, "m_category": g.MCategory, "m_prior": g.MPrior, "p_hat": g.PHat} {
				if !(v >= -1e-15 && v <= 1+1e-15) {
					t.Fatalf("trial %d %s: %s = %v outside [0,1]", trial, g.EpisodeID, name, v)
				}
			}
			if !(g.Anchor >= 0 && g.Anchor <= p.Beta+1e-12) {
				t.Fatalf("trial %d %s: anchor %v outside [0, %v]", trial, g.EpisodeID, g.Anchor, p.Beta)
			}
		}
	}
}
