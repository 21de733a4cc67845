package gpu

import (
	"fmt"
	"math"
)

// The comparison objectives of the paper's Figure mechanism(a,b) (METHOD.md §4.5), each written,
// like AnchorTB, as a per-trajectory loss in float64 with its derivative with respect to the chosen
// actions' log-probabilities (the coefficients the learner routes through ∇log π_θ(a_t|s_t)) and
// with respect to the objective's own parameters. Every function here is a pure function of one
// trajectory (or one group of trajectories); the learner (objective_update.go) supplies the
// log-probabilities, batches, clips and steps.
//
// Where the paper is silent the choices are:
//
//   - TB keeps AnchorTB's span δ_{0:T} alone (the paper's Figure anchortb-steps: "TB keeps only
//     δ_{0:3}"), with the root flow a learned log Z per task instead of the measured anchor and
//     the same terminal log R_β(r): δ = log Z_q + Σ_t Δℓ_t − log R_β(r), L = δ². P_B = 1, as on the
//     history tree of AnchorTB (every non-root state has one parent).
//   - TTB follows the one concrete description of tempered TB there is (METHOD.md §4.5, the
//     release's legacy objective): Δ = log Z_q + Σ_t (log π_θ(a_t|s_t) − log P_B(a_t))/n_t −
//     β·log(r + ε), L = (Δ/T)², with n_t the action's token count (the paper's "normalized by its
//     token count") and a learned, state-independent backward policy over the seven action
//     kinds, log P_B(a) = w_kind(a) − log Σ_k exp(w_k): which kind of edit led into a state.
//   - PPO: ratio ρ_t = exp(log π_θ − log π_behaviour), advantage A_t = r − V(s_t) (episodic, one
//     terminal reward, γ = λ = 1), L = −(1/T) Σ_t min(ρ_t A_t, clip(ρ_t, 1 ± ε) A_t).
//   - GRPO: the same clipped surrogate with the group-relative advantage Â = (r − mean)/std of the
//     task's current rollouts (population std; Â = 0 when the group's rewards are all equal) on
//     every decision, plus κ times the k3 estimate of KL(π_θ‖ρ), exp(ℓρ − ℓθ) − (ℓρ − ℓθ) − 1,
//     averaged over the decisions.

// TBLoss is trajectory balance on the full trajectory relative to the reference: with
// δ = logZ + Σ_t Δℓ_t − logReward, L = δ², ∂L/∂Δℓ_t = 2δ for every t and ∂L/∂logZ = 2δ.
func TBLoss(logZ float64, deltaL []float64, logReward float64) (loss float64, dDelta []float64, dLogZ float64) {
	if len(deltaL) == 0 {
		panic("gpu.TBLoss: no decisions")
	}
	d := logZ - logReward
	for _, x := range deltaL {
		d += x
	}
	dDelta = make([]float64, len(deltaL))
	for t := range dDelta {
		dDelta[t] = 2 * d
	}
	return d * d, dDelta, 2 * d
}

// TemperedLogReward is tempered TB's log reward β·log(r + ε).
func TemperedLogReward(r, beta, eps float64) float64 { return beta * math.Log(r+eps) }

