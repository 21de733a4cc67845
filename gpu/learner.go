package gpu

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/evosteer/evosteer-go/internal/config"
)

// FeatureWidth is the width of f(s), the 30 execution features.
const FeatureWidth = 30

// Names of the learner's heads; parameter names start with them.
const (
	headResidual  = "residual"
	headValue     = "value"
	headPublished = "published_value"
	headOutcome1  = "outcome_1"
	headOutcome2  = "outcome_2"
	headCritic    = "critic"
	freeAnchors   = "anchors/free"
	logZName      = "objective/log_z"
	backwardName  = "objective/ttb_backward"
)

// Learner is everything the update stage trains and the rollout stage reads (METHOD.md §3.3):
// the policy (frozen base + adapter), the residual flow head b_ψ, the value head v̂ and the
// frozen snapshot of it that rollouts are shown, the two diagnostic outcome heads, the free task
// anchors of the measured-flows ablation, the extra parameters of a comparison objective, and
// the state of the gradient-clip groups of METHOD.md §4.6: (adapter + b_ψ + free anchors, or
// adapter + the objective's parameters), value head, outcome heads, and PPO's critic.
type Learner struct {
	Policy    PolicyModel
	Residual  *Head
	Value     *Head
	Published *Head
	Outcome   [2]*Head
	// Anchors holds one learned u_q per training task (measured-flows ablation), in the order of
	// AnchorTasks; nil otherwise.
	Anchors *Param
	// AnchorTasks are the sorted training task ids that label the per-task tables: Anchors and
	// LogZ.
	AnchorTasks []string
	// LogZ holds one learned log Z per training task (objectives tb and ttb), Backward the
	// backward policy's logits over policy.Kinds (ttb), Critic the state-value critic on
	// [h_ρ(s); f(s)] (ppo); nil under the other objectives.
	LogZ, Backward *Param
	Critic         *Head

	PolicyGroup, ValueGroup, OutcomeGroup *ClipGroup
	CriticGroup                           *ClipGroup // nil unless Critic is set
	PolicyVersion, ValueVersion           int64

	opt LearnerOptions
}

// LearnerOptions are the settings of the learner, read from the configuration.
type LearnerOptions struct {
	Policy          config.Policy
	StateWidth      int
	TaskTypes       int
	ValueHidden     int
	ResidualHidden  int
	Optimizer       config.Optimizer
	Beta            float64
	HardAnchorRoot  bool
	MeasuredFlows   bool // false: the measured-flows ablation (u_q learned per task)
	FlowCorrections bool // false: the flow-corrections ablation (c = 0 and b_ψ = 0)
	ValueFitSteps   int
	ValueLossWeight float64
	ColdStart       float64 // initial p̂ of a free anchor (and of log Z)
	Seed            uint64
	// Objective is the training objective (config.Objectives; "" means anchortb) and Comparison
	// the constants of the others. The AnchorTB ablations (measured flows, flow corrections,
	// hard root) only change anchortb.
	Objective  string
	Comparison config.Comparison
}

// Objective names (config.Objectives).
const (
	ObjectiveAnchorTB = "anchortb"
	ObjectiveTB       = "tb"
	ObjectiveTTB      = "ttb"
	ObjectivePPO      = "ppo"
	ObjectiveGRPO     = "grpo"
)

// objective is the training objective, AnchorTB by default.
func (o LearnerOptions) objective() string {
	if o.Objective == "" {
		return ObjectiveAnchorTB
	}
	return o.Objective
}

// NeedsTasks reports whether the learner keeps a per-task table (free anchors, log Z), so that
// NewLearner needs the training task ids.
func (o LearnerOptions) NeedsTasks() bool { return o.obj().perTask(o) }

// trainsResidual reports whether b_ψ is trained: AnchorTB without the flow-corrections ablation.
func (o LearnerOptions) trainsResidual() bool { return o.obj().trainsResidual(o) }

