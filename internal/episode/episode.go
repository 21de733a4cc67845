package episode

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/cpuslot"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/executor/openai"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/textrules"
	"github.com/evosteer/evosteer-go/schema"
)

// errForcedIllegal: a paired arm's forced first action is not among the legal actions (its role
// cannot run within the budget, or the skill is not on the menu).
var errForcedIllegal = errors.New("forced first action not legal")

// maxDecisions guards against a policy that never stops; the budget normally ends an episode
// far sooner, since every sampled decision is charged its controller prompt.
const maxDecisions = 400

// env is what every episode of the stage shares.
type env struct {
	exec     executor.Executor
	options  orchestra.Options // Menu is set per job
	families []string
	ref      reference // ρ's logits of every decision
	// batches scores the network episodes' questions; useValue shows them the published value
	// head (false: the value-head ablation); zeroFeatures zeroes f(s) in the policy input (the
	// execution-features ablation).
	batches                     *batches
	useValue, zeroFeatures      bool
	policyVersion, valueVersion int64
	// temperature is policy.temperature: a network decision samples from its log-probabilities
	// divided by it and renormalised (policy.Temper), and records that distribution's
	// log-probability of the choice as the behaviour log-probability.
	temperature float64
	// cpu bounds the episodes doing CPU work (deciding, executing tools, grading) at once; an
	// episode gives its slot back while it waits for a network batch or on a server.
	cpu *cpuslot.Pool
	// finished, when set, is told each episode as it finishes (PlayKeeping).
	finished func(i int, p Played) error
}

// ask gives the episode's slot back while the question waits for its batch.
func (e *env) ask(ctx context.Context, q *question) error {
	defer cpuslot.Wait(ctx)()
	return e.batches.ask(q)
}

// run plays one episode to its end. Errors of the world (an executor or grader failure) make
// the episode unhealthy with the reason, never the stage fail; only a bug in the pipeline
// itself (a policy or network error) is returned.
func (e *env) run(ctx context.Context, j Job) (*Played, error) {
	started.Add(1)
	network := j.Script == nil
	ctx, release := e.cpu.Hold(ctx)
	defer release()
	out := &Played{Episode: schema.EpisodeRow{EpisodeID: j.ID, TaskID: j.Task.ID, Family: j.Task.Family, TaskType: j.Task.TaskType,
		Split: j.Task.Split, Source: j.Source, Seed: j.Seed, Healthy: true, MenuID: j.Menu.ID}}
	if j.Pair != nil {
		out.Episode.PairID, out.Episode.ComparisonID, out.Episode.CandidateSkillID = &j.Pair.PairID, &j.Pair.ComparisonID, &j.Pair.SkillID
	}
	if network {
		out.Episode.PolicyVersion, out.Episode.ValueVersion = e.policyVersion, e.valueVersion
	}
	unhealthy := func(reason string) {
		out.Episode.Healthy, out.Episode.UnhealthyReason = false, &reason
	}
	sess, err := e.exec.Begin(ctx, j.Task, j.Seed)
	if err != nil {
		unhealthy("begin episode: " + err.Error())
		return out, nil
	}
	opts := e.options
	opts.Menu = j.Menu.Skills
	if b, ok := j.Script.(policy.Barer); ok && b.Bare() {
		opts.Bare = true
	}
	rt := orchestra.New(j.Task, sess, j.Seed, opts)
	showValue := network && e.useValue
	var previous float64 // the estimate shown at the previous decision
	for t := 0; !rt.Stopped(); t++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if t == maxDecisions {
			unhealthy(fmt.Sprintf("no STOP after %d decisions", maxDecisions))
			break
		}
		legal := rt.Legal()
		if len(legal) == 0 {
			unhealthy("no legal action: the budget cannot run any agent")
			break
		}
		// The episode's requests of this decision go before those of episodes that have made
		// fewer decisions (openai.WithPriority): work in progress finishes first.
		ctx := openai.WithPriority(ctx, t)
		d := &policy.Decision{RT: rt, Legal: legal, Families: e.families}
		if showValue {
			q := &question{order: j.order, kind: askValue, value: gpu.ValueInput(rt.Features(), orchestra.TaskTypeOneHot(e.families, rt.TaskType()))}
			if err := e.ask(ctx, q); err != nil {
				return nil, fmt.Errorf("episode %s decision %d: %w", j.ID, t, err)
			}
			d.Value = float64(q.v)
			if t > 0 {
				d.ValueChange = d.Value - previous
			}
			previous = d.Value
		}
		prompt := func() string {
			if showValue {
				return rt.ControllerPrompt(d.Value, d.ValueChange)
			}
			return rt.ControllerPromptWithoutValue()
		}
		forced, charged := false, false
		var text string
		// Only sampled decisions are charged (METHOD.md §2.6): neither one with a single legal
		// action nor a paired arm's forced first action, which no controller call chooses, nor
		// a fixed paradigm's decision that no model makes.
		if len(legal) > 1 && (t > 0 || j.First == nil || j.ChargeFirst) && controllerCall(j.Script, t) {
			text = prompt()
			promptTokens, actionTokens, err := e.ref.count(ctx, text, legal)
			if errors.Is(err, errReference) {
				unhealthy(fmt.Sprintf("decision %d: %v", t, err))
				break
			}
			charged = rt.ControllerReservation(promptTokens, actionTokens)
			forced = !charged // finalisation: the controller cannot pay for its decision
			if d.Legal = rt.Legal(); charged {
				text = prompt()
			}
			if len(d.Legal) == 0 {
				// Finalising with no agent to make the output: nothing can be submitted.
				unhealthy("no legal action: the budget cannot pay the controller and no agent exists")
				break
			}
		}
		row, sent, a, err := e.decide(ctx, d, j, t, forced, prompt)
		if errors.Is(err, errForcedIllegal) {
			unhealthy(fmt.Sprintf("the forced first action %s is not legal", j.First.JSON()))
			break
		}
		if errors.Is(err, errReference) {
			unhealthy(fmt.Sprintf("decision %d: %v", t, err))
			break
		}
		if err != nil {
			return nil, fmt.Errorf("episode %s decision %d: %w", j.ID, t, err)
		}
		if charged {
			promptTokens, actionTokens, err := e.ref.count(ctx, text, []orchestra.Action{a})
			if errors.Is(err, errReference) {
				unhealthy(fmt.Sprintf("decision %d: %v", t, err))
				break
			}
			rt.SettleController(promptTokens, actionTokens)
		}
		outcome, err := rt.Apply(ctx, a)
		row.Observation, row.OutputChanged = outcome.Observation, outcome.OutputChanged
		if err == nil {
			if row.OutputScore, err = outputScore(ctx, rt, sess); err != nil {
				err = fmt.Errorf("grade the output after decision %d: %w", t, err)
			}
		}
		out.Decisions = append(out.Decisions, row)
		if sent != nil {
			out.Prompts = append(out.Prompts, *sent)
		}
		for _, x := range outcome.Executions {
			out.Executions = append(out.Executions, executionRowOf(j.ID, int32(t), x))
		}
		if err != nil {
			unhealthy(err.Error())
			break
		}
	}
	e.finish(out, rt)
	return out, nil
}

