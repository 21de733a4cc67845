package orchestra

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/internal/textrules"
)

// Controller charging constants (METHOD.md §2.6, §2.7).
const (
	controllerWindow        = 24576 // the orchestrator's context window
	maxActionTokens         = 256   // reserved at the end of the window for the action
	controllerInputSlack    = 256   // added to the preview prompt's length when reserving
	defaultControllerWallMS = 5000
)

// MenuSkill is one skill the episode may bind. Text is the rendered procedure the executor
// sees when the skill is bound (see RenderSkill).
type MenuSkill struct{ ID, ContentHash, Name, Trigger, Status, Text string }

// Options configures a runtime.
type Options struct {
	Roles  []executor.Role // the family's adapted roles; nil means RolesFor(task family, task type)
	Menu   []MenuSkill
	Budget config.Budget
	// StopGateFamilies are task types whose STOP waits for the environment to finish while
	// any node-executing action is legal; nil means ["alfworld"] (so webshop too).
	StopGateFamilies []string
	// Interleaved false is the interleaved-execution ablation: actions only edit the graph
	// (RERUN_AGENT is never legal) and every node executes once, in numeric id order, at
	// STOP, each with the messages of its already executed sources; a node whose envelope no
	// longer fits by then is skipped. The environment STOP gate does not apply.
	Interleaved bool
	// Repair false is the learnable-repair ablation: RERUN_AGENT and DROP_AGENT are never legal.
	Repair bool
	// Bare plays the executor alone (the direct baseline): every request is marked Bare and its
	// prompt carries no role instruction.
	Bare bool
}

// Node is a live agent of the team.
type Node struct {
	ID            string
	Role          string
	Skills        []string // sorted
	Output        string
	OutputVersion int              // executions so far; 0 until the node first runs
	Result        *executor.Result // latest execution's result; nil before the first
	// The answer analysis of Output, computed once per execution: the features, the
	// diagnosis and the policy read it at every decision, and the regular expressions behind
	// it dominate the cost of a decision on long outputs.
	answerKey string // textrules.NormalizedAnswer(Output)
	hasAnswer bool   // textrules.AnswerPresent(Output)
	noAnswer  string // noAnswerKind(Output, task type)
	marked    bool   // textrules.Marked(Output)
	// searched is each search call's result in Result, casefolded with whitespace collapsed:
	// searchText reads it at every decision.
	searched []string
	// view is the node's entry in the controller prompt, for the state viewKey names.
	view    rawJSON
	viewKey string
}

// setOutput records a new output with its answer analysis.
func (n *Node) setOutput(s, taskType string) {
	n.Output, n.answerKey, n.hasAnswer = s, textrules.NormalizedAnswer(s), textrules.AnswerPresent(s)
	n.noAnswer, n.marked = noAnswerKind(s, taskType), textrules.Marked(s)
}

// AnswerKey is NormalizedAnswer of the node's output.
func (n *Node) AnswerKey() string { return n.answerKey }

// Edge carries its source's output to its target at the target's executions.
type Edge struct{ Source, Target, Protocol string }

// ExecutionRecord is one agent execution, for the executions table.
type ExecutionRecord struct {
	ExecIndex  int // 0-based position among the episode's executions
	NodeID     string
	Role       string
	Skills     []string
	Messages   []executor.Message
	PrevOutput *string
	Prompt     string
	Seed       uint64
	Result     executor.Result
	Charged    Vector // usage settled to the ledger: the reported usage capped at the envelope
}

// Event is one applied action and what it did.
type Event struct {
	Action        Action
	Observation   string
	OutputChanged bool
	// Message is the snapshot an ADD_EDGE delivered (its source's output at that moment).
	Message *executor.Message
	// InfrastructureFailure marks the action whose external effect failed and poisoned the runtime.
	InfrastructureFailure bool
	Executions            []ExecutionRecord
	skipped               []string // deferred STOP: nodes whose envelope no longer fit
}

// delivered reports whether the event delivered a message: an edge was added, or its last
// execution received inputs from other nodes.
func (e Event) delivered() bool {
	if e.Message != nil {
		return true
	}
	k := len(e.Executions)
	return k > 0 && len(e.Executions[k-1].Messages) > 0
}

// Outcome is what Apply reports about one action.
type Outcome struct {
	Observation   string
	OutputChanged bool
	Executions    []ExecutionRecord
}

