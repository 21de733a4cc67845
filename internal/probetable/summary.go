package probetable

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/evosteer/evosteer-go/schema"
)

// Num is a number of the summary. NaN marks a value that is not defined (a ratio over zero,
// such as the slope when π* = ρ on every task): null in JSON, "—" in Markdown.
type Num float64

// MarshalJSON writes NaN and ±Inf as null.
func (x Num) MarshalJSON() ([]byte, error) {
	f := float64(x)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	if f == 0 {
		f = 0 // no negative zero
	}
	return json.Marshal(f)
}

// UnmarshalJSON reads null as NaN.
func (x *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*x = Num(math.NaN())
		return nil
	}
	var f float64
	err := json.Unmarshal(b, &f)
	*x = Num(f)
	return err
}

// Summary is what a probe says, computed by Summarize from the table's rows alone.
type Summary struct {
	Step          int         `json:"step"`
	Beta          float64     `json:"beta"`
	Tasks         int         `json:"tasks"`
	Rows          int         `json:"rows"`          // (task, legal first action) pairs
	Continuations int         `json:"continuations"` // ρ continuations per row (the fewest, should they differ)
	Unhealthy     int         `json:"unhealthy"`     // continuations that ended unhealthy
	Families      []Group     `json:"families"`      // in the rows' order
	Overall       Group       `json:"overall"`
	Interaction   Interaction `json:"interaction"`
	Verdict       string      `json:"verdict"`
}

// Group is the summary of a set of tasks (one family, or all). Rewards are the expected reward
// ×100 of a policy taking the first action and continuing with ρ, averaged over the tasks;
// gains are differences to ρ's in the same points; coverage numbers are as described on the
// fields.
type Group struct {
	Family         string  `json:"family"` // "all" for every task
	Tasks          int     `json:"tasks"`
	ActionsPerTask float64 `json:"actions_per_task"`
	RewardRho      Num     `json:"reward_rho"`       // Σ_a ρ(a) m(a), m(a) = E[r | a]
	RewardTheta    Num     `json:"reward_theta"`     // Σ_a θ(a) m(a)
	RewardPiStar   Num     `json:"reward_pistar"`    // Σ_a π*(a) m(a)
	RewardBest     Num     `json:"reward_best"`      // max_a m(a) (biased up: the largest of noisy means)
	GainTheta      Num     `json:"gain_theta"`       // reward_theta − reward_rho
	GainPiStar     Num     `json:"gain_pistar"`      // reward_pistar − reward_rho
	BestActionGain Num     `json:"best_action_gain"` // reward_best − reward_rho
	// Slope of the least-squares fit of log(θ/ρ) on log(π*/ρ) over every (task, action), each
	// weighted by ρ(a) and centred within its task (ρ-weighted), so the softmax's free constant
	// does not matter: 1 when θ = π*, 0 when θ = ρ. π* is estimated, and the sampling noise of Û
	// in the regressor biases this slope toward 0 (regression dilution).
	Slope Num `json:"slope"`
	// SlopeCorrected is the slope with the dilution removed: cov(log θ/ρ, log π̂*/ρ) over
	// cov(log π̂*_even/ρ, log π̂*_odd/ρ), the covariance of the estimates from the even and the
	// odd continuations, whose errors are independent, so it estimates the variance of the true
	// log(π*/ρ) without the noise (the instrumental-variable estimator of the errors-in-variables
	// model). NaN when that covariance is not positive: no detectable signal to regress on.
	SlopeCorrected Num `json:"slope_corrected"`
	// Mean over tasks of the total variation distances TV(θ, π*) and TV(ρ, π*), and coverage =
	// 1 − TV(θ, π*)/TV(ρ, π*) (of the means): 1 when θ = π*, 0 when θ = ρ.
	TVTheta  Num `json:"tv_theta_pistar"`
	TVRho    Num `json:"tv_rho_pistar"`
	Coverage Num `json:"coverage"`
	// Mean over tasks of KL(π* ‖ θ) and KL(π* ‖ ρ), in nats.
	KLTheta Num `json:"kl_pistar_theta"`
	KLRho   Num `json:"kl_pistar_rho"`
	// NoiseShare is the share of the (weighted, centred) variance of log(π̂*/ρ) that is sampling
	// noise of Û: 1 − cov(even, odd)/var(all), the split-half estimate. The raw slope is diluted
	// by this share: Slope ≈ (1 − NoiseShare)·SlopeCorrected.
	NoiseShare Num `json:"noise_share"`
	// LossTargetSlope is the least-squares slope of the loss target τ (the probe table's
	// loss_target: where AnchorTB's own gradient pulls log(θ/ρ) of the action) on log(θ/ρ),
	// weighted and centred as the slope, over the rows that have one: 1 when θ sits on the target
	// its loss sets, above 1 when θ falls short of it. τ's noise is on the fitted side, so it
	// does not bias this slope. NaN without loss targets.
	LossTargetSlope Num `json:"loss_target_slope"`
	// LossTargetReach is the slope of τ on log(π*/ρ), corrected as SlopeCorrected is: how much
	// of π*'s tilt the loss itself asks for at the first decision.
	LossTargetReach Num `json:"loss_target_reach"`
}