// decide records the state s_t with the network's exact inputs and ρ's logits, scores the legal
// actions (the network through its batches, or the scripted policy), samples the action with the
// episode's decision seed, and returns the decision row (observation filled in after the action).
// prompt renders the decision's controller prompt, which a served reference reads; the prompt it
// sent is returned as the decision's prompts row (nil when none was sent).
func (e *env) decide(ctx context.Context, d *policy.Decision, j Job, t int, forced bool, prompt func() string) (schema.DecisionRow, *schema.PromptRow, orchestra.Action, error) {
	rt := d.RT
	state, actions := policy.Encode(d)
	if e.zeroFeatures {
		clear(state[:gpu.FeatureWidth])
	}
	priorLogits, sent, err := e.ref.logits(ctx, d, prompt)
	if err != nil {
		return schema.DecisionRow{}, nil, orchestra.Action{}, err
	}
	if sent != nil {
		sent.EpisodeID, sent.T = j.ID, int32(t)
	}
	prior := make([]float32, len(priorLogits))
	for i, v := range priorLogits {
		prior[i] = float32(v)
	}
	exact, coarse := rt.StructureKey()
	row := schema.DecisionRow{EpisodeID: j.ID, T: int32(t), Forced: forced, Features: rt.Features(),
		Value: float32(d.Value), ValueChange: float32(d.ValueChange), PolicyInput: state, ActionInputs: actions,
		ActionWidth: policy.ActionWidth, PriorLogits: prior, StructureKey: exact, CoarseKey: coarse,
		NNodes: int32(rt.NumNodes()), NEdges: int32(rt.NumEdges())}
	row.LegalActions = make([]string, len(d.Legal))
	for i, a := range d.Legal {
		row.LegalActions[i] = a.JSON()
	}
	if t == 0 && j.First != nil {
		// A paired arm's forced first action: taken with certainty (behaviour log-prob 0);
		// rescore scores it at its true probability over the full legal set.
		i := slices.IndexFunc(d.Legal, func(a orchestra.Action) bool { return a.JSON() == j.First.JSON() })
		if i < 0 {
			return row, sent, orchestra.Action{}, errForcedIllegal
		}
		row.Forced, row.Chosen, row.ActionJSON, row.ActionKind = true, int32(i), d.Legal[i].JSON(), d.Legal[i].Kind
		return row, sent, d.Legal[i], nil
	}
	var logp []float64
	if j.Script != nil {
		if logp, err = j.Script.LogProbs(d); err != nil {
			return row, sent, orchestra.Action{}, err
		}
	} else {
		q := &question{order: j.order, kind: askPolicy, row: gpu.PolicyRow{State: state, Actions: actions, Prior: prior}, theta: j.Theta}
		if _, lm := e.ref.(modelReference); lm {
			q.row.Text = &gpu.PolicyText{System: orchestra.ControllerSystemPrompt, User: sent.UserMessage, Actions: row.LegalActions}
		}
		if err := e.ask(ctx, q); err != nil {
			return row, sent, orchestra.Action{}, err
		}
		if sent != nil && q.tokens > 0 {
			sent.TokensSent = q.tokens
		}
		logp = make([]float64, len(q.logp))
		for i, v := range q.logp {
			logp[i] = float64(v)
		}
		logp = policy.Temper(logp, e.temperature)
	}
	s := seed.Derive(j.Seed, "decision", strconv.Itoa(t))
	i, err := policy.Sample(logp, rand.New(rand.NewPCG(s, s>>1|1)))
	if err != nil {
		return row, sent, orchestra.Action{}, err
	}
	a := d.Legal[i]
	row.Chosen, row.LogpBehavior, row.ActionJSON, row.ActionKind = int32(i), logp[i], a.JSON(), a.Kind
	return row, sent, a, nil
}