// Runtime is one episode's team: the graph, its budget ledger, and the execution semantics
// of every action. It is not safe for concurrent use.
type Runtime struct {
	task     tasks.Task
	taskType string
	sess     executor.Session
	seed     uint64
	opt      Options
	roles    []executor.Role
	menu     []MenuSkill // sorted by id
	ledger   *Ledger
	gated    bool
	ctrlWall int64

	nodes     map[string]*Node
	edges     []Edge
	output    string
	nextIndex int
	execs     int
	history   []Event
	stopped   bool
	poisoned  bool
	reward    float64

	ctrl       *int   // the open controller reservation
	ctrlUsed   Vector // what the settled controller decisions were charged
	finalising bool   // the controller could not reserve its decision budget
	offeredAt  int
	offered    map[string]bool

	env        executor.Environment // environment state after the latest execution
	lastTool   string               // status of the latest tool or environment call
	nodeUsage  Vector
	shownValue map[int]float64 // value estimate shown at each decision (diagnosis deltas)

	// The controller prompt's parts that do not change once written (view.go).
	staticView  map[string]rawJSON // task_prompt, roles, feature_names
	historyView []rawJSON          // one per finished event
}

// New starts an episode of task on sess. episodeSeed seeds every node execution through
// seed.Derive; the runtime draws no randomness of its own.
func New(task tasks.Task, sess executor.Session, episodeSeed uint64, opt Options) *Runtime {
	taskType := cmp.Or(task.TaskType, task.Family)
	roles := opt.Roles
	if roles == nil {
		roles = RolesFor(task.Family, task.TaskType)
	}
	gates := opt.StopGateFamilies
	if gates == nil {
		gates = []string{"alfworld"}
	}
	menu := slices.Clone(opt.Menu)
	slices.SortFunc(menu, func(a, b MenuSkill) int { return cmp.Compare(a.ID, b.ID) })
	return &Runtime{
		task: task, taskType: taskType, sess: sess, seed: episodeSeed, opt: opt,
		roles: slices.Clone(roles), menu: menu, ledger: NewLedger(opt.Budget),
		// Deferred execution cannot advance the environment before STOP, so the gate would
		// only force the budget to run out; it applies to interleaved execution alone.
		gated:    opt.Interleaved && slices.Contains(gates, taskType),
		ctrlWall: cmp.Or(opt.Budget.ControllerWallMS, defaultControllerWallMS),
		nodes:    map[string]*Node{}, offered: map[string]bool{},
		shownValue: map[int]float64{},
	}
}

// Legal is the sorted legal action set of the current state (METHOD.md §2.2). After a
// failed ControllerReservation it is the single forced finalisation action. An empty set
// while the episode has not stopped means it cannot continue (see Exhausted).
func (r *Runtime) Legal() []Action {
	actions := r.legal()
	// STOP and SET_OUTPUT once offered stay admissible at this history length even if the
	// gate or the fallback rule would now withhold them (the reference's offer cache).
	if r.offeredAt != len(r.history) {
		r.offeredAt, r.offered = len(r.history), map[string]bool{}
	}
	for _, a := range actions {
		if a.Kind == KindStop || a.Kind == KindSetOutput {
			r.offered[a.JSON()] = true
		}
	}
	return actions
}