// OptionsFromConfig reads the learner's settings; stateWidth is policy.StateWidth of the task types.
func OptionsFromConfig(cfg *config.Config, stateWidth int) LearnerOptions {
	return LearnerOptions{
		Policy: cfg.Policy, StateWidth: stateWidth, TaskTypes: len(cfg.Families),
		ValueHidden: cfg.ValueHead.Hidden, ResidualHidden: cfg.ResidualHead.Hidden, Optimizer: cfg.Optimizer,
		Beta: cfg.AnchorTB.Beta, HardAnchorRoot: cfg.AnchorTB.HardAnchorRoot,
		MeasuredFlows: !cfg.Ablated("measured-flows"), FlowCorrections: !cfg.Ablated("flow-corrections"),
		ValueFitSteps: cfg.ValueHead.FitSteps, ValueLossWeight: cfg.ValueHead.LossWeight,
		ColdStart: cfg.Baselines.ColdStart, Seed: cfg.Seed, Objective: cfg.Objective, Comparison: cfg.Comparison,
	}
}

// NewLearner builds the step-0 learner: π_θ = ρ, b_ψ = 0, fresh heads, zero optimizer state;
// tasks are the training task ids (the per-task tables, see NeedsTasks). The objective's extra
// parameters start at: log Z_q = the objective's log reward of the cold-start rate (log R_β(p₀)
// for tb, β·log(p₀ + ε) for ttb, like a free anchor), a uniform backward policy, a fresh critic.
func NewLearner(o LearnerOptions, tasks []string) *Learner {
	return NewLearnerWith(o, tasks, NewPolicyNet(o.Policy, o.StateWidth, o.Seed))
}

// NewLearnerWith is NewLearner around a given policy (a *CausalLM, or a network built elsewhere):
// the heads read its h_ρ(s), HiddenWidth wide.
func NewLearnerWith(o LearnerOptions, tasks []string, pol PolicyModel) *Learner {
	l := &Learner{opt: o, Policy: pol}
	ri := pol.HiddenWidth() + FeatureWidth
	l.Residual = NewHead(headResidual, ri, o.ResidualHidden, false, true, o.Seed)
	l.Value = NewHead(headValue, FeatureWidth+o.TaskTypes, o.ValueHidden, true, false, o.Seed)
	l.Outcome = [2]*Head{NewHead(headOutcome1, ri, o.ResidualHidden, true, false, o.Seed),
		NewHead(headOutcome2, ri, o.ResidualHidden, true, false, o.Seed)}
	l.Published = l.Value.frozenCopy(headPublished)
	if o.NeedsTasks() {
		l.AnchorTasks = slices.Compact(slices.Sorted(slices.Values(tasks)))
	}
	table := func(name string, v float64) *Param {
		p := newParam(name, true, max(1, len(l.AnchorTasks)))
		for i := range p.Value {
			p.Value[i] = float32(v)
		}
		p.Steps = make([]int64, len(p.Value)) // a task's entry moves only in steps that hold the task
		return p
	}
	o.obj().setUp(l, table, ri)
	l.groups()
	return l
}

// groups (re)builds the three clip groups over the current parameters, keeping step counts.
func (l *Learner) groups() {
	ad, hd := AdapterAdamW(l.opt.Optimizer), HeadsAdamW(l.opt.Optimizer)
	steps := func(g *ClipGroup) int64 {
		if g == nil {
			return 0
		}
		return g.Step
	}
	pg := &ClipGroup{Name: "policy", Step: steps(l.PolicyGroup)}
	for _, p := range l.Policy.AdapterParams() {
		pg.Params, pg.Hyper = append(pg.Params, p), append(pg.Hyper, ad)
	}
	if l.opt.trainsResidual() {
		rd := ResidualAdamW(l.opt.Optimizer)
		for _, p := range l.Residual.Params() {
			pg.Params, pg.Hyper = append(pg.Params, p), append(pg.Hyper, rd)
		}
	}
	// Per-task scalars (the free anchors u_q of the measured-flows ablation, log Z of tb and
	// ttb) get their own learning rate: each task's entry is visited only when the task is
	// scheduled, and the heads' rate would leave it near its start (Malkin et al. 2022 use 0.1
	// for log Z).
	perTask := hd
	perTask.LR = l.opt.Comparison.LogZLR
	if l.Anchors != nil {
		pg.Params, pg.Hyper = append(pg.Params, l.Anchors), append(pg.Hyper, perTask)
	}
	if l.LogZ != nil {
		pg.Params, pg.Hyper = append(pg.Params, l.LogZ), append(pg.Hyper, perTask)
	}
	if l.Backward != nil {
		pg.Params, pg.Hyper = append(pg.Params, l.Backward), append(pg.Hyper, hd)
	}
	vg := &ClipGroup{Name: "value", Step: steps(l.ValueGroup)}
	for _, p := range l.Value.Params() {
		vg.Params, vg.Hyper = append(vg.Params, p), append(vg.Hyper, hd)
	}
	og := &ClipGroup{Name: "outcome", Step: steps(l.OutcomeGroup)}
	for _, h := range l.Outcome {
		for _, p := range h.Params() {
			og.Params, og.Hyper = append(og.Params, p), append(og.Hyper, hd)
		}
	}
	l.PolicyGroup, l.ValueGroup, l.OutcomeGroup = pg, vg, og
	if l.Critic != nil {
		cg := &ClipGroup{Name: "critic", Step: steps(l.CriticGroup)}
		for _, p := range l.Critic.Params() {
			cg.Params, cg.Hyper = append(cg.Params, p), append(cg.Hyper, hd)
		}
		l.CriticGroup = cg
	}
}

