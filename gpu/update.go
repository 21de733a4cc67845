package gpu

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gomlx/gomlx/core/graph"
)

// gradChunk is the number of decisions one gradient graph call takes. The gradient is a sum over
// decisions, so chunking is exact; it bounds the [rows·K, hidden] intermediates.
const gradChunk = 256

// Step is one decision of a trajectory as the update reads it.
type Step struct {
	Row        PolicyRow
	Chosen     int // index of the taken action in Row's legal actions
	Features   [FeatureWidth]float32
	Correction float64 // c(g(s_t)) from the previous step's buckets
	DeltaL     float64 // Δℓ_t = log π_θ(a_t|s_t) − log π_ρ(a_t|s_t), from the scores file
	LogpTheta  float64 // log π_θ(a_t|s_t) from the scores file (checked against the recomputation)
	// LogpBehavior is the log-probability the rollout sampled a_t with (the ratio's denominator
	// of ppo and grpo); Tokens the action's length in tokens (ttb's per-edge normaliser).
	LogpBehavior float64
	Tokens       int
}

// Trajectory is one healthy, scored episode of the step.
type Trajectory struct {
	Task    string  // task id: the free anchor of the measured-flows ablation
	Reward  float64 // r ∈ [0, 1]
	Anchor  float64 // u_{q,x}, the measured task anchor
	Current bool    // a π_θ rollout (for the policy-divergence metric)
	Steps   []Step  // decisions t = 0..T−1 (the last is STOP)
}

// StateRef is decision T of trajectory Traj.
type StateRef struct{ Traj, T int }

// UpdateInput is one training step's data.
type UpdateInput struct {
	Trajectories []Trajectory
	// ValueX/ValueY are this step's supervised value states ([f; task-type one-hot]) and their
	// labels (the episode's reward); ReplayX/ReplayY the replay window, this step included.
	ValueX, ReplayX [][]float32
	ValueY, ReplayY []float32
	// OutcomeStates are this step's supervised states for the outcome heads (label: reward).
	OutcomeStates []StateRef
	// Step is the training step: the versions the updated policy and published value head get.
	Step int64
}

// EpisodeLoss is the objective's loss of one trajectory at the parameters before the update: with
// its Δℓ (Loss), with every Δℓ = 0, i.e. π_θ replaced by ρ (LossRho, the reference level), and
// with Δℓ = 0 and b_ψ = 0 (LossAnchor, the paper's anchor-only level where every flow is its
// measured part; the objectives without flows write LossRho there). Trained is false for a
// trajectory the objective does not train on (ppo and grpo train on current episodes only); its
// losses are then 0.
type EpisodeLoss struct {
	Loss, LossRho, LossAnchor float64
	Trained                   bool
}

// StepCoefficient is one decision's flow F_t = Residual + Measured and its coefficient
// Γ_t = ∂L_x/∂ℓ_θ(a_t) (paper Prop. A.14; per trajectory, not divided by the batch size). Under
// the other objectives the flow is the objective's own state term: log Z_q at t = 0 (tb, ttb;
// learned, so a residual), the critic's V(s_t) (ppo; learned) or the group's mean reward (grpo;
// measured), and 0 where it has none.
type StepCoefficient struct{ Flow, Measured, Residual, Coefficient float64 }