func (r *Runtime) legal() []Action {
	if r.stopped || r.poisoned {
		return nil
	}
	if r.finalising {
		if a, ok := r.finalAction(); ok {
			return []Action{a}
		}
		return nil
	}
	canExec := map[string]bool{}
	anyExec := false
	for _, role := range r.roles {
		canExec[role.ID] = r.ledger.CanReserve(EnvelopeVector(role.Envelope))
		anyExec = anyExec || canExec[role.ID]
	}
	var out []Action
	if r.output != "" {
		out = append(out, Action{Kind: KindStop})
	}
	fallback := r.outputFallback(canExec)
	ids := r.nodeIDs()
	for _, id := range ids {
		if id != r.output && (fallback || !r.nonOutput(r.nodes[id].Role)) {
			out = append(out, Action{Kind: KindSetOutput, NodeID: id})
		}
	}
	next := "n" + strconv.Itoa(r.nextIndex)
	for _, role := range r.roles {
		if !canExec[role.ID] {
			continue
		}
		out = append(out, Action{Kind: KindAddAgent, NodeID: next, RoleID: role.ID})
		for _, s := range r.menu {
			out = append(out, Action{Kind: KindAddAgent, NodeID: next, RoleID: role.ID, SkillID: s.ID})
		}
	}
	occupied := map[[2]string]bool{}
	for _, e := range r.edges {
		occupied[[2]string{e.Source, e.Target}] = true
	}
	for _, id := range ids {
		n := r.nodes[id]
		if r.opt.Repair && id != r.output && (len(r.nodes) > 1 || anyExec) {
			out = append(out, Action{Kind: KindDropAgent, NodeID: id})
		}
		if canExec[n.Role] {
			if r.opt.Repair && r.opt.Interleaved { // deferred nodes run once, at STOP
				out = append(out, Action{Kind: KindRerunAgent, NodeID: id})
			}
			for _, s := range r.menu {
				if !slices.Contains(n.Skills, s.ID) {
					out = append(out, Action{Kind: KindBindSkill, NodeID: id, SkillID: s.ID})
				}
			}
		}
		for _, t := range ids {
			if t == id || occupied[[2]string{id, t}] {
				continue
			}
			out = append(out, Action{Kind: KindAddEdge, SourceID: id, TargetID: t, Protocol: ProtocolFeedback})
			if canExec[r.nodes[t].Role] {
				out = append(out, Action{Kind: KindAddEdge, SourceID: id, TargetID: t, Protocol: ProtocolRevise})
			}
		}
	}
	if r.output != "" && r.gated && slices.ContainsFunc(out, executesNode) && !r.sess.EnvironmentDone() {
		out = out[1:] // STOP is first
	}
	return sortActions(out)
}

// executesNode reports whether an action runs an agent at once.
func executesNode(a Action) bool {
	switch a.Kind {
	case KindAddAgent, KindRerunAgent, KindBindSkill:
		return true
	}
	return a.Kind == KindAddEdge && a.Protocol == ProtocolRevise
}

// sortActions orders actions by their canonical text.
func sortActions(actions []Action) []Action {
	type keyed struct {
		text string
		a    Action
	}
	ks := make([]keyed, len(actions))
	for i, a := range actions {
		ks[i] = keyed{a.JSON(), a}
	}
	slices.SortFunc(ks, func(x, y keyed) int { return cmp.Compare(x.text, y.text) })
	for i, k := range ks {
		actions[i] = k.a
	}
	return actions
}

func (r *Runtime) nonOutput(roleID string) bool {
	role, ok := r.role(roleID)
	return ok && role.NonOutput
}

// outputFallback: a non-output role may become the output only when no node of another
// role exists and no other role can be added.
func (r *Runtime) outputFallback(canExec map[string]bool) bool {
	if !slices.ContainsFunc(r.roles, func(role executor.Role) bool { return role.NonOutput }) {
		return true
	}
	for _, n := range r.nodes {
		if !r.nonOutput(n.Role) {
			return false
		}
	}
	for _, role := range r.roles {
		if !role.NonOutput && canExec[role.ID] {
			return false
		}
	}
	return true
}

// finalAction is the forced action of budget finalisation: STOP when an output exists,
// else SET_OUTPUT of the lowest-numbered node of an output role, else of the lowest-numbered
// node; none when the team is empty.
func (r *Runtime) finalAction() (Action, bool) {
	if r.output != "" {
		return Action{Kind: KindStop}, true
	}
	ids := r.numericIDs()
	if len(ids) == 0 {
		return Action{}, false
	}
	pick := ids[0]
	for _, id := range ids {
		if !r.nonOutput(r.nodes[id].Role) {
			pick = id
			break
		}
	}
	return Action{Kind: KindSetOutput, NodeID: pick}, true
}

// ControllerReservation charges a sampled controller decision (one with more than one legal
// action) to the episode ledger before the policy samples it: input = the prompt's tokens +
// 256, at most the window less the action reserve; output = actionTokens (the longest legal
// action); one model call, one agent turn, the controller wall time. It returns false when
// the reservation does not fit, or when nothing is legal while it is held; the runtime then
// finalises and Legal offers only the forced action. While it is held, Legal is computed
// with it, as the reference offers the controller. Call SettleController before Apply.
func (r *Runtime) ControllerReservation(promptTokens, actionTokens int64) bool {
	if r.ctrl != nil {
		panic("orchestra: ControllerReservation while a controller reservation is open")
	}
	if r.stopped || r.poisoned {
		return false
	}
	maximum := Vector{
		InputTokens:  min(controllerWindow-maxActionTokens, promptTokens+controllerInputSlack),
		OutputTokens: actionTokens, ModelCalls: 1, AgentTurns: 1, WallMS: r.ctrlWall,
	}
	id, ok := r.ledger.reserve(maximum)
	if ok && len(r.legal()) == 0 {
		_, _ = r.ledger.settle(id, Vector{}) // id is open: settling cannot fail
		ok = false
	}
	if !ok {
		r.finalising = true
		return false
	}
	r.ctrl = &id
	return true
}