// Interaction is the family × role interaction: per (family, role of the first action), the
// mean of log(θ/ρ) and of log(π*/ρ) (task-centred as for the slope), double-centred (the
// family's and the role's means over the cells present removed, the grand mean added back).
type Interaction struct {
	Cells       []Cell `json:"cells"`
	Correlation Num    `json:"correlation"` // Pearson, over the cells
	VarTheta    Num    `json:"var_theta"`   // variance over the cells of the double-centred log(θ/ρ)
	VarPiStar   Num    `json:"var_pistar"`  // and of log(π*/ρ)
}

// Cell is one (family, role) cell of the interaction.
type Cell struct {
	Family string `json:"family"`
	Role   string `json:"role"`
	Rows   int    `json:"rows"`
	Theta  Num    `json:"theta"`  // double-centred mean of log(θ/ρ)
	PiStar Num    `json:"pistar"` // double-centred mean of log(π*/ρ)
}

// The verdict's thresholds: θ is at its target when the slope reaches SlopeAtTarget and the
// coverage CoverageAtTarget; θ has reached its loss's target when LossTargetSlope is within
// [SlopeAtTarget, 1/SlopeAtTarget] (θ's log-ratios within a factor 1.25 of the target's).
const (
	SlopeAtTarget    = 0.8
	CoverageAtTarget = 0.5
)

// taskStat is one task's contribution.
type taskStat struct {
	family                      string
	actions                     int
	er, et, ep, best            float64 // expected reward under ρ, θ, π*, best action (0..1)
	tvT, tvR, klT, klR          float64
	sxy, sxx, syc, scc, sab     float64   // weighted sums of the raw and the corrected slope's fits
	tzy, tyy, tzc, tab          float64   // the same for the loss target, over the rows with one
	x, y                        []float64 // centred log(π*/ρ), log(θ/ρ) per row
	roles                       []string
	continuations, unhealthy, n int
}