// TTBLoss is tempered TB on one trajectory of T decisions: logp[t] = log π_θ(a_t|s_t), kinds[t]
// the index of a_t's kind among the backward logits w, norm[t] = n_t > 0 the action's token
// count, logReward = β·log(r + ε). With log P_B(k) = w_k − log Σ_j exp(w_j),
//
//	Δ = logZ + Σ_t (logp_t − log P_B(kinds_t))/n_t − logReward,   L = (Δ/T)²,
//
// it returns L, ∂L/∂logp_t = 2Δ/(T²·n_t), ∂L/∂logZ = 2Δ/T² and ∂L/∂w_j =
// −(2Δ/T²)·Σ_t (1[kinds_t = j] − P_B(j))/n_t.
func TTBLoss(logZ float64, logp []float64, kinds []int, norm, w []float64, logReward float64) (loss float64, dLogp []float64, dLogZ float64, dW []float64) {
	T := len(logp)
	if T == 0 || len(kinds) != T || len(norm) != T {
		panic(fmt.Sprintf("gpu.TTBLoss: %d log-probabilities, %d kinds, %d normalisers", T, len(kinds), len(norm)))
	}
	lse := logSumExp(w)
	d := logZ - logReward
	for t, lp := range logp {
		if norm[t] <= 0 || kinds[t] < 0 || kinds[t] >= len(w) {
			panic(fmt.Sprintf("gpu.TTBLoss: decision %d: kind %d of %d, normaliser %v", t, kinds[t], len(w), norm[t]))
		}
		d += (lp - (w[kinds[t]] - lse)) / norm[t]
	}
	tt := float64(T * T)
	g := 2 * d / tt // ∂L/∂Δ
	dLogp, dW = make([]float64, T), make([]float64, len(w))
	var inv float64 // Σ_t 1/n_t
	for t := range logp {
		dLogp[t] = g / norm[t]
		dW[kinds[t]] -= g / norm[t]
		inv += 1 / norm[t]
	}
	for j, wj := range w {
		dW[j] += g * inv * math.Exp(wj-lse)
	}
	return d * d / tt, dLogp, g, dW
}

// PPOLoss is the clipped surrogate on one trajectory: with ρ_t = exp(logp_t − logpOld_t),
// L = −(1/T) Σ_t min(ρ_t A_t, clip(ρ_t, 1−ε, 1+ε) A_t) and ∂L/∂logp_t = −ρ_t A_t/T where the
// unclipped term is the minimum (ties included), 0 where the clipped one is.
func PPOLoss(logp, logpOld, adv []float64, clip float64) (loss float64, dLogp []float64) {
	T := len(logp)
	if T == 0 || len(logpOld) != T || len(adv) != T {
		panic(fmt.Sprintf("gpu.PPOLoss: %d log-probabilities, %d old, %d advantages", T, len(logpOld), len(adv)))
	}
	dLogp = make([]float64, T)
	for t := range T {
		r := math.Exp(logp[t] - logpOld[t])
		un, cl := r*adv[t], math.Min(1+clip, math.Max(1-clip, r))*adv[t]
		if un <= cl {
			loss -= un
			dLogp[t] = -un / float64(T)
		} else {
			loss -= cl
		}
	}
	return loss / float64(T), dLogp
}

// GRPOLoss is GRPO's per-trajectory loss: PPOLoss with the trajectory's group-relative advantage
// adv on every decision, plus kl times the mean over decisions of the k3 estimate
// exp(logpRho_t − logp_t) − (logpRho_t − logp_t) − 1 of KL(π_θ‖ρ), whose derivative with respect
// to logp_t is 1 − exp(logpRho_t − logp_t).
func GRPOLoss(logp, logpOld, logpRho []float64, adv, clip, kl float64) (loss float64, dLogp []float64) {
	T := len(logp)
	if len(logpRho) != T {
		panic(fmt.Sprintf("gpu.GRPOLoss: %d log-probabilities, %d reference", T, len(logpRho)))
	}
	a := make([]float64, T)
	for t := range a {
		a[t] = adv
	}
	loss, dLogp = PPOLoss(logp, logpOld, a, clip)
	for t := range T {
		u := logpRho[t] - logp[t]
		loss += kl * (math.Exp(u) - u - 1) / float64(T)
		dLogp[t] += kl * (1 - math.Exp(u)) / float64(T)
	}
	return loss, dLogp
}

// GroupAdvantages are GRPO's advantages of one group's rewards: (r − mean)/std with the
// population std, all 0 when the rewards are equal (a group of one included).
func GroupAdvantages(rewards []float64) []float64 {
	n := float64(len(rewards))
	var mean, ss float64
	for _, r := range rewards {
		mean += r / n
	}
	for _, r := range rewards {
		ss += (r - mean) * (r - mean)
	}
	out := make([]float64, len(rewards))
	if std := math.Sqrt(ss / n); std > 0 {
		for i, r := range rewards {
			out[i] = (r - mean) / std
		}
	}
	return out
}

func logSumExp(x []float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, v)
	}
	var s float64
	for _, v := range x {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}