// frozenCopy is a copy of the head under another name, without optimizer state.
func (h *Head) frozenCopy(name string) *Head {
	c := h.Clone()
	c.Name = name
	for i, p := range c.Params() {
		p.Name = name + "/" + []string{"w1", "b1", "w2", "b2"}[i]
		p.M, p.V = nil, nil
	}
	return c
}

// Options returns the settings the learner was built with.
func (l *Learner) Options() LearnerOptions { return l.opt }

// LogRewardBeta is log R_β(r) = log(1 + (e^β − 1)·r): exactly 0 at r = 0 and β at r = 1. For
// β ≥ 700, where e^β overflows, it uses the equal form β + log(r + (1 − r)·e^{−β}).
func LogRewardBeta(r, beta float64) float64 {
	switch {
	case r == 0:
		return 0
	case r == 1:
		return beta
	case beta >= 700:
		return beta + math.Log(r+(1-r)*math.Exp(-beta))
	default:
		return math.Log1p(math.Expm1(beta) * r)
	}
}

// Params lists every parameter block of the learner, in a fixed order with unique names.
func (l *Learner) Params() []*Param {
	ps := l.Policy.Params()
	for _, h := range []*Head{l.Residual, l.Value, l.Published, l.Outcome[0], l.Outcome[1]} {
		ps = append(ps, h.Params()...)
	}
	for _, p := range []*Param{l.Anchors, l.LogZ, l.Backward} {
		if p != nil {
			ps = append(ps, p)
		}
	}
	if l.Critic != nil {
		ps = append(ps, l.Critic.Params()...)
	}
	return ps
}

// Counters are the learner's integer state: versions, clip-group step counts and the step
// count of every task's entry of the per-task tables (rowCounters).
func (l *Learner) Counters() map[string]int64 {
	c := map[string]int64{
		"policy_version": l.PolicyVersion, "value_version": l.ValueVersion,
		"steps/policy": l.PolicyGroup.Step, "steps/value": l.ValueGroup.Step, "steps/outcome": l.OutcomeGroup.Step,
	}
	if l.CriticGroup != nil {
		c["steps/critic"] = l.CriticGroup.Step
	}
	for name, ref := range l.rowCounters() {
		c[name] = ref.p.Steps[ref.i]
	}
	return c
}

// entry is entry i of block p.
type entry struct {
	p *Param
	i int
}

// rowCounters names the step count of each task's entry of the per-task tables:
// steps/<table>/<task>.
func (l *Learner) rowCounters() map[string]entry {
	out := map[string]entry{}
	for _, p := range []*Param{l.Anchors, l.LogZ} {
		if p != nil {
			for i, task := range l.AnchorTasks {
				out["steps/"+p.Name+"/"+task] = entry{p, i}
			}
		}
	}
	return out
}