// Summarize computes the summary of a probe of step from its rows (grouped by task in the order
// the tasks first appear; a task's rows are its legal first actions).
func Summarize(step int, rows []schema.ProbeRow) (Summary, error) {
	if len(rows) == 0 {
		return Summary{}, fmt.Errorf("summarize probe of step %d: no rows", step)
	}
	var order []string
	byTask := map[string][]schema.ProbeRow{}
	for i, r := range rows {
		if r.Beta != rows[0].Beta {
			return Summary{}, fmt.Errorf("summarize probe: row %d: beta %g, row 0 has %g", i, r.Beta, rows[0].Beta)
		}
		for _, v := range []struct {
			name string
			x    float64
		}{{"rho", r.Rho}, {"theta", r.Theta}, {"pistar", r.PiStar}} {
			if !(v.x >= 0 && v.x <= 1) {
				return Summary{}, fmt.Errorf("summarize probe: task %s action %d: column %q is %g, not a probability", r.TaskID, r.ActionIndex, v.name, v.x)
			}
		}
		if r.Continuations < 2 {
			return Summary{}, fmt.Errorf("summarize probe: task %s action %d: %d continuations, need at least 2 (two halves)", r.TaskID, r.ActionIndex, r.Continuations)
		}
		for _, v := range []struct {
			name string
			x    float64
		}{{"u", r.U}, {"u_even", r.UEven}, {"u_odd", r.UOdd}} {
			if !(v.x >= 1 && !math.IsInf(v.x, 0)) { // R_β = 1 + (e^β − 1)·r ≥ 1
				return Summary{}, fmt.Errorf("summarize probe: task %s action %d: column %q is %g, not a mean of R_β ≥ 1", r.TaskID, r.ActionIndex, v.name, v.x)
			}
		}
		if _, ok := byTask[r.TaskID]; !ok {
			order = append(order, r.TaskID)
		} else if f := byTask[r.TaskID][0].Family; f != r.Family {
			return Summary{}, fmt.Errorf("summarize probe: task %s has rows of families %s and %s", r.TaskID, f, r.Family)
		}
		byTask[r.TaskID] = append(byTask[r.TaskID], r)
	}
	s := Summary{Step: step, Beta: rows[0].Beta, Tasks: len(order), Rows: len(rows), Continuations: math.MaxInt}
	stats := make([]taskStat, len(order))
	var families []string
	for i, id := range order {
		stats[i] = taskOf(byTask[id], rows[0].Beta)
		s.Continuations = min(s.Continuations, stats[i].continuations)
		s.Unhealthy += stats[i].unhealthy
		if !slices.Contains(families, stats[i].family) {
			families = append(families, stats[i].family)
		}
	}
	for _, f := range families {
		var in []taskStat
		for _, st := range stats {
			if st.family == f {
				in = append(in, st)
			}
		}
		s.Families = append(s.Families, group(f, in))
	}
	s.Overall = group("all", stats)
	s.Interaction = interaction(stats, families)
	s.Verdict = Verdict(s.Overall)
	return s, nil
}

// taskOf computes one task's statistics.
func taskOf(rows []schema.ProbeRow, beta float64) taskStat {
	st := taskStat{family: rows[0].Family, actions: len(rows), best: math.Inf(-1), continuations: math.MaxInt}
	wsum := 0.0
	for _, r := range rows {
		wsum += r.Rho
	}
	n := len(rows)
	x, y, w := make([]float64, n), make([]float64, n), make([]float64, n)
	xc, xa, xb := make([]float64, n), make([]float64, n), make([]float64, n) // bias-corrected log Û: all, even, odd
	for i, r := range rows {
		st.er += r.Rho * r.MeanReward
		st.et += r.Theta * r.MeanReward
		st.ep += r.PiStar * r.MeanReward
		st.best = math.Max(st.best, r.MeanReward)
		st.tvT += math.Abs(r.Theta-r.PiStar) / 2
		st.tvR += math.Abs(r.Rho-r.PiStar) / 2
		if r.PiStar > 0 {
			lp := math.Log(r.PiStar)
			st.klT += r.PiStar * (lp - r.LogTheta)
			st.klR += r.PiStar * (lp - r.LogRho)
		}
		x[i] = math.Log(r.PiStar) - r.LogRho
		y[i] = r.LogTheta - r.LogRho
		// log(π̂*/ρ) is log Û up to a per-task constant, which centring removes. For the corrected
		// slope each log is also freed of its Jensen bias, E[log Û] ≈ log U − Var(R_β)/(2·M·U²):
		// the bias is larger for actions of small U, so it stretches log Û apart and, uncorrected,
		// reads as a too-small slope.
		varR := math.Pow(math.Expm1(beta)*r.RewardSD, 2)
		jensen := func(u float64, m int) float64 { return math.Log(u) + varR/(2*float64(m)*u*u) }
		mm := int(r.Continuations)
		xc[i], xa[i], xb[i] = jensen(r.U, mm), jensen(r.UEven, mm-mm/2), jensen(r.UOdd, mm/2)
		w[i] = r.Rho / wsum
		st.roles = append(st.roles, r.Role)
		st.continuations = min(st.continuations, int(r.Continuations))
		st.unhealthy += int(r.Unhealthy)
	}
	st.sxy, st.sxx = wcov(w, x, y), wcov(w, x, x)
	st.syc, st.scc, st.sab = wcov(w, xc, y), wcov(w, xc, xc), wcov(w, xa, xb)
	st.tzy, st.tyy, st.tzc, st.tab = lossTargetSums(rows, w, y, xc, xa, xb)
	mx, my := wmean(w, x), wmean(w, y)
	for i := range x { // the interaction's cells average task-centred values
		x[i] -= mx
		y[i] -= my
	}
	st.x, st.y, st.n = x, y, n
	return st
}