// UpdateMetrics summarise one update (METHOD.md §8: the release's metric keys).
type UpdateMetrics struct {
	Loss, LossRho, LossAnchor          float64 // batch means over all trajectories
	PolicyKLCurrent, PolicyAbsLogRatio float64 // mean Δℓ on current branch decisions; mean |Δℓ| on all
	BranchDecisions                    int     // decisions with more than one legal action
	GradNorm, ValueGradNorm            float64 // before clipping
	OutcomeGradNorm                    float64
	ValueLoss, ValueFitLoss            float64 // MSE on this step's states before; on the replay window after
	ValueStates                        int     // this step's supervised value states
	ValueFitStates, ValueFitSteps      int
	OutcomeLoss                        float64 // mean MSE of the two outcome heads before their step
	Trajectories, Decisions            int
	TrainedTrajectories                int // those the objective trains on (ppo, grpo: current ones)
	MeanReward                         float64
	RescoreMismatch                    float64 // max |log π_θ recomputed − scores' log π_θ|
	PolicySteps                        int     // optimizer steps of the policy group (ppo, grpo: epochs)
	CriticLoss, CriticGradNorm         float64 // ppo: critic MSE before its steps; gradient norm of its last step
	// The update's compute as deterministic work counts (wall time is not reproducible):
	// decisions scored by the policy network without a gradient (h_ρ, re-scoring between
	// epochs), decisions differentiated through it (one per pass), and rows through an MLP head
	// (predictions; rows × heads × steps of every fit).
	PolicyForwardRows, PolicyGradRows, HeadRows int
	// Wall is the update's wall time, for logs only: it is not deterministic, so no table holds it.
	Wall time.Duration
}

// RowsPerEpisode is the update's work per trajectory: every network row pass, unweighted.
func (m UpdateMetrics) RowsPerEpisode() float64 {
	if m.Trajectories == 0 {
		return 0
	}
	return float64(m.PolicyForwardRows+m.PolicyGradRows+m.HeadRows) / float64(m.Trajectories)
}

// UpdateResult is what Update reports: per trajectory, per decision, and for the batch.
type UpdateResult struct {
	Episodes []EpisodeLoss
	Steps    [][]StepCoefficient
	Metrics  UpdateMetrics
}

// MaxRescoreMismatch bounds |log π_θ recomputed − log π_θ in scores|: both are the same float32
// network on the same inputs, so anything larger means the scores were not computed with these
// parameters.
const MaxRescoreMismatch = 1e-4

// Update takes one step of the learner's objective and fits the value and outcome heads, then
// publishes the value head. AnchorTB (METHOD.md §4.1) is steps 1–3; the comparison
// objectives replace them by objectiveUpdate (objective_update.go):
//
//  1. residuals b_ψ(h_ρ(s_t), f(s_t)) and flows F_t = b_t + clip(u + c_t, 0, β) for t < T,
//     F_T = log R_β(r), at the parameters before the update;
//  2. the per-trajectory loss, its ∂/∂Δℓ_t (= Γ_t) and ∂/∂F_t in float64 in O(T) (AnchorTB),
//     and the reference and anchor-only levels;
//  3. the gradient of the batch mean by Lemma A.17's routing, Σ_t (Γ_t/B)·∇log π_θ(a_t|s_t) +
//     Σ_t (∂L/∂F_t / B)·∇b_ψ(s_t), in chunks of decisions; one clip over (adapter, b_ψ, free
//     anchors) and AdamW with the two groups;
//  4. the value head: one step on this step's states, then fit_steps − 1 on the replay window;
//     the outcome heads: one step; each group clipped on its own; publication of v̂.
func (l *Learner) Update(e *Engine, in UpdateInput) (*UpdateResult, error) {
	start := time.Now()
	var res *UpdateResult
	var resIn [][]float32
	var err error
	if res, resIn, err = l.opt.obj().update(l, e, in); err != nil {
		return nil, err
	}
	o, met := l.opt, &res.Metrics

	// 4. Value and outcome heads, publication.
	if len(in.ValueX) > 0 {
		if err := l.fitValue(e, in, met); err != nil {
			return nil, err
		}
	}
	if len(in.OutcomeStates) > 0 {
		x, y := make([][]float32, len(in.OutcomeStates)), make([]float32, len(in.OutcomeStates))
		first := make([]int, len(in.Trajectories)) // flat index of each trajectory's decision 0
		for b := 1; b < len(first); b++ {
			first[b] = first[b-1] + len(in.Trajectories[b-1].Steps)
		}
		for i, s := range in.OutcomeStates {
			if s.Traj < 0 || s.Traj >= len(in.Trajectories) || s.T < 0 || s.T >= len(in.Trajectories[s.Traj].Steps) {
				return nil, fmt.Errorf("update: outcome state %d points at trajectory %d decision %d, which does not exist", i, s.Traj, s.T)
			}
			x[i], y[i] = resIn[first[s.Traj]+s.T], float32(in.Trajectories[s.Traj].Reward)
		}
		before, _, norm, err := FitMSE(e, l.Outcome[:], l.OutcomeGroup, o.Optimizer.GradClip, 1, x, y, 1)
		if err != nil {
			return nil, err
		}
		met.OutcomeLoss, met.OutcomeGradNorm = (before[0]+before[1])/2, norm
		met.HeadRows += len(x) * len(l.Outcome)
	}
	l.Published = l.Value.frozenCopy(headPublished)
	l.PolicyVersion, l.ValueVersion = in.Step, in.Step

	// Batch summaries.
	B := float64(len(in.Trajectories))
	var absSum, klSum, rewardSum float64
	var klN int
	for _, tr := range in.Trajectories {
		rewardSum += tr.Reward
		for _, s := range tr.Steps {
			met.Decisions++
			if s.Row.Legal() > 1 {
				met.BranchDecisions++
				absSum += math.Abs(s.DeltaL)
				if tr.Current {
					klSum += s.DeltaL
					klN++
				}
			}
		}
	}
	// Summed, then divided once: a sum of Reward/B terms can round past 1, which the
	// update_metrics table refuses (mean_reward ∈ [0, 1]); a sum of B rewards in [0, 1] cannot.
	if B > 0 {
		met.MeanReward = rewardSum / B
	}
	met.Trajectories = len(in.Trajectories)
	for _, ep := range res.Episodes {
		if ep.Trained {
			met.TrainedTrajectories++
		}
	}
	n := float64(met.TrainedTrajectories)
	for _, ep := range res.Episodes {
		if ep.Trained {
			met.Loss += ep.Loss / n
			met.LossRho += ep.LossRho / n
			met.LossAnchor += ep.LossAnchor / n
		}
	}
	if met.BranchDecisions > 0 {
		met.PolicyAbsLogRatio = absSum / float64(met.BranchDecisions)
	}
	if klN > 0 {
		met.PolicyKLCurrent = klSum / float64(klN)
	}
	met.Wall = time.Since(start)
	return res, nil
}

