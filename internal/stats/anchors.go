package stats

// Anchors computes the hierarchical-shrinkage task anchor u_{q,x} (Def. B.2, METHOD.md §4.2) of
// every episode of scored (this step's episodes, every source), one Anchor per episode, in
// scored's order.
//
// The statistics pool is the healthy natural_reference episodes of pool (every episode of steps
// 1..k, this step included); current and paired episodes, and unhealthy ones, never enter it
// (paper §C.5 "Data routing", METHOD.md §4.4). Sums S and counts N are accumulated in pool order
// at the global level (g), per Family (c) and per TaskID (q): one plain sum over the whole
// history, where sql/baselines.sql reads the step-ordered running sums of the anchor pool (AnchorPool), so the two
// agree within rounding (exactly on 0/1 rewards). For a scored episode x of task q and family c:
//
//	m_g  = S_g / N_g                       (N_g > 0), else p.ColdStart (= 1/2)   Eq. (evs-shrinkage-parent)
//	m_c  = (S_c + κ_g·m_g) / (N_c + κ_g)                                         Eq. (evs-shrinkage-parent)
//	n'   = min(n_d, p.PriorCountCap) if priors[q] has Rate != nil, else 0
//	m_0  = (n'·p_d + κ_c·m_c) / (n' + κ_c)   (n'·p_d is 0 without a rate)        Eq. (evs-shrinkage-task)
//	p̂    = clip_[0,1]((S_q' + κ_q·m_0) / (N_q' + κ_q))                            Eq. (evs-shrinkage-task)
//	u    = ln(1 + (e^β − 1)·p̂)                                                   Def. B.1
//
// with κ_g, κ_c, κ_q = p.KappaGlobal, p.KappaCategory, p.KappaTask. Leave-one-out (task level
// only): when x itself is in the statistics pool (an episode with x's ID that is a healthy
// natural_reference episode of pool), S_q' = S_q − r_x and N_q' = N_q − 1 (subtracting the
// pool copy's reward once from the full task sum) and LOO = true; otherwise S_q' = S_q,
// N_q' = N_q and LOO = false. The global and category statistics always include x. Only p̂ is
// clipped; the m levels are reported as computed (they lie in [0,1] by Lemma B.2 when rewards
// and prior rates do).
func Anchors(p AnchorParams, pool, scored []Episode, priors map[string]TaskPrior) []Anchor {
	type sum struct {
		s float64
		n float64
	}
	var global sum
	family := map[string]*sum{}
	task := map[string]*sum{}
	inPool := map[string]float64{} // episode ID → its reward, for the statistics pool
	add := func(m map[string]*sum, k string, r float64) {
		a := m[k]
		if a == nil {
			a = &sum{}
			m[k] = a
		}
		a.s += r
		a.n++
	}
	for i := range pool {
		e := &pool[i]
		if !e.Healthy || e.Source != sourceNatural {
			continue
		}
		global.s += e.Reward
		global.n++
		add(family, e.Family, e.Reward)
		add(task, e.TaskID, e.Reward)
		if _, dup := inPool[e.ID]; !dup {
			inPool[e.ID] = e.Reward
		}
	}

	mGlobal := p.ColdStart
	if global.n > 0 {
		mGlobal = global.s / global.n
	}

	out := make([]Anchor, 0, len(scored))
	for i := range scored {
		e := &scored[i]
		var sc, nc float64
		if a := family[e.Family]; a != nil {
			sc, nc = a.s, a.n
		}
		mCategory := (sc + p.KappaGlobal*mGlobal) / (nc + p.KappaGlobal)

		var nPrior, ratePart float64
		if pr, ok := priors[e.TaskID]; ok && pr.Rate != nil {
			nPrior = min(pr.Count, p.PriorCountCap)
			ratePart = nPrior * *pr.Rate
		}
		mPrior := (ratePart + p.KappaCategory*mCategory) / (nPrior + p.KappaCategory)

		var sq, nq float64
		if a := task[e.TaskID]; a != nil {
			sq, nq = a.s, a.n
		}
		r, loo := inPool[e.ID]
		if loo {
			sq -= r
			nq--
		}
		pHat := clip((sq+p.KappaTask*mPrior)/(nq+p.KappaTask), 0, 1)

		out = append(out, Anchor{
			EpisodeID: e.ID, TaskID: e.TaskID, Family: e.Family,
			MGlobal: mGlobal, MCategory: mCategory, MPrior: mPrior,
			PHat: pHat, LOO: loo,
			Anchor: logRewardTransform(p.Beta, pHat),
		})
	}
	return out
}
