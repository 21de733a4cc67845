package exact

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/seed"
)

// Point is one step's exact measurement, averaged over the tasks (step 0: before training).
type Point struct {
	Step int
	// TV is the total variation between θ's terminal distribution and P* ∝ ρ·R_β; TVRho the
	// same for ρ (the distance training has to cover).
	TV, TVRho float64
	// TVKL is the total variation between θ's terminal distribution and P_KL ∝ ρ·exp(E[log R_β]),
	// AnchorTB's and TB's fixed point when rewards are noisy (World.TargetKL), TVKLRho the same for
	// ρ; they equal TV and TVRho when rewards are deterministic.
	TVKL, TVKLRho float64
	// MissMax is the probability θ gives to histories whose expected reward is below the task's best.
	MissMax float64
	// Expected reward under θ, P*, ρ and the best history (of the best expected reward).
	RewardTheta, RewardTarget, RewardRho, RewardMax float64
	// Loss and LossRho are the update's batch means (its loss, and with every Δℓ = 0); 0 at step 0.
	Loss, LossRho float64
	// GradNorm and AbsLogRatio are the update's policy gradient norm before the clip and mean
	// |Δℓ| over the batch's branch decisions; 0 at step 0.
	GradNorm, AbsLogRatio float64
}

// Train trains a fresh learner of cfg (World.NewLearner: the network or the language model,
// optimizer, objective, β, ablations) for steps steps on the world and measures it exactly after
// every step. Each step plays, per task, cfg.Batch.CurrentRollouts π_θ and
// cfg.Batch.ReferenceRollouts ρ episodes; every task is in every batch. A task's measured anchor
// is log R_β(p̂) with p̂ its ρ episodes' mean reward shrunk toward baselines.cold_start by
// baselines.kappa_task pseudo-counts (the last level of the aggregate stage's shrinkage). Since
// R_β is affine in r, log R_β(E_ρ[r]) is the log partition function of P*, so the anchor
// converges to P*'s exact normaliser. progress, when not nil, sees every point.
func Train(ctx context.Context, e *gpu.Engine, w *World, cfg *config.Config, steps int, progress func(Point)) ([]Point, error) {
	if steps < 0 {
		return nil, fmt.Errorf("exact world: negative steps %d", steps)
	}
	l, err := w.NewLearner(cfg)
	if err != nil {
		return nil, err
	}
	s := seed.Derive(cfg.Seed, "exact", "episodes")
	rng := rand.New(rand.NewPCG(s, s^0x6578616374))
	beta := cfg.AnchorTB.Beta
	refSum, refCount := make([]float64, w.Tasks()), make([]float64, w.Tasks())

	tab, err := w.score(e, l)
	if err != nil {
		return nil, err
	}
	rho := w.terminal(tab, false)
	pt := w.measure(0, w.terminal(tab, true), rho, beta)
	points := []Point{pt}
	if progress != nil {
		progress(pt)
	}
	for step := 1; step <= steps; step++ {
		if err := ctx.Err(); err != nil {
			return points, err
		}
		var trajs []gpu.Trajectory
		for q := range w.Tasks() {
			var eps []gpu.Trajectory
			for i := range cfg.Batch.CurrentRollouts + cfg.Batch.ReferenceRollouts {
				current := i < cfg.Batch.CurrentRollouts
				tr, err := w.play(q, tab, current, rng)
				if err != nil {
					return points, fmt.Errorf("exact world: step %d: %w", step, err)
				}
				if !current {
					refSum[q] += tr.Reward
					refCount[q]++
				}
				eps = append(eps, tr)
			}
			k := cfg.Baselines.KappaTask
			p := (refSum[q] + k*cfg.Baselines.ColdStart) / (refCount[q] + k)
			for i := range eps {
				eps[i].Anchor = gpu.LogRewardBeta(p, beta)
			}
			trajs = append(trajs, eps...)
		}
		res, err := l.Update(e, gpu.UpdateInput{Trajectories: trajs, Step: int64(step)})
		if err != nil {
			return points, fmt.Errorf("exact world: step %d: %w", step, err)
		}
		if tab, err = w.score(e, l); err != nil {
			return points, err
		}
		pt := w.measure(step, w.terminal(tab, true), rho, beta)
		m := res.Metrics
		pt.Loss, pt.LossRho, pt.GradNorm, pt.AbsLogRatio = m.Loss, m.LossRho, m.GradNorm, m.PolicyAbsLogRatio
		points = append(points, pt)
		if progress != nil {
			progress(pt)
		}
	}
	return points, nil
}

