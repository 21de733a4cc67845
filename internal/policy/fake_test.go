package policy

import (
	"context"
	"fmt"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

// fakeSession is a scripted executor session: script[node] lists the results of the node's
// executions in order (the last repeats); an unscripted node answers "Answer: <node>".
type fakeSession struct {
	script map[string][]executor.Result
	runs   map[string]int
}

func newFake(script map[string][]executor.Result) *fakeSession {
	if script == nil {
		script = map[string][]executor.Result{}
	}
	return &fakeSession{script: script, runs: map[string]int{}}
}

func (f *fakeSession) Execute(_ context.Context, req executor.Request) (executor.Result, error) {
	k := f.runs[req.NodeID]
	f.runs[req.NodeID]++
	if s := f.script[req.NodeID]; len(s) > 0 {
		return s[min(k, len(s)-1)], nil
	}
	return answered("Answer: " + req.NodeID), nil
}

func (f *fakeSession) Grade(context.Context, string) (float64, error) { return 1, nil }

func (f *fakeSession) EnvironmentDone() bool { return false }

// fakeUsage is what every scripted execution reports.
var fakeUsage = executor.Usage{TokensIn: 100, TokensOut: 50, ModelCalls: 1, WallMS: 1000}

// answered is a successful result stating an answer.
func answered(text string) executor.Result {
	return executor.Result{Output: text, AnswerPresent: true, Status: "success", Usage: fakeUsage}
}

// timedOut is a failed result without an answer.
func timedOut() executor.Result {
	return executor.Result{Output: "I was working through the", Status: "failed", FailureKind: "timeout", Usage: fakeUsage}
}

var (
	testBudget = config.Budget{Tokens: 98304, ToolCalls: 50, WallSeconds: 600, ControllerWallMS: 5000}
	qaTask     = tasks.Task{ID: "hotpotqa/1", Family: "hotpotqa", TaskType: "hotpotqa", Prompt: "Which city is the capital of France?"}
	families   = []string{"hotpotqa", "nq_open", "medqa", "aime_2026", "mbpp_plus", "alfworld"}
	// testMenu holds a candidate skill (s1) and a validated one (s2).
	testMenu = []orchestra.MenuSkill{
		{ID: "s1", ContentHash: "sha256:1", Name: "First", Trigger: "when one", Status: "candidate", Text: "Name: First\nSteps:\n1. do one"},
		{ID: "s2", ContentHash: "sha256:2", Name: "Second", Trigger: "when two", Status: "validated", Text: "Name: Second\nSteps:\n1. do two"},
	}
)

// newRuntime starts an episode of the QA task on a scripted session with the test menu.
func newRuntime(script map[string][]executor.Result, menu []orchestra.MenuSkill) *orchestra.Runtime {
	return orchestra.New(qaTask, newFake(script), 42, orchestra.Options{Menu: menu, Budget: testBudget, Interleaved: true, Repair: true})
}

// act applies an action, which must be legal in the current state.
func act(t *testing.T, rt *orchestra.Runtime, a orchestra.Action) {
	t.Helper()
	mustFind(t, rt.Legal(), a)
	if _, err := rt.Apply(context.Background(), a); err != nil {
		t.Fatalf("apply %s: %v", a.JSON(), err)
	}
}

// mustFind is the index of a in legal; the test fails when a is not legal.
func mustFind(t *testing.T, legal []orchestra.Action, a orchestra.Action) int {
	t.Helper()
	for i, b := range legal {
		if b.JSON() == a.JSON() {
			return i
		}
	}
	t.Fatalf("%s is not legal; legal: %v", a.JSON(), texts(legal))
	return -1
}

func texts(actions []orchestra.Action) []string {
	out := make([]string, len(actions))
	for i, a := range actions {
		out[i] = a.JSON()
	}
	return out
}

func decision(rt *orchestra.Runtime) *Decision {
	return &Decision{RT: rt, Legal: rt.Legal(), Families: families}
}

func addAgent(id, role, skill string) orchestra.Action {
	return orchestra.Action{Kind: orchestra.KindAddAgent, NodeID: id, RoleID: role, SkillID: skill}
}

func addEdge(src, tgt, protocol string) orchestra.Action {
	return orchestra.Action{Kind: orchestra.KindAddEdge, SourceID: src, TargetID: tgt, Protocol: protocol}
}

func onNode(kind, id string) orchestra.Action { return orchestra.Action{Kind: kind, NodeID: id} }

func bindSkill(id, skill string) orchestra.Action {
	return orchestra.Action{Kind: orchestra.KindBindSkill, NodeID: id, SkillID: skill}
}

var stop = orchestra.Action{Kind: orchestra.KindStop}

// addSolvers adds solvers n<from>..n<to-1> in order.
func addSolvers(t *testing.T, rt *orchestra.Runtime, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		act(t, rt, addAgent(fmt.Sprintf("n%d", i), "solver", ""))
	}
}