// SettleController settles the open controller reservation at the actual prompt and action
// token lengths, one model call and one agent turn. Wall time is charged as 0: sampling the
// compact policy takes negligible time, and measured time would make rollouts irreproducible.
func (r *Runtime) SettleController(promptTokens, actionTokens int64) {
	if r.ctrl == nil {
		panic("orchestra: SettleController without an open controller reservation")
	}
	charged, _ := r.ledger.settle(*r.ctrl, Vector{InputTokens: promptTokens, OutputTokens: actionTokens, ModelCalls: 1, AgentTurns: 1})
	r.ctrlUsed = r.ctrlUsed.add(charged)
	r.ctrl = nil
}

// ControllerUsage is the part of the ledger's settled use that controller decisions were
// charged; the rest is the agents'.
func (r *Runtime) ControllerUsage() Vector { return r.ctrlUsed }

// Apply performs one legal action (METHOD.md §2.3). An error from the executor or the
// grader poisons the runtime: it stops, Poisoned reports true, and the episode is unhealthy.
// An illegal action is refused without changing anything.
func (r *Runtime) Apply(ctx context.Context, a Action) (Outcome, error) {
	switch {
	case r.poisoned:
		return Outcome{}, errors.New("orchestra: the runtime is poisoned")
	case r.stopped:
		return Outcome{}, errors.New("orchestra: the episode has stopped")
	case r.ctrl != nil:
		return Outcome{}, errors.New("orchestra: settle the controller reservation before applying an action")
	}
	text := a.JSON()
	legal := slices.ContainsFunc(r.legal(), func(b Action) bool { return b.JSON() == text })
	if !legal && !(r.offeredAt == len(r.history) && r.offered[text]) {
		return Outcome{}, fmt.Errorf("orchestra: %s is not a legal action", text)
	}
	r.finalising = false
	ev := Event{Action: a}
	if err := r.effect(ctx, &ev); err != nil {
		r.poisoned, r.stopped = true, true
		ev.InfrastructureFailure = true
		ev.Observation = "Infrastructure failure: " + err.Error() + ". The episode was aborted."
		r.history = append(r.history, ev)
		return Outcome{Observation: ev.Observation, Executions: ev.Executions}, err
	}
	r.history = append(r.history, ev)
	ev.Observation = r.observe(ev) // after appending: the team summary reads the history
	r.history[len(r.history)-1].Observation = ev.Observation
	return Outcome{Observation: ev.Observation, OutputChanged: ev.OutputChanged, Executions: ev.Executions}, nil
}

func (r *Runtime) effect(ctx context.Context, ev *Event) error {
	a := ev.Action
	switch a.Kind {
	case KindAddAgent:
		n := &Node{ID: a.NodeID, Role: a.RoleID}
		if a.SkillID != "" {
			n.Skills = []string{a.SkillID}
		}
		if r.opt.Interleaved {
			if err := r.execute(ctx, ev, n, nil); err != nil {
				return err
			}
		}
		r.nodes[n.ID] = n
		r.nextIndex++
	case KindAddEdge:
		e := Edge{Source: a.SourceID, Target: a.TargetID, Protocol: a.Protocol}
		m := r.message(e)
		ev.Message = &m
		if e.Protocol == ProtocolRevise && r.opt.Interleaved {
			if err := r.execute(ctx, ev, r.nodes[e.Target], &e); err != nil {
				return err
			}
		}
		r.edges = append(r.edges, e)
	case KindRerunAgent:
		return r.execute(ctx, ev, r.nodes[a.NodeID], nil)
	case KindBindSkill:
		n := r.nodes[a.NodeID]
		n.Skills = append(slices.Clone(n.Skills), a.SkillID)
		slices.Sort(n.Skills)
		if r.opt.Interleaved {
			return r.execute(ctx, ev, n, nil)
		}
	case KindSetOutput:
		r.output = a.NodeID
	case KindDropAgent:
		delete(r.nodes, a.NodeID)
		r.edges = slices.DeleteFunc(r.edges, func(e Edge) bool { return e.Source == a.NodeID || e.Target == a.NodeID })
	case KindStop:
		if !r.opt.Interleaved {
			// Each node is admitted like any execution: a node whose envelope no longer fits
			// what earlier ones left is skipped and keeps its empty output.
			for _, id := range r.numericIDs() {
				n := r.nodes[id]
				if role, _ := r.role(n.Role); !r.ledger.CanReserve(EnvelopeVector(role.Envelope)) {
					ev.skipped = append(ev.skipped, id)
					continue
				}
				if err := r.execute(ctx, ev, n, nil); err != nil {
					return err
				}
			}
		}
		reward, err := r.sess.Grade(ctx, r.nodes[r.output].Output)
		if err != nil {
			return fmt.Errorf("grade: %w", err)
		}
		if math.IsNaN(reward) || reward < 0 || reward > 1 {
			return fmt.Errorf("grade: reward %v is outside [0, 1]", reward)
		}
		r.reward, r.stopped = reward, true
	}
	return nil
}

