package orchestra

import (
	"context"
	"fmt"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

// fakeSession is a scripted executor session: script[node][k] is the result of the node's
// k-th execution (the last entry repeats); unscripted nodes answer "Answer: <node>-<k>".
type fakeSession struct {
	script   map[string][]executor.Result
	envDone  bool
	execErr  error
	gradeErr error
	reward   float64
	reqs     []executor.Request
	graded   []string
}

var defaultUsage = executor.Usage{TokensIn: 100, TokensOut: 50, ModelCalls: 1, WallMS: 1000}

func newFake() *fakeSession {
	return &fakeSession{script: map[string][]executor.Result{}, reward: 1}
}

func (f *fakeSession) Execute(_ context.Context, req executor.Request) (executor.Result, error) {
	k := 0
	for _, r := range f.reqs {
		if r.NodeID == req.NodeID {
			k++
		}
	}
	f.reqs = append(f.reqs, req)
	if f.execErr != nil {
		return executor.Result{}, f.execErr
	}
	if s := f.script[req.NodeID]; len(s) > 0 {
		return s[min(k, len(s)-1)], nil
	}
	return answer(fmt.Sprintf("Answer: %s-%d", req.NodeID, k)), nil
}

func (f *fakeSession) Grade(_ context.Context, output string) (float64, error) {
	f.graded = append(f.graded, output)
	return f.reward, f.gradeErr
}

func (f *fakeSession) EnvironmentDone() bool { return f.envDone }

// answer is a successful result that reports an answer, with the default usage.
func answer(output string) executor.Result {
	return executor.Result{Output: output, AnswerPresent: true, Status: "success", Usage: defaultUsage}
}

var (
	testBudget = config.Budget{Tokens: 98304, ToolCalls: 50, WallSeconds: 600, ControllerWallMS: 5000}
	qaTask     = tasks.Task{ID: "hotpotqa/1", Family: "hotpotqa", TaskType: "hotpotqa", Prompt: "Which city is the capital of France?"}
	testMenu   = []MenuSkill{
		{ID: "s2", ContentHash: "sha256:2", Name: "Second", Trigger: "when two", Status: "validated", Text: "Name: Second\nSteps:\n1. do two"},
		{ID: "s1", ContentHash: "sha256:1", Name: "First", Trigger: "when one", Status: "candidate", Text: "Name: First\nSteps:\n1. do one"},
	}
)

func defaultOptions() Options {
	return Options{Menu: testMenu, Budget: testBudget, Interleaved: true, Repair: true}
}

func newTestRuntime(task tasks.Task, sess *fakeSession, opt Options) *Runtime {
	return New(task, sess, 42, opt)
}

func mustApply(t *testing.T, r *Runtime, a Action) Outcome {
	t.Helper()
	out, err := r.Apply(context.Background(), a)
	if err != nil {
		t.Fatalf("apply %s: %v", a.JSON(), err)
	}
	return out
}

func addAgent(id, role, skill string) Action {
	return Action{Kind: KindAddAgent, NodeID: id, RoleID: role, SkillID: skill}
}

func addEdge(src, tgt, protocol string) Action {
	return Action{Kind: KindAddEdge, SourceID: src, TargetID: tgt, Protocol: protocol}
}

func onNode(kind, id string) Action { return Action{Kind: kind, NodeID: id} }

func bind(id, skill string) Action { return Action{Kind: KindBindSkill, NodeID: id, SkillID: skill} }

var stop = Action{Kind: KindStop}

// legalSet is the legal actions' texts.
func legalSet(r *Runtime) map[string]bool {
	set := map[string]bool{}
	for _, a := range r.Legal() {
		set[a.JSON()] = true
	}
	return set
}

func isLegal(r *Runtime, a Action) bool { return legalSet(r)[a.JSON()] }