// lossAndGradient is steps 1–3 of Update without the optimizer step: the result (losses,
// coefficients, rescore check), the gradient of the batch-mean loss in the policy clip group's
// order, and every decision's residual input [h_ρ(s); f(s)].
func (l *Learner) lossAndGradient(e *Engine, in UpdateInput) (*UpdateResult, [][]float32, [][]float32, error) {
	o := l.opt
	rows, refs, err := flatten(in)
	if err != nil {
		return nil, nil, nil, err
	}
	anchorIdx := map[string]int{}
	if l.Anchors != nil {
		for i, t := range l.AnchorTasks {
			anchorIdx[t] = i
		}
		for b, tr := range in.Trajectories {
			if _, ok := anchorIdx[tr.Task]; !ok {
				return nil, nil, nil, fmt.Errorf("update: trajectory %d: task %q has no free anchor", b, tr.Task)
			}
		}
	}

	// 1. h_ρ, residuals and flows.
	resIn, err := l.residualInputs(e, rows, refs, in.Trajectories)
	if err != nil {
		return nil, nil, nil, err
	}
	res := newResult(in)
	met := &res.Metrics
	met.PolicyForwardRows += len(rows)
	resid := make([]float32, len(rows))
	if o.FlowCorrections {
		if resid, err = l.Residual.Predict(e, resIn); err != nil {
			return nil, nil, nil, err
		}
		met.HeadRows += len(rows)
	}
	k := 0
	for b, tr := range in.Trajectories {
		for t, s := range tr.Steps {
			c := s.Correction
			if !o.FlowCorrections {
				c = 0
			}
			var m float64
			if l.Anchors != nil {
				m = float64(l.Anchors.Value[anchorIdx[tr.Task]]) + c
			} else {
				m = math.Min(o.Beta, math.Max(0, tr.Anchor+c))
			}
			r := float64(resid[k])
			if !l.routesResidual(t) {
				r = 0
			}
			res.Steps[b][t] = StepCoefficient{Flow: r + m, Measured: m, Residual: r}
			k++
		}
	}

	// 2. Losses and coefficients.
	dDelta, dFlow := l.anchorTB(in.Trajectories, res)

	// 3. The policy gradient step.
	B := float64(len(in.Trajectories))
	cTheta, cResid := make([]float32, len(rows)), make([]float32, len(rows))
	var anchorGrad []float32
	if l.Anchors != nil {
		anchorGrad = make([]float32, len(l.Anchors.Value))
	}
	for i, ref := range refs {
		cTheta[i] = float32(dDelta[ref.Traj][ref.T] / B)
		if l.routesResidual(ref.T) {
			cResid[i] = float32(dFlow[ref.Traj][ref.T] / B)
		}
		if anchorGrad != nil {
			anchorGrad[anchorIdx[in.Trajectories[ref.Traj].Task]] += float32(dFlow[ref.Traj][ref.T] / B)
		}
	}
	grads, logpTheta, err := l.policyGradient(e, rows, refs, in.Trajectories, resIn, cTheta, cResid)
	if err != nil {
		return nil, nil, nil, err
	}
	l.countGradient(met, len(rows))
	if anchorGrad != nil {
		grads = append(grads, anchorGrad)
	}
	if err := checkRescore(met, logpTheta, refs, in.Trajectories); err != nil {
		return nil, nil, nil, err
	}
	return res, grads, resIn, nil
}

