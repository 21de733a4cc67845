package gpu

import (
	"fmt"

	"github.com/evosteer/evosteer-go/internal/policy"
)

// trainSet is the decisions an objective trains on, trajectory by trajectory in batch order
// (each trajectory's decisions contiguous, t ascending), with their network rows and
// [h_ρ(s); f(s)] inputs; trajs lists the trained trajectories.
type trainSet struct {
	trajs []int
	rows  []PolicyRow
	refs  []StateRef
	resIn [][]float32
}

// The comparison objectives' steps 1–3 (objective.go: balance, surrogate), from objectives.go's
// per-trajectory losses and coefficients in float64, routed through ∇log π_θ by policyGradient,
// with the gradients of the objective's own parameters and the optimizer steps. tb and ttb train
// on every trajectory and take one step, like AnchorTB; ppo and grpo train on the current (π_θ)
// trajectories only and take comparison.epochs steps, re-scoring π_θ before each later one, with
// advantages fixed before the first (ppo's critic is fitted after the policy, the same number of
// steps). Losses and coefficients are those of the first pass, at the parameters before the
// update.

// trainingSet checks the batch, computes every decision's [h_ρ(s); f(s)], and selects the
// trajectories the objective trains on (marked Trained in the returned result).
func (l *Learner) trainingSet(e *Engine, in UpdateInput, ob objective) (*UpdateResult, [][]float32, trainSet, error) {
	var set trainSet
	rows, refs, err := flatten(in)
	if err != nil {
		return nil, nil, set, err
	}
	resIn, err := l.residualInputs(e, rows, refs, in.Trajectories)
	if err != nil {
		return nil, nil, set, err
	}
	res := newResult(in)
	res.Metrics.PolicyForwardRows += len(rows)
	for b, tr := range in.Trajectories {
		if !ob.onPolicy() || tr.Current {
			set.trajs = append(set.trajs, b)
			res.Episodes[b].Trained = true
		}
	}
	if len(set.trajs) == 0 {
		return nil, nil, set, fmt.Errorf("update: objective %s trains on current (π_θ) episodes and the step has no healthy one", l.opt.objective())
	}
	for i, ref := range refs {
		if res.Episodes[ref.Traj].Trained {
			set.rows, set.refs, set.resIn = append(set.rows, rows[i]), append(set.refs, ref), append(set.resIn, resIn[i])
		}
	}
	return res, resIn, set, nil
}

// balanceGradient is tb's or ttb's step before the optimizer: per trajectory the loss at the
// scores' log-probabilities, the reference level (π_θ replaced by ρ) and the coefficients, and
// the gradient of the batch-mean loss in the policy clip group's order (adapter, log Z, and the
// backward logits under ttb).
func (l *Learner) balanceGradient(e *Engine, trajs []Trajectory, set trainSet, res *UpdateResult, tempered bool) ([][]float32, error) {
	o := l.opt
	task := make(map[string]int, len(l.AnchorTasks))
	for i, t := range l.AnchorTasks {
		task[t] = i
	}
	B := float64(len(set.trajs))
	gZ := make([]float32, len(l.LogZ.Value))
	var w, gW []float64
	if l.Backward != nil {
		w, gW = make([]float64, len(l.Backward.Value)), make([]float64, len(l.Backward.Value))
		for i, v := range l.Backward.Value {
			w[i] = float64(v)
		}
	}
	for _, b := range set.trajs {
		tr := trajs[b]
		q, ok := task[tr.Task]
		if !ok {
			return nil, fmt.Errorf("update: trajectory %d: task %q has no log Z (not a training task)", b, tr.Task)
		}
		logZ := float64(l.LogZ.Value[q])
		T := len(tr.Steps)
		ep := &res.Episodes[b]
		var coef []float64
		var dZ float64
		if !tempered {
			delta := make([]float64, T)
			for t, s := range tr.Steps {
				delta[t] = s.DeltaL
			}
			term := LogRewardBeta(tr.Reward, o.Beta)
			ep.Loss, coef, dZ = TBLoss(logZ, delta, term)
			ep.LossRho, _, _ = TBLoss(logZ, make([]float64, T), term)
		} else {
			logp, logpRho, kinds, norm := make([]float64, T), make([]float64, T), make([]int, T), make([]float64, T)
			for t, s := range tr.Steps {
				k, err := chosenKind(s)
				if err != nil {
					return nil, fmt.Errorf("update: trajectory %d decision %d: %w", b, t, err)
				}
				if s.Tokens < 1 {
					return nil, fmt.Errorf("update: trajectory %d decision %d: the action has %d tokens; ttb normalises by its token count", b, t, s.Tokens)
				}
				logp[t], logpRho[t], kinds[t], norm[t] = s.LogpTheta, s.LogpTheta-s.DeltaL, k, float64(s.Tokens)
			}
			term := TemperedLogReward(tr.Reward, o.Comparison.TTBBeta, o.Comparison.TTBEpsilon)
			var dW []float64
			ep.Loss, coef, dZ, dW = TTBLoss(logZ, logp, kinds, norm, w, term)
			ep.LossRho, _, _, _ = TTBLoss(logZ, logpRho, kinds, norm, w, term)
			for j := range gW {
				gW[j] += dW[j] / B
			}
		}
		ep.LossAnchor = ep.LossRho
		gZ[q] += float32(dZ / B)
		for t := range coef {
			res.Steps[b][t].Coefficient = coef[t]
		}
		res.Steps[b][0].Flow, res.Steps[b][0].Residual = logZ, logZ
	}
	extra := [][]float32{gZ}
	if gW != nil {
		g := make([]float32, len(gW))
		for j, v := range gW {
			g[j] = float32(v)
		}
		extra = append(extra, g)
	}
	coefs := make([]float64, len(set.refs))
	for i, ref := range set.refs {
		coefs[i] = res.Steps[ref.Traj][ref.T].Coefficient
	}
	grads, err := l.trainGradient(e, trajs, set, coefs, B, &res.Metrics, true)
	if err != nil {
		return nil, err
	}
	return append(grads, extra...), nil
}