// taskRows marks, for each per-task table, the entries of the tasks of trajs: the entries the
// step's gradient reaches, and the only ones its optimizer step moves (ClipGroup.Apply).
func (l *Learner) taskRows(trajs []Trajectory) map[*Param][]bool {
	rows := map[*Param][]bool{}
	for _, p := range []*Param{l.Anchors, l.LogZ} {
		if p == nil {
			continue
		}
		in := make([]bool, len(p.Value))
		for _, tr := range trajs {
			if i, ok := slices.BinarySearch(l.AnchorTasks, tr.Task); ok {
				in[i] = true
			}
		}
		rows[p] = in
	}
	return rows
}

// Restore loads saved parameters and counters into a learner built by NewLearner with the same
// options: every block must be present with the same dimensions, and nothing else; anchorTasks
// are the labels saved with the per-task tables.
func (l *Learner) Restore(saved []*Param, counters map[string]int64, anchorTasks []string) error {
	byName := map[string]*Param{}
	for _, p := range saved {
		if _, dup := byName[p.Name]; dup {
			return fmt.Errorf("restore: parameter %s appears twice", p.Name)
		}
		byName[p.Name] = p
	}
	if l.Anchors != nil || l.LogZ != nil {
		if !slices.Equal(anchorTasks, l.AnchorTasks) {
			return fmt.Errorf("restore: the checkpoint's %d per-task entries (free anchors, log Z) differ from the run's %d training tasks", len(anchorTasks), len(l.AnchorTasks))
		}
	}
	mine := l.Params()
	if len(saved) != len(mine) {
		return fmt.Errorf("restore: checkpoint has %d parameter blocks, the configuration needs %d", len(saved), len(mine))
	}
	for _, p := range mine {
		s, ok := byName[p.Name]
		if !ok {
			return fmt.Errorf("restore: checkpoint has no parameter %s", p.Name)
		}
		if !slices.Equal(s.Dims, p.Dims) {
			return fmt.Errorf("restore: parameter %s has dimensions %v, the configuration needs %v", p.Name, s.Dims, p.Dims)
		}
		if s.Trainable() != p.Trainable() {
			return fmt.Errorf("restore: parameter %s: optimizer state present %v, want %v", p.Name, s.Trainable(), p.Trainable())
		}
		if err := s.check(); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		copy(p.Value, s.Value)
		copy(p.M, s.M)
		copy(p.V, s.V)
	}
	// A checkpoint written before the per-task tables became row-sparse has no row counters:
	// its optimizer moved every entry in every step, so each entry's count is the group's.
	rowNames := l.rowCounters()
	legacy := len(rowNames) > 0
	for name := range rowNames {
		if _, ok := counters[name]; ok {
			legacy = false
		}
	}
	want := l.Counters()
	for k := range want {
		if _, row := rowNames[k]; row && legacy {
			continue
		}
		v, ok := counters[k]
		if !ok || v < 0 {
			return fmt.Errorf("restore: checkpoint has no valid counter %s", k)
		}
	}
	if n := len(want); len(counters) != n && !(legacy && len(counters) == n-len(rowNames)) {
		return fmt.Errorf("restore: checkpoint has %d counters, want %d", len(counters), n)
	}
	l.PolicyVersion, l.ValueVersion = counters["policy_version"], counters["value_version"]
	l.PolicyGroup.Step, l.ValueGroup.Step, l.OutcomeGroup.Step = counters["steps/policy"], counters["steps/value"], counters["steps/outcome"]
	if l.CriticGroup != nil {
		l.CriticGroup.Step = counters["steps/critic"]
	}
	for _, p := range []*Param{l.Anchors, l.LogZ} {
		if p != nil && legacy {
			for i := range p.Steps {
				p.Steps[i] = l.PolicyGroup.Step
			}
		}
	}
	for name, ref := range rowNames {
		if !legacy {
			ref.p.Steps[ref.i] = counters[name]
		}
	}
	return nil
}

// ValueInput is the published value head's input for a state: [f; task-type one-hot].
func ValueInput(features [FeatureWidth]float32, oneHot []float32) []float32 {
	return append(append(make([]float32, 0, FeatureWidth+len(oneHot)), features[:]...), oneHot...)
}

var errNoTrajectories = errors.New("update: no trajectories")