// flatten checks the batch and lists every decision's network row with its reference.
func flatten(in UpdateInput) ([]PolicyRow, []StateRef, error) {
	if len(in.Trajectories) == 0 {
		return nil, nil, errNoTrajectories
	}
	var rows []PolicyRow
	var refs []StateRef
	for b, tr := range in.Trajectories {
		if len(tr.Steps) == 0 {
			return nil, nil, fmt.Errorf("update: trajectory %d has no decisions", b)
		}
		if math.IsNaN(tr.Reward) || tr.Reward < 0 || tr.Reward > 1 {
			return nil, nil, fmt.Errorf("update: trajectory %d: reward %v outside [0, 1]", b, tr.Reward)
		}
		for t, s := range tr.Steps {
			if s.Chosen < 0 || s.Chosen >= s.Row.Legal() {
				return nil, nil, fmt.Errorf("update: trajectory %d decision %d: chosen %d of %d legal actions", b, t, s.Chosen, s.Row.Legal())
			}
			rows = append(rows, s.Row)
			refs = append(refs, StateRef{b, t})
		}
	}
	return rows, refs, nil
}

// newResult is an empty result shaped like the batch.
func newResult(in UpdateInput) *UpdateResult {
	res := &UpdateResult{Episodes: make([]EpisodeLoss, len(in.Trajectories)), Steps: make([][]StepCoefficient, len(in.Trajectories))}
	for b, tr := range in.Trajectories {
		res.Steps[b] = make([]StepCoefficient, len(tr.Steps))
	}
	return res
}

// checkRescore records the largest difference between log π_θ recomputed before the step and the
// scores file's, and fails when the scores were not computed with these parameters.
func checkRescore(met *UpdateMetrics, logpTheta []float64, refs []StateRef, trajs []Trajectory) error {
	for i, ref := range refs {
		met.RescoreMismatch = math.Max(met.RescoreMismatch, math.Abs(logpTheta[i]-trajs[ref.Traj].Steps[ref.T].LogpTheta))
	}
	if met.RescoreMismatch > MaxRescoreMismatch {
		return fmt.Errorf("update: log π_θ recomputed differs from the scores by %.3g (> %g): the scores were not computed with this checkpoint; rerun rescore", met.RescoreMismatch, MaxRescoreMismatch)
	}
	return nil
}

// countGradient records one policyGradient pass over n decisions (b_ψ's rows with it).
func (l *Learner) countGradient(met *UpdateMetrics, n int) {
	met.PolicyGradRows += n
	if l.opt.trainsResidual() {
		met.HeadRows += n
	}
}

