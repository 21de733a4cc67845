package policy

import (
	"slices"
	"strconv"
	"strings"

	"github.com/evosteer/evosteer-go/internal/orchestra"
)

// Roles is the canonical role order of the action descriptors' role one-hot.
var Roles = []string{"solver", "verifier", "planner", "researcher", "finalizer", "tool_user"}

// Kinds is the action-kind order of the descriptors' kind one-hot.
var Kinds = []string{orchestra.KindAddAgent, orchestra.KindAddEdge, orchestra.KindBindSkill,
	orchestra.KindSetOutput, orchestra.KindRerunAgent, orchestra.KindDropAgent, orchestra.KindStop}

// facts are the per-decision quantities that the encodings and the prior both read, computed
// once per decision.
type facts struct {
	nodes  map[string]orchestra.Node
	newest string
	output string
	answer map[string]string // node id -> normalised answer, for nodes that state one
	// pending are, under deferred execution (the interleaved-execution ablation), the nodes of
	// an answering role: none has run, and each will state an answer at STOP.
	pending    map[string]bool
	groups     map[string]int    // normalised answer -> nodes stating it (empty ones: one each)
	largest    int               // size of the largest answer group
	menuStatus map[string]string // skill id -> candidate | validated
	candidates int
	validated  int
	deferred   bool            // nodes execute at STOP (the interleaved-execution ablation)
	toolRoles  map[string]bool // roles that hold a tool in this task type
	verifiers  int             // verifier nodes in the team
	checked    map[string]bool // verifiers that received (or, deferred, will receive) an answer through a revise edge
	envRunning bool            // an interactive environment runs on and withholds STOP
}

func newFacts(rt *orchestra.Runtime) *facts {
	f := &facts{nodes: map[string]orchestra.Node{}, output: rt.OutputNode(), answer: map[string]string{},
		groups: map[string]int{}, menuStatus: map[string]string{}, pending: map[string]bool{}}
	newestIdx := -1
	for _, n := range rt.Nodes() {
		f.nodes[n.ID] = n
		if rt.Deferred() && rt.OutputRole(n.Role) {
			f.pending[n.ID] = true
		}
		if idx, err := strconv.Atoi(strings.TrimPrefix(n.ID, "n")); err == nil && idx > newestIdx {
			newestIdx, f.newest = idx, n.ID
		}
		if n.StatesAnswer() {
			a := n.AnswerKey()
			if a == "" {
				// An empty key (an empty code block or \boxed{}) agrees with nothing, as in
				// feature 17's answer agreement: it forms a group of its own.
				a = "\x00" + n.ID
			}
			f.answer[n.ID] = a
			f.groups[a]++
			f.largest = max(f.largest, f.groups[a])
		}
	}
	f.deferred = rt.Deferred()
	f.envRunning = rt.EnvironmentRunning()
	f.toolRoles = map[string]bool{}
	for _, r := range rt.Roles() {
		f.toolRoles[r.ID] = len(r.Tools) > 0
	}
	f.checked = map[string]bool{}
	for _, n := range f.nodes {
		if n.Role == "verifier" {
			f.verifiers++
		}
	}
	for _, e := range rt.Edges() {
		if e.Protocol == orchestra.ProtocolRevise && f.nodes[e.Target].Role == "verifier" && f.answers(e.Source) {
			f.checked[e.Target] = true
		}
	}
	for _, s := range rt.Menu() {
		f.menuStatus[s.ID] = s.Status
		switch s.Status {
		case "candidate":
			f.candidates++
		case "validated":
			f.validated++
		}
	}
	return f
}

func (f *facts) answered(id string) bool { _, ok := f.answer[id]; return ok }

// answers is what the reference prior's output and STOP indicators read: a node that states an
// answer, or under deferred execution one that will. Without the second, ρ could never stop a
// deferred graph (its STOP indicator needs an answered output) and its decisions would spend
// the budget the nodes need at STOP.
func (f *facts) answers(id string) bool { return f.answered(id) || f.pending[id] }

// inLargestGroup reports whether a node's answer is held by a largest group of at least two.
func (f *facts) inLargestGroup(id string) bool {
	a, ok := f.answer[id]
	return ok && f.largest >= 2 && f.groups[a] == f.largest
}

func (f *facts) failed(id string) bool {
	n, ok := f.nodes[id]
	return ok && n.Failed()
}

// disagree reports two or more answers that are not all the same.
func (f *facts) disagree() bool { return len(f.answer) >= 2 && len(f.groups) > 1 }

// role is the role an action concerns: the new agent's, or the target node's.
func (f *facts) role(a orchestra.Action) string {
	switch a.Kind {
	case orchestra.KindAddAgent:
		return a.RoleID
	case orchestra.KindAddEdge:
		return f.nodes[a.TargetID].Role
	}
	return f.nodes[a.NodeID].Role
}

// target is the node an action acts on ("" for ADD_AGENT and STOP).
func target(a orchestra.Action) string {
	if a.Kind == orchestra.KindAddEdge {
		return a.TargetID
	}
	if a.Kind == orchestra.KindAddAgent {
		return ""
	}
	return a.NodeID
}

func onehot(dst []float32, vocab []string, v string) {
	if i := slices.Index(vocab, v); i >= 0 {
		dst[i] = 1
	}
}

func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}