// lossTargetSums are the weighted sums of the loss target's two fits over the rows of a task
// that have one (at least two), re-weighted and re-centred over those rows: Σw·τ·y, Σw·y·y,
// Σw·τ·x and Σw·x_even·x_odd with y = log(θ/ρ) and x the bias-corrected log Û (all, even, odd).
func lossTargetSums(rows []schema.ProbeRow, w, y, xc, xa, xb []float64) (zy, yy, zc, ab float64) {
	var z, ws, ys, cs, as, bs []float64
	for i, r := range rows {
		if r.LossTarget != nil {
			z, ws = append(z, *r.LossTarget), append(ws, w[i])
			ys, cs, as, bs = append(ys, y[i]), append(cs, xc[i]), append(as, xa[i]), append(bs, xb[i])
		}
	}
	if len(z) < 2 {
		return 0, 0, 0, 0
	}
	return wcov(ws, z, ys), wcov(ws, ys, ys), wcov(ws, z, cs), wcov(ws, as, bs)
}

// wmean is the mean of a under the weights w (0 when they sum to 0).
func wmean(w, a []float64) float64 {
	var ws, m float64
	for i := range w {
		ws += w[i]
		m += w[i] * a[i]
	}
	if ws == 0 {
		return 0
	}
	return m / ws
}

// wcov is the covariance of a and b under the weights w (normalised to sum 1, each series
// centred on its weighted mean).
func wcov(w, a, b []float64) float64 {
	ws, ma, mb := 0.0, wmean(w, a), wmean(w, b)
	for _, x := range w {
		ws += x
	}
	if ws == 0 {
		return 0
	}
	c := 0.0
	for i := range w {
		c += w[i] / ws * (a[i] - ma) * (b[i] - mb)
	}
	return c
}

// group summarises a set of tasks.
func group(name string, stats []taskStat) Group {
	g := Group{Family: name, Tasks: len(stats)}
	var er, et, ep, best, tvT, tvR, klT, klR, sxy, sxx, syc, scc, sab, tzy, tyy, tzc, tab, actions float64
	for _, st := range stats {
		er += st.er
		et += st.et
		ep += st.ep
		best += st.best
		tvT += st.tvT
		tvR += st.tvR
		klT += st.klT
		klR += st.klR
		sxy += st.sxy
		sxx += st.sxx
		syc += st.syc
		scc += st.scc
		sab += st.sab
		tzy += st.tzy
		tyy += st.tyy
		tzc += st.tzc
		tab += st.tab
		actions += float64(st.actions)
	}
	n := float64(len(stats))
	g.ActionsPerTask = actions / n
	g.RewardRho, g.RewardTheta, g.RewardPiStar, g.RewardBest = Num(100*er/n), Num(100*et/n), Num(100*ep/n), Num(100*best/n)
	g.GainTheta, g.GainPiStar, g.BestActionGain = Num(100*(et-er)/n), Num(100*(ep-er)/n), Num(100*(best-er)/n)
	g.TVTheta, g.TVRho = Num(tvT/n), Num(tvR/n)
	g.KLTheta, g.KLRho = Num(klT/n), Num(klR/n)
	g.Slope, g.Coverage = Num(ratio(sxy, sxx)), Num(1-ratio(tvT, tvR))
	g.SlopeCorrected, g.NoiseShare = Num(math.NaN()), Num(math.NaN())
	if sab > negligible {
		g.SlopeCorrected = Num(syc / sab)
	}
	if scc > negligible {
		g.NoiseShare = Num(min(1, max(0, 1-sab/scc)))
	}
	g.LossTargetSlope, g.LossTargetReach = Num(ratio(tzy, tyy)), Num(math.NaN())
	if tab > negligible {
		g.LossTargetReach = Num(tzc / tab)
	}
	return g
}