// surrogateSteps takes the ppo or grpo steps: advantages from the critic before the update (ppo,
// A_t = r − V(s_t)) or from the task's group of current rollouts (grpo), then comparison.epochs
// passes, each scoring π_θ at the current parameters (the first from the scores file), computing
// the clipped-surrogate coefficients against the behaviour log-probabilities and stepping the
// policy group; ppo then fits the critic to the returns.
func (l *Learner) surrogateSteps(e *Engine, trajs []Trajectory, set trainSet, res *UpdateResult, critic bool) error {
	o, met := l.opt, &res.Metrics
	c := o.Comparison
	adv := make(map[int][]float64, len(set.trajs))
	var groupAdv map[int]float64
	if critic {
		v, err := l.Critic.Predict(e, set.resIn)
		if err != nil {
			return err
		}
		met.HeadRows += len(set.resIn)
		for i, ref := range set.refs {
			a := trajs[ref.Traj].Reward - float64(v[i])
			adv[ref.Traj] = append(adv[ref.Traj], a)
			st := &res.Steps[ref.Traj][ref.T]
			st.Flow, st.Residual = float64(v[i]), float64(v[i])
		}
	} else {
		groupAdv = grpoAdvantages(trajs, set.trajs, res)
	}
	logp, logpRho := make([]float64, len(set.refs)), make([]float64, len(set.refs))
	for i, ref := range set.refs {
		s := trajs[ref.Traj].Steps[ref.T]
		logp[i], logpRho[i] = s.LogpTheta, s.LogpTheta-s.DeltaL
	}
	B := float64(len(set.trajs))
	for epoch := range c.Epochs {
		if epoch > 0 {
			sc, err := l.Policy.Score(e, set.rows)
			if err != nil {
				return err
			}
			met.PolicyForwardRows += len(set.rows)
			for i, ref := range set.refs {
				ch := trajs[ref.Traj].Steps[ref.T].Chosen
				logp[i], logpRho[i] = float64(sc.Theta[i][ch]), float64(sc.Rho[i][ch])
			}
		}
		coefs, k := make([]float64, len(set.refs)), 0
		for _, b := range set.trajs {
			T := len(trajs[b].Steps)
			lp, lr, old := logp[k:k+T], logpRho[k:k+T], make([]float64, T)
			for t, s := range trajs[b].Steps {
				old[t] = s.LogpBehavior
			}
			var loss, lossRho float64
			var coef []float64
			if groupAdv == nil {
				loss, coef = PPOLoss(lp, old, adv[b], c.Clip)
				lossRho, _ = PPOLoss(lr, old, adv[b], c.Clip)
			} else {
				loss, coef = GRPOLoss(lp, old, lr, groupAdv[b], c.Clip, c.GRPOKL)
				lossRho, _ = GRPOLoss(lr, old, lr, groupAdv[b], c.Clip, c.GRPOKL)
			}
			copy(coefs[k:], coef)
			k += T
			if epoch == 0 {
				ep := &res.Episodes[b]
				ep.Loss, ep.LossRho, ep.LossAnchor = loss, lossRho, lossRho
				for t := range coef {
					res.Steps[b][t].Coefficient = coef[t]
				}
			}
		}
		grads, err := l.trainGradient(e, trajs, set, coefs, B, met, epoch == 0)
		if err != nil {
			return err
		}
		norm, err := l.PolicyGroup.Apply(grads, o.Optimizer.GradClip, nil)
		if err != nil {
			return fmt.Errorf("update: epoch %d: %w", epoch, err)
		}
		if epoch == 0 {
			met.GradNorm = norm
		}
		met.PolicySteps++
	}
	if l.Critic == nil {
		return nil
	}
	y := make([]float32, len(set.refs))
	for i, ref := range set.refs {
		y[i] = float32(trajs[ref.Traj].Reward)
	}
	before, _, norm, err := FitMSE(e, []*Head{l.Critic}, l.CriticGroup, o.Optimizer.GradClip, 1, set.resIn, y, c.Epochs)
	if err != nil {
		return err
	}
	met.CriticLoss, met.CriticGradNorm = before[0], norm
	met.HeadRows += len(set.resIn) * c.Epochs
	return nil
}