// execute runs node n once: it reserves the role's envelope, assembles the request, calls
// the executor, settles the usage and updates the node. extra is a revise edge not yet in
// the graph whose message is included.
func (r *Runtime) execute(ctx context.Context, ev *Event, n *Node, extra *Edge) error {
	role, _ := r.role(n.Role)
	if r.opt.Bare {
		role.Instruction = ""
	}
	id, ok := r.ledger.reserve(EnvelopeVector(role.Envelope))
	if !ok {
		return fmt.Errorf("budget cannot hold %s's envelope", n.ID)
	}
	var prev *string
	if n.OutputVersion > 0 {
		p := n.Output
		prev = &p
	}
	msgs := r.messages(n.ID, extra)
	skills := make([]executor.Skill, len(n.Skills))
	for i, s := range n.Skills {
		skills[i] = executor.Skill{ID: s, Text: r.skill(s).Text}
	}
	req := executor.Request{
		NodeID: n.ID, ExecIndex: r.execs, Seed: seed.Derive(r.seed, strconv.Itoa(r.execs), n.ID),
		Role: role, Skills: skills, Messages: msgs, PrevOutput: prev,
		Prompt: fitPrompt(role, r.task.Prompt, skills, msgs, prev), Bare: r.opt.Bare,
	}
	res, err := r.sess.Execute(ctx, req)
	if err != nil {
		return fmt.Errorf("execute %s: %w", n.ID, err)
	}
	charged, err := r.ledger.settle(id, usageVector(res.Usage))
	if err != nil {
		return err
	}
	ev.Executions = append(ev.Executions, ExecutionRecord{
		ExecIndex: r.execs, NodeID: n.ID, Role: n.Role, Skills: slices.Clone(n.Skills), Messages: msgs,
		PrevOutput: prev, Prompt: req.Prompt, Seed: req.Seed, Result: res, Charged: charged,
	})
	r.execs++
	r.nodeUsage = r.nodeUsage.add(charged)
	r.env = res.Environment
	if k := len(res.Tools); k > 0 {
		r.lastTool = res.Tools[k-1].Status
	}
	ev.OutputChanged = prev != nil && *prev != res.Output
	n.setOutput(res.Output, r.taskType)
	n.OutputVersion, n.Result = n.OutputVersion+1, &res
	n.searched = nil
	for _, c := range res.Tools {
		if c.Tool == "search" {
			n.searched = append(n.searched, textrules.Collapse(textrules.Casefold(c.Result)))
		}
	}
	return nil
}

// messages are the inputs node target receives: one per edge into it (plus extra), sorted
// by source id, each carrying the source's current output. A source that has not executed
// yet (possible only in deferred mode) has nothing to deliver.
func (r *Runtime) messages(target string, extra *Edge) []executor.Message {
	var in []Edge
	for _, e := range r.edges {
		if e.Target == target {
			in = append(in, e)
		}
	}
	if extra != nil {
		in = append(in, *extra)
	}
	slices.SortStableFunc(in, func(a, b Edge) int { return cmp.Compare(a.Source, b.Source) })
	var msgs []executor.Message
	for _, e := range in {
		if r.nodes[e.Source].OutputVersion > 0 {
			msgs = append(msgs, r.message(e))
		}
	}
	return msgs
}

func (r *Runtime) message(e Edge) executor.Message {
	src := r.nodes[e.Source]
	return executor.Message{SourceID: e.Source, TargetID: e.Target, Protocol: e.Protocol,
		SourceOutputVersion: src.OutputVersion, Body: src.Output}
}