// outputScore is the grader's score of the output node's text now (the episode's reward after
// STOP), for the in-run edit outcomes of the report; nil when no output node is set.
func outputScore(ctx context.Context, rt *orchestra.Runtime, sess executor.Session) (*float64, error) {
	if rt.Stopped() {
		r := rt.Reward()
		return &r, nil
	}
	id := rt.OutputNode()
	if id == "" {
		return nil, nil
	}
	for _, n := range rt.Nodes() {
		if n.ID == id {
			s, err := sess.Grade(ctx, n.Output)
			return &s, err
		}
	}
	return nil, nil
}

// finish fills the episode row from the runtime's final state.
func (e *env) finish(out *Played, rt *orchestra.Runtime) {
	r := &out.Episode
	r.T = int32(len(out.Decisions))
	r.Stopped = rt.Stopped() && !rt.Poisoned()
	r.Reward = rt.Reward()
	if !r.Stopped && r.Healthy {
		reason := "episode did not stop"
		r.Healthy, r.UnhealthyReason = false, &reason
	}
	if id := rt.OutputNode(); id != "" {
		r.OutputNode = &id
		for _, n := range rt.Nodes() {
			if n.ID == id {
				r.OutputText = n.Output
			}
		}
	}
	used, ctrl := rt.Ledger().Settled(), rt.ControllerUsage()
	r.TokensIn, r.TokensOut, r.ModelCalls, r.ToolCalls, r.WallMS = used.InputTokens, used.OutputTokens, used.ModelCalls, used.ToolCalls, used.WallMS
	r.ControllerTokensIn, r.ControllerTokensOut, r.ControllerCalls = ctrl.InputTokens, ctrl.OutputTokens, ctrl.ModelCalls
	r.ExecutorTokensIn, r.ExecutorTokensOut, r.ExecutorCalls = used.InputTokens-ctrl.InputTokens, used.OutputTokens-ctrl.OutputTokens, used.ModelCalls-ctrl.ModelCalls
	r.ControllerCount = e.ref.counted()
	for _, p := range out.Prompts {
		r.ControllerRequests += int64(p.Requests)
		r.ControllerTokensSent += p.TokensSent
	}
	r.TerminalStructureKey, r.TerminalCoarseKey = rt.StructureKey()
}

func executionRowOf(episodeID string, t int32, x orchestra.ExecutionRecord) schema.ExecutionRow {
	res := x.Result
	row := schema.ExecutionRow{EpisodeID: episodeID, T: t, ExecIndex: int32(x.ExecIndex), NodeID: x.NodeID, Role: x.Role,
		Skills: append([]string{}, x.Skills...), Prompt: x.Prompt, Output: res.Output, Status: res.Status,
		FailureKind: schema.NullIfZero(res.FailureKind), AnswerPresent: res.AnswerPresent,
		TokensIn: res.Usage.TokensIn, TokensOut: res.Usage.TokensOut, ModelCalls: res.Usage.ModelCalls,
		ToolCalls: res.Usage.ToolCalls, WallMS: res.Usage.WallMS, ToolStatuses: []string{}, UsageEstimated: res.Usage.Estimated}
	if res.AnswerPresent && textrules.AnswerPresent(res.Output) {
		row.Answer = schema.NullIfZero(textrules.NormalizedAnswer(res.Output))
	}
	for _, c := range res.Tools {
		row.ToolStatuses = append(row.ToolStatuses, c.Tool+":"+c.Status)
	}
	return row
}

// controllerCall reports whether decision t of a job played by script is a controller model's
// call: every decision of a controller (the network, ρ), only the ones a Programmed policy says.
func controllerCall(script policy.Policy, t int) bool {
	if p, ok := script.(policy.Programmed); ok {
		return p.ControllerCall(t)
	}
	return true
}