// trainGradient routes per-trajectory coefficients (one per decision of the training set,
// divided by the B trained trajectories: the batch mean) through ∇log π_θ, and on the first pass
// checks the recomputed log π_θ against the scores.
func (l *Learner) trainGradient(e *Engine, trajs []Trajectory, set trainSet, coefs []float64, B float64, met *UpdateMetrics, first bool) ([][]float32, error) {
	cTheta := make([]float32, len(set.refs))
	for i, c := range coefs {
		cTheta[i] = float32(c / B)
	}
	grads, logp, err := l.policyGradient(e, set.rows, set.refs, trajs, set.resIn, cTheta, make([]float32, len(set.refs)))
	if err != nil {
		return nil, err
	}
	l.countGradient(met, len(set.rows))
	if first {
		if err := checkRescore(met, logp, set.refs, trajs); err != nil {
			return nil, err
		}
	}
	return grads, nil
}

// grpoAdvantages groups the trained (current) trajectories by task and returns each one's
// group-relative advantage, recording the group's mean reward as the flow of its decisions.
func grpoAdvantages(trajs []Trajectory, trained []int, res *UpdateResult) map[int]float64 {
	groups := map[string][]int{}
	var order []string
	for _, b := range trained {
		q := trajs[b].Task
		if _, ok := groups[q]; !ok {
			order = append(order, q)
		}
		groups[q] = append(groups[q], b)
	}
	out := make(map[int]float64, len(trained))
	for _, q := range order {
		g := groups[q]
		r := make([]float64, len(g))
		var mean float64
		for i, b := range g {
			r[i] = trajs[b].Reward
			mean += r[i] / float64(len(g))
		}
		for i, a := range GroupAdvantages(r) {
			out[g[i]] = a
			for t := range res.Steps[g[i]] {
				st := &res.Steps[g[i]][t]
				st.Flow, st.Measured = mean, mean
			}
		}
	}
	return out
}

// chosenKind is the index in policy.Kinds of the chosen action's kind, read from its descriptor's
// kind one-hot.
func chosenKind(s Step) (int, error) {
	off := s.Chosen * policy.ActionWidth
	if off+len(policy.Kinds) > len(s.Row.Actions) {
		return 0, fmt.Errorf("chosen action %d has no descriptor", s.Chosen)
	}
	for k := range policy.Kinds {
		if s.Row.Actions[off+k] == 1 {
			return k, nil
		}
	}
	return 0, fmt.Errorf("chosen action %d's descriptor has no kind", s.Chosen)
}