// NewLearner is the step-0 learner Train trains on w: cfg's compact network, or with policy.kind
// causal_lm a Qwen3 model read from policy.causal_lm.model with a fresh adapter (seeded by
// cfg.Seed, B = 0), whose rows then carry the decisions' texts and whose ρ — the model with its
// adapter off — is the ρ that the episodes, the anchors and P* ∝ ρ·R_β are computed from (the
// world's built-in prior, which the rows still carry, is not read). A served reference is refused
// with the language model, as the configuration refuses it: ρ is the model itself.
func (w *World) NewLearner(cfg *config.Config) (*gpu.Learner, error) {
	opts := gpu.OptionsFromConfig(cfg, w.StateWidth())
	opts.TaskTypes = w.Families
	ids := make([]string, w.Tasks())
	for q := range ids {
		ids[q] = w.TaskID(q)
	}
	if !cfg.Policy.IsCausalLM() {
		return gpu.NewLearner(opts, ids), nil
	}
	if w.served != nil {
		return nil, fmt.Errorf("exact world: a served reference cannot be ρ with policy.kind causal_lm: ρ is the language model with its adapter off")
	}
	lm, err := gpu.OpenCausalLM(cfg.Policy, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("exact world: %w", err)
	}
	return gpu.NewLearnerWith(opts, ids, lm), nil
}

// table holds, per task, every state's row and log-probabilities under θ and ρ, in the order of
// World.states.
type table struct {
	rows       [][]gpu.PolicyRow
	theta, rho [][][]float32
}

func (w *World) index(s state) int {
	switch s.kind {
	case atStart:
		return 0
	case afterAgent:
		return 1 + 3*s.role
	}
	return 1 + 3*s.role + s.second
}

// score scores every state of every task with the learner's policy; the rows carry the decisions'
// texts when the policy is a language model. A forced state (one legal action) is not scored:
// its action's log-probability is 0 under θ and ρ alike.
func (w *World) score(e *gpu.Engine, l *gpu.Learner) (*table, error) {
	_, reads := l.Policy.(*gpu.CausalLM)
	var choice []gpu.PolicyRow
	t := &table{}
	for q := range w.Tasks() {
		var rows []gpu.PolicyRow
		for _, s := range w.states(q) {
			r := w.row(s)
			if reads {
				r.Text = w.text(s)
			}
			rows = append(rows, r)
			if r.Legal() > 1 {
				choice = append(choice, r)
			}
		}
		t.rows = append(t.rows, rows)
	}
	sc, err := l.Policy.Score(e, choice)
	if err != nil {
		return nil, fmt.Errorf("exact world: score: %w", err)
	}
	k := 0
	for q := range w.Tasks() {
		theta, rho := make([][]float32, len(t.rows[q])), make([][]float32, len(t.rows[q]))
		for i, r := range t.rows[q] {
			if r.Legal() == 1 {
				theta[i], rho[i] = []float32{0}, []float32{0}
				continue
			}
			theta[i], rho[i] = sc.Theta[k], sc.Rho[k]
			k++
		}
		t.theta, t.rho = append(t.theta, theta), append(t.rho, rho)
	}
	return t, nil
}

// play samples one episode of task q from θ (current) or ρ, as the rollout stage records it.
func (w *World) play(q int, t *table, current bool, rng *rand.Rand) (gpu.Trajectory, error) {
	tr := gpu.Trajectory{Task: w.TaskID(q), Current: current}
	s := state{task: q, kind: atStart}
	for {
		i := w.index(s)
		lt, lr := t.theta[q][i], t.rho[q][i]
		behaviour := lr
		if current {
			behaviour = lt
		}
		a, err := policy.Sample(toFloat64(behaviour), rng)
		if err != nil {
			return tr, fmt.Errorf("task %s: %w", tr.Task, err)
		}
		tr.Steps = append(tr.Steps, gpu.Step{Row: t.rows[q][i], Chosen: a, Features: w.features(s),
			DeltaL: float64(lt[a]) - float64(lr[a]), LogpTheta: float64(lt[a]), LogpBehavior: float64(behaviour[a]), Tokens: 1})
		switch {
		case s.kind == atStart && a == 0:
			tr.Reward = w.draw(q, 0, rng)
			return tr, nil
		case s.kind == atStart:
			s = state{task: q, kind: afterAgent, role: a - 1}
		case s.kind == afterAgent && a != secondStop:
			s = state{task: q, kind: afterSecond, role: s.role, second: a}
		default:
			tr.Reward = w.draw(q, 1+s.role*seconds+s.second, rng)
			return tr, nil
		}
	}
}