// routesResidual reports whether b_ψ is part of F_t: not under the flow-corrections ablation,
// and not at the root when the root is hard-anchored.
func (l *Learner) routesResidual(t int) bool {
	return l.opt.FlowCorrections && !(l.opt.HardAnchorRoot && t == 0)
}

// residualInputs returns [h_ρ(s); f(s)] for every decision (the input of b_ψ and the outcome heads).
func (l *Learner) residualInputs(e *Engine, rows []PolicyRow, refs []StateRef, trajs []Trajectory) ([][]float32, error) {
	h, err := l.Policy.Encode(e, rows)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(rows))
	for i, ref := range refs {
		f := trajs[ref.Traj].Steps[ref.T].Features
		out[i] = append(append(make([]float32, 0, len(h[i])+FeatureWidth), h[i]...), f[:]...)
	}
	return out, nil
}

// anchorTB evaluates the loss of every trajectory three ways (with Δℓ; Δℓ = 0; Δℓ = 0 and
// b_ψ = 0) in float64 in O(T), fills res.Episodes and the coefficients, and returns ∂L_b/∂Δℓ_t
// and ∂L_b/∂F_t of the first way.
func (l *Learner) anchorTB(trajs []Trajectory, res *UpdateResult) (dDelta, dFlow [][]float64) {
	dDelta, dFlow = make([][]float64, len(trajs)), make([][]float64, len(trajs))
	for b, tr := range trajs {
		T := len(tr.Steps)
		flows, measured, delta := make([]float64, T), make([]float64, T), make([]float64, T)
		for t, s := range tr.Steps {
			flows[t], measured[t], delta[t] = res.Steps[b][t].Flow, res.Steps[b][t].Measured, s.DeltaL
		}
		term := LogRewardBeta(tr.Reward, l.opt.Beta)
		ep := EpisodeLoss{Trained: true}
		ep.Loss, dDelta[b], dFlow[b] = AnchorTB(flows, delta, term)
		zero := make([]float64, T)
		ep.LossRho, _, _ = AnchorTB(flows, zero, term)
		ep.LossAnchor, _, _ = AnchorTB(measured, zero, term)
		res.Episodes[b] = ep
		for t := range T {
			res.Steps[b][t].Coefficient = dDelta[b][t]
		}
	}
	return dDelta, dFlow
}

// policyGradient returns the gradient of J = Σ_d cTheta_d·log π_θ(a_d|s_d) + Σ_d cResid_d·b_ψ(x_d)
// with respect to the adapter and (when trained: AnchorTB, not ablated) b_ψ, in the policy clip
// group's order, and log π_θ(a_d|s_d) of every decision, in chunks of gradChunk decisions.
func (l *Learner) policyGradient(e *Engine, rows []PolicyRow, refs []StateRef, trajs []Trajectory, resIn [][]float32, cTheta, cResid []float32) ([][]float32, []float64, error) {
	if lm, ok := l.Policy.(*CausalLM); ok {
		return l.policyGradientLM(lm, e, rows, refs, trajs, resIn, cTheta, cResid)
	}
	return e.kernels().policyGradient(l, e, rows, refs, trajs, resIn, cTheta, cResid)
}

// policyGradientLM is policyGradient through the language model: the adapter's part from its
// teacher-forced gradient (CausalLM.gradient), b_ψ's from the plain-Go head.
func (l *Learner) policyGradientLM(lm *CausalLM, e *Engine, rows []PolicyRow, refs []StateRef, trajs []Trajectory, resIn [][]float32, cTheta, cResid []float32) ([][]float32, []float64, error) {
	chosen := make([]int, len(rows))
	for i, ref := range refs {
		chosen[i] = trajs[ref.Traj].Steps[ref.T].Chosen
	}
	grads, logp, err := lm.gradient(e, rows, chosen, cTheta)
	if err != nil {
		return nil, nil, fmt.Errorf("update: policy gradient: %w", err)
	}
	return l.withResidualGradient(grads, logp, resIn, cResid)
}

