package paradigms

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/policy"
)

// Names of the four paradigms, in the paper's order, and of the direct baseline.
const (
	// Direct is the executor answering alone (Table 2's frozen-executor row): one solver, no
	// tools, its answer submitted. A baseline rather than an orchestration paradigm.
	Direct           = "direct"
	SingleAgent      = "single_agent"
	FixedTemplate    = "fixed_template"
	PlanExecute      = "plan_execute"
	SearchedWorkflow = "searched_workflow"
)

// Names lists the paradigms.
var Names = []string{SingleAgent, FixedTemplate, PlanExecute, SearchedWorkflow}

// Baselines are every scripted policy New makes: the direct baseline, then the paradigms.
var Baselines = append([]string{Direct}, Names...)

// Output rules of a template.
const (
	OutputLast     = "last"     // the last agent of an output role
	OutputMajority = "majority" // an agent holding the most frequent stated answer (ties: the latest)
)

// Agent is one agent of a template: its role, and the earlier agents (by position) whose outputs
// it receives.
type Agent struct {
	Role   string `json:"role"`
	Inputs []int  `json:"inputs,omitempty"`
}

// Template is a team fixed before execution: agents in the order they are added, and the rule
// that picks the output agent.
type Template struct {
	Name   string  `json:"name"`
	Agents []Agent `json:"agents"`
	Output string  `json:"output"`
}

// Workflows are the searched templates by task type (OOD families use their IID task type's).
type Workflows map[string]Template

// Validate checks the template against a task type's roles: known roles, inputs that name
// distinct earlier agents, a known output rule, and at least one agent of an output role.
func (t Template) Validate(roles []executor.Role) error {
	if len(t.Agents) == 0 {
		return fmt.Errorf("template %q has no agents", t.Name)
	}
	if t.Output != OutputLast && t.Output != OutputMajority {
		return fmt.Errorf("template %q: output rule %q is neither %s nor %s", t.Name, t.Output, OutputLast, OutputMajority)
	}
	output := false
	for i, a := range t.Agents {
		k := slices.IndexFunc(roles, func(r executor.Role) bool { return r.ID == a.Role })
		if k < 0 {
			return fmt.Errorf("template %q agent %d: role %q is not offered", t.Name, i, a.Role)
		}
		output = output || !roles[k].NonOutput
		for j, in := range a.Inputs {
			if in < 0 || in >= i || slices.Contains(a.Inputs[:j], in) {
				return fmt.Errorf("template %q agent %d: input %d is not a distinct earlier agent", t.Name, i, in)
			}
		}
	}
	if !output {
		return fmt.Errorf("template %q has no agent of an output role", t.Name)
	}
	return nil
}

// New returns the named paradigm as a policy; searched holds the workflows of
// searched_workflow (Search's result) and is ignored by the others.
func New(name string, searched Workflows) (policy.Policy, error) {
	switch name {
	case Direct:
		t := Template{Name: Direct, Agents: []Agent{{Role: "solver"}}, Output: OutputLast}
		return player{template: func(*orchestra.Runtime) (Template, error) { return t, nil }, bare: true}, nil
	case SingleAgent:
		return player{template: func(rt *orchestra.Runtime) (Template, error) {
			return Template{Name: SingleAgent, Agents: []Agent{{Role: worker(rt.Roles())}}, Output: OutputLast}, nil
		}}, nil
	case FixedTemplate:
		t := Template{Name: FixedTemplate, Agents: []Agent{{Role: "planner"}, {Role: "solver", Inputs: []int{0}}, {Role: "verifier", Inputs: []int{1}}}, Output: OutputLast}
		return player{template: func(*orchestra.Runtime) (Template, error) { return t, nil }}, nil
	case PlanExecute:
		return player{planned: true, template: func(rt *orchestra.Runtime) (Template, error) {
			w := worker(rt.Roles())
			return Template{Name: PlanExecute, Agents: []Agent{{Role: "planner"}, {Role: w, Inputs: []int{0}}, {Role: w, Inputs: []int{0}},
				{Role: "finalizer", Inputs: []int{1, 2}}}, Output: OutputLast}, nil
		}}, nil
	case SearchedWorkflow:
		if len(searched) == 0 {
			return nil, errors.New("paradigms: searched_workflow needs the searched workflows (run the search first)")
		}
		return player{template: func(rt *orchestra.Runtime) (Template, error) {
			t, ok := searched[rt.TaskType()]
			if !ok {
				return Template{}, fmt.Errorf("paradigms: no searched workflow for task type %q", rt.TaskType())
			}
			return t, nil
		}}, nil
	}
	return nil, fmt.Errorf("paradigms: unknown paradigm %q (paradigms: %v)", name, Baselines)
}

// worker is the role that holds every tool a task type offers: tool_user where the task type
// keeps it (orchestra.RolesFor drops it where no tool is offered), else solver.
func worker(roles []executor.Role) string {
	if slices.ContainsFunc(roles, func(r executor.Role) bool { return r.ID == "tool_user" }) {
		return "tool_user"
	}
	return "solver"
}

// player plays the template its function picks for the episode; bare plays it as the executor
// alone (the direct baseline), without the architecture's role instructions.
type player struct {
	template func(rt *orchestra.Runtime) (Template, error)
	bare     bool
	planned  bool // a planner model writes the graph at the first decision (plan_execute)
}

// Bare implements policy.Barer.
func (p player) Bare() bool { return p.bare }

