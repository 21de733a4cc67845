package gpu

import (
	"fmt"
	"sort"

	"github.com/evosteer/evosteer-go/internal/policy"
)

// objective is one training objective: the parameters of its own it adds to a new learner, the
// trajectories it trains on, and steps 1–3 of Update (losses, coefficients, gradients and the
// optimizer steps). Everything that differs between objectives is here; the value and outcome
// heads (step 4) are common.
type objective interface {
	// setUp adds the objective's own parameters to a new learner; table makes a per-task table
	// of the training tasks starting at v, resIn is the width of [h_ρ(s); f(s)].
	setUp(l *Learner, table func(name string, v float64) *Param, resIn int)
	// perTask reports whether the learner keeps a per-task table (so it needs the task ids).
	perTask(o LearnerOptions) bool
	// trainsResidual reports whether b_ψ is trained.
	trainsResidual(o LearnerOptions) bool
	// onPolicy reports an objective that trains on the current (π_θ) trajectories only.
	onPolicy() bool
	// update is steps 1–3 of Update; it returns every decision's [h_ρ(s); f(s)].
	update(l *Learner, e *Engine, in UpdateInput) (*UpdateResult, [][]float32, error)
}

// objectives is the registry of the objectives the update implements, by configuration name
// (config.Objectives; TestObjectivesMatchTheConfiguration keeps the two lists equal).
var objectives = map[string]objective{
	ObjectiveAnchorTB: anchorTB{},
	ObjectiveTB:       balance{tempered: false},
	ObjectiveTTB:      balance{tempered: true},
	ObjectivePPO:      surrogate{critic: true},
	ObjectiveGRPO:     surrogate{critic: false},
}

// ObjectiveNames lists the registered objectives, sorted.
func ObjectiveNames() []string {
	names := make([]string, 0, len(objectives))
	for n := range objectives {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// obj is the options' objective; an unknown name (config validation refuses it) is an error at
// NewLearner's caller, so here it panics with the name.
func (o LearnerOptions) obj() objective {
	ob, ok := objectives[o.objective()]
	if !ok {
		panic(fmt.Sprintf("gpu: unknown objective %q (known: %v)", o.objective(), ObjectiveNames()))
	}
	return ob
}

// anchorTB is the method: measured (or free) anchors, structure corrections, the residual b_ψ.
type anchorTB struct{}

func (anchorTB) setUp(l *Learner, table func(string, float64) *Param, _ int) {
	if !l.opt.MeasuredFlows {
		l.Anchors = table(freeAnchors, LogRewardBeta(l.opt.ColdStart, l.opt.Beta))
	}
}
func (anchorTB) perTask(o LearnerOptions) bool        { return !o.MeasuredFlows }
func (anchorTB) trainsResidual(o LearnerOptions) bool { return o.FlowCorrections }
func (anchorTB) onPolicy() bool                       { return false }
func (anchorTB) update(l *Learner, e *Engine, in UpdateInput) (*UpdateResult, [][]float32, error) {
	res, grads, resIn, err := l.lossAndGradient(e, in)
	if err != nil {
		return nil, nil, err
	}
	return l.oneStep(res, resIn, grads, in)
}

// oneStep takes the single optimizer step of AnchorTB, tb and ttb on the policy clip group.
func (l *Learner) oneStep(res *UpdateResult, resIn, grads [][]float32, in UpdateInput) (*UpdateResult, [][]float32, error) {
	var err error
	if res.Metrics.GradNorm, err = l.PolicyGroup.Apply(grads, l.opt.Optimizer.GradClip, l.taskRows(in.Trajectories)); err != nil {
		return nil, nil, err
	}
	res.Metrics.PolicySteps = 1
	return res, resIn, nil
}

// balance is trajectory balance (tb) and tempered trajectory balance (ttb): a per-task log Z,
// and for ttb a learned backward policy over action kinds.
type balance struct{ tempered bool }

func (b balance) setUp(l *Learner, table func(string, float64) *Param, _ int) {
	o := l.opt
	if !b.tempered {
		l.LogZ = table(logZName, LogRewardBeta(o.ColdStart, o.Beta))
		return
	}
	l.LogZ = table(logZName, TemperedLogReward(o.ColdStart, o.Comparison.TTBBeta, o.Comparison.TTBEpsilon))
	l.Backward = newParam(backwardName, true, len(policy.Kinds))
}
func (balance) perTask(LearnerOptions) bool        { return true }
func (balance) trainsResidual(LearnerOptions) bool { return false }
func (balance) onPolicy() bool                     { return false }
func (b balance) update(l *Learner, e *Engine, in UpdateInput) (*UpdateResult, [][]float32, error) {
	res, resIn, set, err := l.trainingSet(e, in, b)
	if err != nil {
		return nil, nil, err
	}
	grads, err := l.balanceGradient(e, in.Trajectories, set, res, b.tempered)
	if err != nil {
		return nil, nil, err
	}
	return l.oneStep(res, resIn, grads, in)
}

// surrogate is the clipped-surrogate objectives on the current trajectories: ppo with a learned
// critic, grpo with group-relative advantages.
type surrogate struct{ critic bool }

func (s surrogate) setUp(l *Learner, _ func(string, float64) *Param, resIn int) {
	if s.critic {
		l.Critic = NewHead(headCritic, resIn, l.opt.ResidualHidden, true, false, l.opt.Seed)
	}
}
func (surrogate) perTask(LearnerOptions) bool        { return false }
func (surrogate) trainsResidual(LearnerOptions) bool { return false }
func (surrogate) onPolicy() bool                     { return true }
func (s surrogate) update(l *Learner, e *Engine, in UpdateInput) (*UpdateResult, [][]float32, error) {
	res, resIn, set, err := l.trainingSet(e, in, s)
	if err != nil {
		return nil, nil, err
	}
	if err := l.surrogateSteps(e, in.Trajectories, set, res, s.critic); err != nil {
		return nil, nil, err
	}
	return res, resIn, nil
}