// withResidualGradient appends b_ψ's gradient, each row's output weighted by cResid, to the
// adapter's grads when b_ψ is trained.
func (l *Learner) withResidualGradient(grads [][]float32, logp []float64, resIn [][]float32, cResid []float32) ([][]float32, []float64, error) {
	if !l.opt.trainsResidual() {
		return grads, logp, nil
	}
	h := l.Residual
	if err := h.check(); err != nil {
		return nil, nil, err
	}
	x, err := packRows("residual input", resIn, h.In, len(resIn))
	if err != nil {
		return nil, nil, err
	}
	_, g := h.runNative(x, len(resIn), func(lo int, y []float32) []float32 { return cResid[lo : lo+len(y)] })
	return append(grads, h.splitGrad(g)...), logp, nil
}

// policyGradient is Learner.policyGradient on the graph path.
func (graphKernels) policyGradient(l *Learner, e *Engine, rows []PolicyRow, refs []StateRef, trajs []Trajectory, resIn [][]float32, cTheta, cResid []float32) ([][]float32, []float64, error) {
	p, h := l.Policy.(*PolicyNet), l.Residual
	withResid := l.opt.trainsResidual()
	nParams := len(p.Adapter)
	if withResid {
		nParams += 4
	}
	sums := make([][]float64, nParams)
	scale := p.Scale()
	key := fmt.Sprintf("policy/grad/%s/%s/%v", p.key(), h.key(), withResid)
	fn := func(x []*graph.Node) []*graph.Node {
		mask := graph.GreaterThan(x[3], graph.ScalarZero(x[3].Graph(), x[3].DType()))
		base, ad, rw := x[8:17], x[17:26], x[26:30]
		lt, _ := thetaLogits(x[0], x[1], x[2], base, ad, scale)
		picked := graph.ReduceSum(graph.Mul(maskedLogSoftmax(lt, mask), x[4]), 1) // [N]
		j := graph.ReduceAllSum(graph.Mul(picked, x[5]))
		wrt := ad
		if withResid {
			j = graph.Add(j, graph.ReduceAllSum(graph.Mul(headForward(x[6], rw, false), x[7])))
			wrt = append(append([]*graph.Node{}, ad...), rw...)
		}
		return append(graph.Gradient(j, wrt...), picked)
	}
	// Chunks of decisions with similar legal counts pad to small K; the gradient is a sum, so the
	// order is free (a stable sort keeps it deterministic).
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rows[a].Legal(), rows[b].Legal()) })
	logp := make([]float64, len(rows))
	for lo := 0; lo < len(order); lo += gradChunk {
		idx := order[lo:min(lo+gradChunk, len(order))]
		chunk, chunkIn := make([]PolicyRow, len(idx)), make([][]float32, len(idx))
		for k, i := range idx {
			chunk[k], chunkIn[k] = rows[i], resIn[i]
		}
		in, err := p.pack(chunk)
		if err != nil {
			return nil, nil, err
		}
		oh, ct, cr := make([]float32, in.rows*in.k), make([]float32, in.rows), make([]float32, in.rows)
		for k, i := range idx {
			ref := refs[i]
			oh[k*in.k+trajs[ref.Traj].Steps[ref.T].Chosen] = 1
			ct[k], cr[k] = cTheta[i], cResid[i]
		}
		ri, err := packRows("residual input", chunkIn, h.In, in.rows)
		if err != nil {
			return nil, nil, err
		}
		args := append(in.tensors(p.StateWidth), matrix(oh, in.rows, in.k), matrix(ct, in.rows), matrix(ri, in.rows, h.In), matrix(cr, in.rows))
		args = append(args, paramTensors(p.Base)...)
		args = append(args, paramTensors(p.Adapter)...)
		args = append(args, paramTensors(h.Params())...)
		out, err := e.run(key, fn, args...)
		if err != nil {
			return nil, nil, fmt.Errorf("update: policy gradient: %w", err)
		}
		for g := range nParams {
			if sums[g] == nil {
				sums[g] = make([]float64, len(out[g]))
			}
			for i, v := range out[g] {
				sums[g][i] += float64(v)
			}
		}
		for k, i := range idx {
			logp[i] = float64(out[nParams][k])
		}
	}
	grads := make([][]float32, nParams)
	for g, s := range sums {
		grads[g] = make([]float32, len(s))
		for i, v := range s {
			grads[g][i] = float32(v)
		}
	}
	return grads, logp, nil
}