// negligible is the size below which a variance of log-ratios or a TV distance in a ratio's
// denominator is rounding, not signal: when π* = ρ (every action alike) log(π*/ρ) is ~1e-16
// rather than 0, and dividing by its variance would print a slope of a million.
const negligible = 1e-15

// ratio is a/b, NaN when b is negligible (b ≥ 0).
func ratio(a, b float64) float64 {
	if b <= negligible {
		return math.NaN()
	}
	return a / b
}

// interaction computes the family × role cells over every task's rows.
func interaction(stats []taskStat, families []string) Interaction {
	type key struct{ family, role string }
	type acc struct {
		n    int
		x, y float64
	}
	cells := map[key]*acc{}
	var roles []string
	for _, st := range stats {
		for i, role := range st.roles {
			if !slices.Contains(roles, role) {
				roles = append(roles, role)
			}
			k := key{st.family, role}
			if cells[k] == nil {
				cells[k] = &acc{}
			}
			c := cells[k]
			c.n++
			c.x += st.x[i]
			c.y += st.y[i]
		}
	}
	var out []Cell
	var xs, ys []float64
	for _, f := range families {
		for _, r := range roles {
			if c := cells[key{f, r}]; c != nil {
				out = append(out, Cell{Family: f, Role: r, Rows: c.n})
				xs = append(xs, c.x/float64(c.n))
				ys = append(ys, c.y/float64(c.n))
			}
		}
	}
	xs, ys = doubleCentre(out, xs), doubleCentre(out, ys)
	for i := range out {
		out[i].PiStar, out[i].Theta = Num(xs[i]), Num(ys[i])
	}
	return Interaction{Cells: out, Correlation: Num(pearson(ys, xs)), VarTheta: Num(variance(ys)), VarPiStar: Num(variance(xs))}
}

// doubleCentre removes from each cell's value its family's and its role's means over the cells
// present and adds back the grand mean.
func doubleCentre(cells []Cell, v []float64) []float64 {
	fam, role := map[string][2]float64{}, map[string][2]float64{}
	grand := 0.0
	for i, c := range cells {
		f, r := fam[c.Family], role[c.Role]
		fam[c.Family] = [2]float64{f[0] + v[i], f[1] + 1}
		role[c.Role] = [2]float64{r[0] + v[i], r[1] + 1}
		grand += v[i]
	}
	grand /= float64(len(cells))
	out := make([]float64, len(v))
	for i, c := range cells {
		f, r := fam[c.Family], role[c.Role]
		out[i] = v[i] - f[0]/f[1] - r[0]/r[1] + grand
	}
	return out
}

func variance(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	m := 0.0
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return s / float64(len(v))
}

// pearson is the correlation of a and b, NaN when either is constant.
func pearson(a, b []float64) float64 {
	if len(a) < 2 {
		return math.NaN()
	}
	ma, mb := 0.0, 0.0
	for i := range a {
		ma += a[i]
		mb += b[i]
	}
	ma /= float64(len(a))
	mb /= float64(len(b))
	var sab, saa, sbb float64
	for i := range a {
		sab += (a[i] - ma) * (b[i] - mb)
		saa += (a[i] - ma) * (a[i] - ma)
		sbb += (b[i] - mb) * (b[i] - mb)
	}
	if saa == 0 || sbb == 0 {
		return math.NaN()
	}
	return sab / math.Sqrt(saa*sbb)
}