func toFloat64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// terminal returns each task's distribution over its histories under θ (theta) or ρ.
func (w *World) terminal(t *table, theta bool) [][]float64 {
	out := make([][]float64, w.Tasks())
	for q := range out {
		out[q] = make([]float64, w.Histories())
		for i := range out[q] {
			ss, as := w.path(q, i)
			lp := 0.0
			for k, s := range ss {
				lps := t.rho[q][w.index(s)]
				if theta {
					lps = t.theta[q][w.index(s)]
				}
				lp += float64(lps[as[k]])
			}
			out[q][i] = math.Exp(lp)
		}
	}
	return out
}

// Target returns P*(·|q) ∝ ρ(·|q)·E[R_β | q, ·] for every task, given ρ's terminal distributions.
// R_β of a binary reward is affine in it, so E[R_β] = R_β(E[r]).
func (w *World) Target(rho [][]float64, beta float64) [][]float64 {
	return w.tilt(rho, func(q, i int) float64 { return gpu.LogRewardBeta(w.success[q][i], beta) })
}

// TargetKL returns P_KL(·|q) ∝ ρ(·|q)·exp(E[log R_β | q, ·]) = ρ·exp(β·E[r]), the maximiser of
// E_θ[β·r] − KL(θ‖ρ). AnchorTB and TB regress toward log R_β of sampled rewards, so with noisy
// rewards their expected loss is that of the deterministic world whose log R_β is E[log R_β]:
// P_KL is their fixed point. It equals P* when the reward is deterministic.
func (w *World) TargetKL(rho [][]float64, beta float64) [][]float64 {
	return w.tilt(rho, func(q, i int) float64 { return beta * w.success[q][i] })
}

// tilt returns ρ·exp(logWeight) normalised per task.
func (w *World) tilt(rho [][]float64, logWeight func(q, i int) float64) [][]float64 {
	out := make([][]float64, len(rho))
	for q, p := range rho {
		out[q] = make([]float64, len(p))
		z := 0.0
		for i, x := range p {
			out[q][i] = x * math.Exp(logWeight(q, i))
			z += out[q][i]
		}
		for i := range out[q] {
			out[q][i] /= z
		}
	}
	return out
}

// measure compares θ's terminal distributions with P*, P_KL and the reward maximum.
func (w *World) measure(step int, theta, rho [][]float64, beta float64) Point {
	target, kl := w.Target(rho, beta), w.TargetKL(rho, beta)
	pt := Point{Step: step}
	n := float64(w.Tasks())
	for q := range theta {
		best := 0.0
		for _, r := range w.success[q] {
			best = math.Max(best, r)
		}
		var tv, tvKL, tvRho, tvKLRho, miss float64
		for i, r := range w.success[q] {
			tv += math.Abs(theta[q][i]-target[q][i]) / 2
			tvKL += math.Abs(theta[q][i]-kl[q][i]) / 2
			tvRho += math.Abs(rho[q][i]-target[q][i]) / 2
			tvKLRho += math.Abs(rho[q][i]-kl[q][i]) / 2
			if r < best {
				miss += theta[q][i]
			}
			pt.RewardTheta += theta[q][i] * r / n
			pt.RewardTarget += target[q][i] * r / n
			pt.RewardRho += rho[q][i] * r / n
		}
		pt.TV += tv / n
		pt.TVKL += tvKL / n
		pt.TVRho += tvRho / n
		pt.TVKLRho += tvKLRho / n
		pt.MissMax += miss / n
		pt.RewardMax += best / n
	}
	return pt
}