func (r *Runtime) role(id string) (executor.Role, bool) {
	i := slices.IndexFunc(r.roles, func(role executor.Role) bool { return role.ID == id })
	if i < 0 {
		return executor.Role{}, false
	}
	return r.roles[i], true
}

func (r *Runtime) skill(id string) MenuSkill {
	i, _ := slices.BinarySearchFunc(r.menu, id, func(s MenuSkill, id string) int { return cmp.Compare(s.ID, id) })
	return r.menu[i]
}

// nodeIDs are the live node ids in string order, the order the reference lists its graph.
func (r *Runtime) nodeIDs() []string {
	ids := make([]string, 0, len(r.nodes))
	for id := range r.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// numericIDs are the live node ids in creation order (n2 before n10).
func (r *Runtime) numericIDs() []string {
	ids := r.nodeIDs()
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(nodeNumber(a), nodeNumber(b)) })
	return ids
}

func nodeNumber(id string) int {
	n, _ := strconv.Atoi(id[1:])
	return n
}

// Exhausted reports that the episode can neither continue nor stop: it has not stopped but
// nothing is legal (no node exists and no role's envelope fits, or finalisation found an
// empty team). The rollout ends such an episode unstopped, without a reward.
func (r *Runtime) Exhausted() bool { return !r.stopped && !r.poisoned && len(r.legal()) == 0 }

// Finalising reports that the controller could not reserve its decision budget, so Legal
// offers only the forced finalisation action.
func (r *Runtime) Finalising() bool { return r.finalising }

// Stopped reports whether the episode has ended (STOP, or poisoned).
func (r *Runtime) Stopped() bool { return r.stopped }

// Poisoned reports whether an external effect failed; the episode is then unhealthy.
func (r *Runtime) Poisoned() bool { return r.poisoned }

// Reward is the grader's reward after STOP (0 before).
func (r *Runtime) Reward() float64 { return r.reward }

// EnvironmentRunning reports an interactive environment that has not ended, in which STOP is
// withheld: the observation says the episode goes on.
func (r *Runtime) EnvironmentRunning() bool { return r.gated && !r.sess.EnvironmentDone() }

// Deferred reports the interleaved-execution ablation: nodes execute only at STOP.
func (r *Runtime) Deferred() bool { return !r.opt.Interleaved }

// OutputRole reports whether agents of a role may be the output (the role states answers).
func (r *Runtime) OutputRole(roleID string) bool {
	_, ok := r.role(roleID)
	return ok && !r.nonOutput(roleID)
}

// OutputNode is the output node's id, "" when none is selected.
func (r *Runtime) OutputNode() string { return r.output }

// Nodes are copies of the live nodes in string id order.
func (r *Runtime) Nodes() []Node {
	out := make([]Node, 0, len(r.nodes))
	for _, id := range r.nodeIDs() {
		n := *r.nodes[id]
		n.Skills = slices.Clone(n.Skills)
		if n.Result != nil {
			res := *n.Result
			n.Result = &res
		}
		out = append(out, n)
	}
	return out
}

// Edges are the edges sorted by (source, target).
func (r *Runtime) Edges() []Edge {
	edges := slices.Clone(r.edges)
	slices.SortFunc(edges, func(a, b Edge) int {
		return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.Target, b.Target))
	})
	return edges
}

// NumNodes is the number of live nodes.
func (r *Runtime) NumNodes() int { return len(r.nodes) }

// NumEdges is the number of edges.
func (r *Runtime) NumEdges() int { return len(r.edges) }

// History is the sequence of applied actions.
func (r *Runtime) History() []Event { return slices.Clone(r.history) }

// Ledger is the episode's budget ledger (read-only use: its mutators are unexported).
func (r *Runtime) Ledger() *Ledger { return r.ledger }

// NodeUsage is the total charged for node executions (the ledger also holds controller charges).
func (r *Runtime) NodeUsage() Vector { return r.nodeUsage }

// Menu is the episode's skill menu, sorted by id.
func (r *Runtime) Menu() []MenuSkill { return slices.Clone(r.menu) }

// Roles are the family's adapted roles in declared order.
func (r *Runtime) Roles() []executor.Role { return slices.Clone(r.roles) }

// Task is the episode's task.
func (r *Runtime) Task() tasks.Task { return r.task }

// TaskType is the IID task type the episode's family maps to.
func (r *Runtime) TaskType() string { return r.taskType }