// Verdict is the one-line reading of a group: θ at its target (slope ≥ SlopeAtTarget and
// coverage ≥ CoverageAtTarget), so what limits θ is what π* is worth; or θ short of π* and
// behind it in reward, and then either on the target its own loss sets (LossTargetSlope within
// [SlopeAtTarget, 1/SlopeAtTarget]), so what limits θ is that target — the flows — or off that
// too, so what limits θ is its optimisation. The slope judged is the corrected one where it is
// defined: the raw slope understates θ's coverage by the noise share.
func Verdict(g Group) string {
	cov := float64(g.Coverage)
	sl := g.SlopeCorrected
	if math.IsNaN(float64(sl)) {
		sl = g.Slope
	}
	slope := float64(sl)
	gains := fmt.Sprintf("π* is worth %s points over ρ at the first decision, θ %s, the best single first action %s",
		signed(g.GainPiStar), signed(g.GainTheta), signed(g.BestActionGain))
	var v string
	switch {
	case math.IsNaN(slope) || math.IsNaN(cov):
		v = "No verdict: π* = ρ on these tasks (every first action has the same U), so θ has no target to move toward at the first decision; " + gains + "."
	case slope >= SlopeAtTarget && cov >= CoverageAtTarget:
		v = fmt.Sprintf("θ is limited by its target: θ ≈ π* (slope %s, TV(θ,π*) %s against TV(ρ,π*) %s, coverage %s), and %s; "+
			"more gain needs a target worth more (a larger β, a better reference), not better optimisation.",
			plain(sl, 2), plain(g.TVTheta, 3), plain(g.TVRho, 3), plain(g.Coverage, 2), gains)
	case float64(g.GainTheta) < float64(g.GainPiStar) && onLossTarget(g.LossTargetSlope):
		v = fmt.Sprintf("θ is limited by the target its loss sets: θ has reached AnchorTB's own first-decision target "+
			"(loss-target slope %s), which asks for %s of π*'s tilt; θ covers %s of the way to π* (slope %s, coverage %s, "+
			"TV(θ,π*) %s against TV(ρ,π*) %s), and %s. Better optimisation would not help; flows that carry more of an "+
			"action's effect would.",
			plain(g.LossTargetSlope, 2), percent(g.LossTargetReach), percent(sl), plain(sl, 2), plain(g.Coverage, 2),
			plain(g.TVTheta, 3), plain(g.TVRho, 3), gains)
	case float64(g.GainTheta) < float64(g.GainPiStar):
		v = fmt.Sprintf("θ is limited by optimisation: it covers %s of the way to π* (slope %s, coverage %s, TV(θ,π*) %s against TV(ρ,π*) %s), and %s.",
			percent(sl), plain(sl, 2), plain(g.Coverage, 2), plain(g.TVTheta, 3), plain(g.TVRho, 3), gains)
		switch lt := float64(g.LossTargetSlope); {
		case lt > 1/SlopeAtTarget:
			v += fmt.Sprintf(" θ is short of its loss's own target too (loss-target slope %s; the target asks for %s of π*'s tilt).",
				plain(g.LossTargetSlope, 2), percent(g.LossTargetReach))
		case !math.IsNaN(lt):
			v += fmt.Sprintf(" θ is off its loss's own target too (loss-target slope %s, 1 on it; the target asks for %s of π*'s tilt).",
				plain(g.LossTargetSlope, 2), percent(g.LossTargetReach))
		}
	default:
		v = fmt.Sprintf("θ is off its target (slope %s, coverage %s) yet gains as much as π*: %s; the first decision does not show what limits θ.",
			plain(sl, 2), plain(g.Coverage, 2), gains)
	}
	if ns := float64(g.NoiseShare); ns > 0.2 {
		v += fmt.Sprintf(" Sampling noise in Û makes %s of the spread of log(π̂*/ρ) (raw slope %s, corrected %s): raise --continuations for a sharper estimate.",
			percent(g.NoiseShare), plain(g.Slope, 2), plain(g.SlopeCorrected, 2))
	}
	return v
}

// onLossTarget reports whether a loss-target slope says θ sits on its loss's target.
func onLossTarget(slope Num) bool {
	return float64(slope) >= SlopeAtTarget && float64(slope) <= 1/SlopeAtTarget
}

// plain formats x with d decimals ("—" when undefined), never as negative zero.
func plain(x Num, d int) string {
	if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
		return "—"
	}
	s := strconv.FormatFloat(float64(x), 'f', d, 64)
	if strings.Trim(s, "-0.") == "" {
		s = strings.TrimPrefix(s, "-")
	}
	return s
}

// signed formats points with a sign and two decimals.
func signed(x Num) string {
	s := plain(x, 2)
	if s != "—" && !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s
}