// policyGradientNative is policyGradient on the CPU (native.go); b_ψ's part is the head's
// gradient with each row's output weighted by cResid.
func (l *Learner) policyGradientNative(rows []PolicyRow, refs []StateRef, trajs []Trajectory, resIn [][]float32, cTheta, cResid []float32) ([][]float32, []float64, error) {
	p, h := l.Policy.(*PolicyNet), l.Residual
	if err := p.check(); err != nil {
		return nil, nil, err
	}
	if _, err := p.checkRows(rows); err != nil {
		return nil, nil, fmt.Errorf("update: policy gradient: %w", err)
	}
	chosen, hRho := make([]int, len(rows)), make([][]float32, len(rows))
	for i, ref := range refs {
		chosen[i] = trajs[ref.Traj].Steps[ref.T].Chosen
		if len(resIn[i]) != h.In {
			return nil, nil, fmt.Errorf("update: policy gradient: residual input %d has %d values, want %d", i, len(resIn[i]), h.In)
		}
		hRho[i] = resIn[i][:p.EncoderDim]
	}
	grads, logp := p.gradientNative(rows, chosen, hRho, cTheta)
	return l.withResidualGradient(grads, logp, resIn, cResid)
}

// fitValue takes the value head's joint step on this step's states (its gradient weighted by
// value_head.loss_weight; skipped at weight 0), then fit_steps − 1 steps on the replay window.
func (l *Learner) fitValue(e *Engine, in UpdateInput, met *UpdateMetrics) error {
	o := l.opt
	heads := []*Head{l.Value}
	before, _, norm, err := FitMSE(e, heads, l.ValueGroup, o.Optimizer.GradClip, o.ValueLossWeight, in.ValueX, in.ValueY, 1)
	if err != nil {
		return err
	}
	met.ValueLoss, met.ValueGradNorm, met.ValueFitSteps, met.ValueStates = before[0], norm, 1, len(in.ValueX)
	if o.ValueLossWeight == 0 {
		met.ValueFitSteps = 0
	}
	met.HeadRows += len(in.ValueX) * met.ValueFitSteps
	if extra := o.ValueFitSteps - 1; extra > 0 && len(in.ReplayX) > 0 {
		_, after, _, err := FitMSE(e, heads, l.ValueGroup, o.Optimizer.GradClip, 1, in.ReplayX, in.ReplayY, extra)
		if err != nil {
			return err
		}
		met.ValueFitLoss, met.ValueFitStates = after[0], len(in.ReplayX)
		met.ValueFitSteps += extra
		met.HeadRows += len(in.ReplayX) * extra
	}
	return nil
}

// Encode returns h_ρ(s) of every row (the frozen encoder's output).
func (p *PolicyNet) Encode(e *Engine, batch []PolicyRow) ([][]float32, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return e.kernels().encode(p, e, batch)
}

// encode is Encode on the graph path.
func (graphKernels) encode(p *PolicyNet, e *Engine, batch []PolicyRow) ([][]float32, error) {
	out := make([][]float32, 0, len(batch))
	E, S := p.EncoderDim, p.StateWidth
	for lo := 0; lo < len(batch); lo += 4 * gradChunk {
		hi := min(lo+4*gradChunk, len(batch))
		rows := make([][]float32, hi-lo)
		for i := range rows {
			rows[i] = batch[lo+i].State
		}
		n := bucket(len(rows), 8)
		flat, err := packRows("policy net encode", rows, S, n)
		if err != nil {
			return nil, err
		}
		res, err := e.run("policy/encode/"+p.key(), func(x []*graph.Node) []*graph.Node {
			return []*graph.Node{encode(x[0], x[1:])}
		}, append([]any{matrix(flat, n, S)}, paramTensors(p.Base)...)...)
		if err != nil {
			return nil, fmt.Errorf("policy net encode: %w", err)
		}
		for i := range rows {
			out = append(out, res[0][i*E:(i+1)*E:(i+1)*E])
		}
	}
	return out, nil
}