// ControllerCall implements policy.Programmed: a paradigm's team is fixed before execution, so
// no decision is a model's call, except plan_execute's first, where its planner writes the graph.
func (p player) ControllerCall(t int) bool { return p.planned && t == 0 }

// ForTemplate returns a policy that plays one template everywhere (the search's candidates).
func ForTemplate(t Template) policy.Policy {
	return player{template: func(*orchestra.Runtime) (Template, error) { return t, nil }}
}

// LogProbs puts all the mass on the template's next action.
func (p player) LogProbs(d *policy.Decision) ([]float64, error) {
	out := make([]float64, len(d.Legal))
	if len(d.Legal) == 1 {
		return out, nil
	}
	t, err := p.template(d.RT)
	if err != nil {
		return nil, err
	}
	if err := t.Validate(d.RT.Roles()); err != nil {
		return nil, fmt.Errorf("paradigms: %w", err)
	}
	i := next(t, d.RT, d.Legal)
	for k := range out {
		if k != i {
			out[k] = math.Inf(-1)
		}
	}
	return out, nil
}

// next is the index in legal of the template's next action. While no output is set it builds:
// the first missing agent, else the first missing input edge of an agent (feedback, the last one
// revise so that the agent runs again with every input; feedback when the budget cannot run
// it). When the next agent cannot be added it stops building. Then it sets the output by the
// template's rule and stops; where STOP is withheld it reruns the output agent.
func next(t Template, rt *orchestra.Runtime, legal []orchestra.Action) int {
	find := func(pred func(orchestra.Action) bool) int { return slices.IndexFunc(legal, pred) }
	nodes := rt.Nodes()
	slices.SortFunc(nodes, func(a, b orchestra.Node) int { return number(a.ID) - number(b.ID) })
	if rt.OutputNode() == "" {
		if i := build(t, rt, nodes, find); i >= 0 {
			return i
		}
	}
	if target := outputAgent(t, rt, nodes); target != "" && target != rt.OutputNode() {
		if i := find(func(a orchestra.Action) bool { return a.Kind == orchestra.KindSetOutput && a.NodeID == target }); i >= 0 {
			return i
		}
	}
	for _, pred := range []func(orchestra.Action) bool{
		func(a orchestra.Action) bool { return a.Kind == orchestra.KindStop },
		// STOP is withheld: no output yet, or an interactive environment still running.
		func(a orchestra.Action) bool { return a.Kind == orchestra.KindSetOutput && rt.OutputNode() == "" },
		func(a orchestra.Action) bool {
			return a.Kind == orchestra.KindRerunAgent && a.NodeID == rt.OutputNode()
		},
		func(a orchestra.Action) bool { return a.Kind == orchestra.KindRerunAgent },
		func(a orchestra.Action) bool { return a.Kind != orchestra.KindDropAgent },
	} {
		if i := find(pred); i >= 0 {
			return i
		}
	}
	return 0
}

// build is the next building action, or −1 when the team is complete or the next agent cannot
// be added. Agent i of the template is the i-th live node in id order: a paradigm drops nothing.
func build(t Template, rt *orchestra.Runtime, nodes []orchestra.Node, find func(func(orchestra.Action) bool) int) int {
	edges := map[[2]string]bool{}
	for _, e := range rt.Edges() {
		edges[[2]string{e.Source, e.Target}] = true
	}
	for i, a := range t.Agents {
		if i >= len(nodes) {
			return find(func(x orchestra.Action) bool {
				return x.Kind == orchestra.KindAddAgent && x.RoleID == a.Role && x.SkillID == ""
			})
		}
		target := nodes[i].ID
		var missing []string
		for _, in := range a.Inputs {
			if src := nodes[in].ID; !edges[[2]string{src, target}] {
				missing = append(missing, src)
			}
		}
		for k, src := range missing {
			edge := func(protocol string) int {
				return find(func(x orchestra.Action) bool {
					return x.Kind == orchestra.KindAddEdge && x.SourceID == src && x.TargetID == target && x.Protocol == protocol
				})
			}
			if k == len(missing)-1 {
				if j := edge(orchestra.ProtocolRevise); j >= 0 {
					return j
				}
			}
			if j := edge(orchestra.ProtocolFeedback); j >= 0 {
				return j
			}
		}
	}
	return -1
}

// outputAgent is the node the template's output rule picks among the live template agents of an
// output role: the last one, or under the majority rule the latest holding the most frequent
// stated answer (the last one when none states an answer). "" when there is none.
func outputAgent(t Template, rt *orchestra.Runtime, nodes []orchestra.Node) string {
	roles := rt.Roles()
	var cands []orchestra.Node
	for i, n := range nodes {
		k := slices.IndexFunc(roles, func(r executor.Role) bool { return r.ID == n.Role })
		if i < len(t.Agents) && k >= 0 && !roles[k].NonOutput {
			cands = append(cands, n)
		}
	}
	if len(cands) == 0 {
		return ""
	}
	pick := cands[len(cands)-1].ID
	if t.Output == OutputMajority {
		counts, best := map[string]int{}, 0
		for _, n := range cands {
			if n.StatesAnswer() {
				counts[n.AnswerKey()]++
				best = max(best, counts[n.AnswerKey()])
			}
		}
		for _, n := range cands {
			if n.StatesAnswer() && counts[n.AnswerKey()] == best {
				pick = n.ID
			}
		}
	}
	return pick
}

// number is a node id's number (n2 before n10).
func number(id string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "n"))
	return n
}