func percent(x Num) string {
	if math.IsNaN(float64(x)) {
		return "—"
	}
	return plain(100*x, 0) + "%"
}

// Markdown renders the summary: the verdict, the table per family, the coverage numbers and
// the interaction.
func (s Summary) Markdown(simulated bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Probe of step %d: θ against its target π* at the first decision\n\n", s.Step)
	if simulated {
		b.WriteString("Simulated world (internal/sim): these numbers say whether the machinery works, not what any LLM scores.\n\n")
	}
	fmt.Fprintf(&b, "%d training tasks, %d (task, legal first action) rows, %d ρ continuations per row with seeds shared across "+
		"a task's actions; β = %g; %d unhealthy continuations.\n\n", s.Tasks, s.Rows, s.Continuations, s.Beta, s.Unhealthy)
	fmt.Fprintf(&b, "**Verdict.** %s\n\n", s.Verdict)
	b.WriteString(s.Table())
	b.WriteString("\nRewards ×100: the expected reward when the first action is drawn from ρ, θ or π* (or is the best action " +
		"of the task) and ρ continues, averaged over the tasks; gains are differences to ρ in points. Slope: least-squares " +
		"slope of log(θ/ρ) on log(π*/ρ), weighted by ρ and centred within each task (1 when θ = π*, 0 when θ = ρ); " +
		"π* is estimated, so this raw slope is diluted toward 0 by the noise share; corrected: the slope with the " +
		"dilution removed (the covariance of the even- and odd-continuation estimates of log(π*/ρ) in the denominator). " +
		"TV: mean total variation distance to π*; coverage = 1 − TV(θ,π*)/TV(ρ,π*). KL: mean KL(π*‖·) in nats. " +
		"Noise: the share of log(π̂*/ρ)'s spread that is sampling noise of Û (split-half estimate). Loss target: " +
		"slope of τ, the target AnchorTB's gradient set for log(θ/ρ) of the action in training (loss_target), on " +
		"log(θ/ρ): 1 when θ sits on it, above 1 when θ falls short; reach: the corrected slope of τ on log(π*/ρ), " +
		"how much of π*'s tilt the loss asks for.\n")
	in := s.Interaction
	fmt.Fprintf(&b, "\n## Family × role interaction\n\nPearson correlation of the double-centred cell means of log(θ/ρ) and log(π*/ρ): %s "+
		"(variance over cells: θ %s, π* %s).\n\n", plain(in.Correlation, 3), sci(in.VarTheta), sci(in.VarPiStar))
	b.WriteString("| family | role | rows | log(θ/ρ) | log(π*/ρ) |\n|---|---|---:|---:|---:|\n")
	for _, c := range in.Cells {
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s |\n", c.Family, c.Role, c.Rows, plain(c.Theta, 4), plain(c.PiStar, 4))
	}
	return b.String()
}

// Table is the per-family table of the summary (Markdown).
func (s Summary) Table() string {
	var b strings.Builder
	b.WriteString("| family | tasks | actions | reward ρ | gain θ | gain π* | best action | slope | corrected | TV(θ,π*) | TV(ρ,π*) | coverage | KL(π*‖θ) | KL(π*‖ρ) | noise | loss target | reach |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, g := range append(slices.Clone(s.Families), s.Overall) {
		name := g.Family
		if name == "all" {
			name = "**all**"
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name, g.Tasks, plain(Num(g.ActionsPerTask), 1),
			plain(g.RewardRho, 2), signed(g.GainTheta), signed(g.GainPiStar), signed(g.BestActionGain), plain(g.Slope, 3), plain(g.SlopeCorrected, 3),
			plain(g.TVTheta, 4), plain(g.TVRho, 4), plain(g.Coverage, 3), plain(g.KLTheta, 4), plain(g.KLRho, 4), plain(g.NoiseShare, 2),
			plain(g.LossTargetSlope, 3), plain(g.LossTargetReach, 3))
	}
	return b.String()
}

// sci formats a small number in scientific notation.
func sci(x Num) string {
	if math.IsNaN(float64(x)) {
		return "—"
	}
	return strconv.FormatFloat(float64(x), 'e', 1, 64)
}
