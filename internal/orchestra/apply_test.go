package orchestra

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/seed"
)

func TestAddAgentExecutesAtOnce(t *testing.T) {
	sess := newFake()
	r := newTestRuntime(qaTask, sess, defaultOptions())
	out := mustApply(t, r, addAgent("n0", "solver", "s1"))
	if len(sess.reqs) != 1 || len(out.Executions) != 1 {
		t.Fatalf("%d executions, want 1", len(sess.reqs))
	}
	req := sess.reqs[0]
	if req.NodeID != "n0" || req.ExecIndex != 0 || req.Seed != seed.Derive(42, "0", "n0") || req.PrevOutput != nil || len(req.Messages) != 0 {
		t.Errorf("request %+v", req)
	}
	if req.Role.ID != "solver" || len(req.Skills) != 1 || req.Skills[0] != (executor.Skill{ID: "s1", Text: "Name: First\nSteps:\n1. do one"}) {
		t.Errorf("role %s skills %+v", req.Role.ID, req.Skills)
	}
	if out.OutputChanged {
		t.Error("a new node's output cannot have changed")
	}
	nodes := r.Nodes()
	if len(nodes) != 1 || nodes[0].OutputVersion != 1 || nodes[0].Output != "Answer: n0-0" || nodes[0].Result == nil || !slices.Equal(nodes[0].Skills, []string{"s1"}) {
		t.Errorf("node %+v", nodes[0])
	}
	rec := out.Executions[0]
	if rec.NodeID != "n0" || rec.Role != "solver" || rec.Prompt != req.Prompt || rec.Seed != req.Seed || rec.Result.Output != "Answer: n0-0" {
		t.Errorf("execution record %+v", rec)
	}
}

func TestExecIndexAndSeeds(t *testing.T) {
	sess := newFake()
	r := newTestRuntime(qaTask, sess, defaultOptions())
	mustApply(t, r, addAgent("n0", "solver", ""))
	mustApply(t, r, addAgent("n1", "verifier", ""))
	mustApply(t, r, onNode(KindRerunAgent, "n0"))
	for i, req := range sess.reqs {
		if req.ExecIndex != i || req.Seed != seed.Derive(42, strconv.Itoa(i), req.NodeID) {
			t.Errorf("execution %d: index %d seed %d", i, req.ExecIndex, req.Seed)
		}
	}
	if sess.reqs[2].NodeID != "n0" || r.Nodes()[0].OutputVersion != 2 {
		t.Errorf("rerun did not re-execute n0 (version %d)", r.Nodes()[0].OutputVersion)
	}
}

func TestFeedbackEdgeDeliversAtNextExecution(t *testing.T) {
	sess := newFake()
	r := newTestRuntime(qaTask, sess, defaultOptions())
	mustApply(t, r, addAgent("n0", "solver", ""))
	mustApply(t, r, addAgent("n1", "verifier", ""))
	out := mustApply(t, r, addEdge("n0", "n1", ProtocolFeedback))
	if len(out.Executions) != 0 || len(sess.reqs) != 2 {
		t.Fatal("a feedback edge executed something")
	}
	ev := r.History()[2]
	if ev.Message == nil || *ev.Message != (executor.Message{SourceID: "n0", TargetID: "n1", Protocol: ProtocolFeedback, SourceOutputVersion: 1, Body: "Answer: n0-0"}) {
		t.Errorf("delivered message snapshot %+v", ev.Message)
	}
	mustApply(t, r, onNode(KindRerunAgent, "n0")) // n0 is now at version 2
	mustApply(t, r, onNode(KindRerunAgent, "n1"))
	req := sess.reqs[len(sess.reqs)-1]
	want := []executor.Message{{SourceID: "n0", TargetID: "n1", Protocol: ProtocolFeedback, SourceOutputVersion: 2, Body: "Answer: n0-1"}}
	if !slices.Equal(req.Messages, want) || req.PrevOutput == nil || *req.PrevOutput != "Answer: n1-0" {
		t.Errorf("n1's next execution got messages %+v prev %v", req.Messages, req.PrevOutput)
	}
	// n0 receives nothing: edges are directed.
	if len(sess.reqs[2].Messages) != 0 {
		t.Error("the source received its own edge's message")
	}
}

func TestReviseEdgeExecutesTargetAtOnce(t *testing.T) {
	sess := newFake()
	sess.script["n1"] = []executor.Result{answer("Answer: Lyon"), answer("Answer: Paris")}
	r := newTestRuntime(qaTask, sess, defaultOptions())
	mustApply(t, r, addAgent("n0", "solver", ""))
	mustApply(t, r, addAgent("n1", "verifier", ""))
	mustApply(t, r, addAgent("n2", "researcher", ""))
	mustApply(t, r, addEdge("n2", "n1", ProtocolFeedback))
	out := mustApply(t, r, addEdge("n0", "n1", ProtocolRevise))
	if len(out.Executions) != 1 || out.Executions[0].NodeID != "n1" {
		t.Fatalf("revise executions %+v", out.Executions)
	}
	req := sess.reqs[len(sess.reqs)-1]
	want := []executor.Message{
		{SourceID: "n0", TargetID: "n1", Protocol: ProtocolRevise, SourceOutputVersion: 1, Body: "Answer: n0-0"},
		{SourceID: "n2", TargetID: "n1", Protocol: ProtocolFeedback, SourceOutputVersion: 1, Body: "Answer: n2-0"},
	}
	if !slices.Equal(req.Messages, want) {
		t.Errorf("revise messages %+v, want all inbound edges plus the new one, by source", req.Messages)
	}
	if req.PrevOutput == nil || *req.PrevOutput != "Answer: Lyon" {
		t.Errorf("revise previous output %v", req.PrevOutput)
	}
	if !out.OutputChanged || r.Nodes()[1].OutputVersion != 2 || r.Nodes()[1].Output != "Answer: Paris" {
		t.Errorf("changed=%v node %+v", out.OutputChanged, r.Nodes()[1])
	}
	if got := r.Edges(); len(got) != 2 || got[0] != (Edge{"n0", "n1", ProtocolRevise}) {
		t.Errorf("edges %+v", got)
	}
	// Unchanged output on a rerun reports no change.
	out = mustApply(t, r, onNode(KindRerunAgent, "n1"))
	if out.OutputChanged {
		t.Error("rerun with identical output reported a change")
	}
}

func TestBindSkillReexecutesWithSkillText(t *testing.T) {
	sess := newFake()
	r := newTestRuntime(qaTask, sess, defaultOptions())
	mustApply(t, r, addAgent("n0", "solver", "s2"))
	out := mustApply(t, r, bind("n0", "s1"))
	if len(out.Executions) != 1 {
		t.Fatal("BIND did not re-execute")
	}
	req := sess.reqs[1]
	if got := []string{req.Skills[0].ID, req.Skills[1].ID}; !slices.Equal(got, []string{"s1", "s2"}) {
		t.Errorf("skills %v, want sorted", got)
	}
	if !strings.Contains(req.Prompt, "Procedure to follow (skill s1):\nName: First\nSteps:\n1. do one\n\nProcedure to follow (skill s2):") {
		t.Errorf("prompt lacks the bound skills in order:\n%s", req.Prompt)
	}
	if req.PrevOutput == nil || !slices.Equal(r.Nodes()[0].Skills, []string{"s1", "s2"}) || r.Nodes()[0].OutputVersion != 2 {
		t.Errorf("node after bind %+v", r.Nodes()[0])
	}
}

func TestSetOutputAndDrop(t *testing.T) {
	sess := newFake()
	r := newTestRuntime(qaTask, sess, defaultOptions())
	for i, role := range []string{"solver", "verifier", "finalizer"} {
		mustApply(t, r, addAgent("n"+strconv.Itoa(i), role, ""))
	}
	mustApply(t, r, addEdge("n0", "n1", ProtocolFeedback))
	mustApply(t, r, addEdge("n1", "n2", ProtocolFeedback))
	mustApply(t, r, addEdge("n2", "n0", ProtocolFeedback))
	n := len(sess.reqs)
	out := mustApply(t, r, onNode(KindSetOutput, "n2"))
	if len(out.Executions) != 0 || len(sess.reqs) != n || r.OutputNode() != "n2" {
		t.Error("SET_OUTPUT executed or did not set the pointer")
	}
	mustApply(t, r, onNode(KindDropAgent, "n1"))
	if got := r.Edges(); !slices.Equal(got, []Edge{{"n2", "n0", ProtocolFeedback}}) || r.NumNodes() != 2 || r.NumEdges() != 1 {
		t.Errorf("after drop: edges %+v nodes %d", got, r.NumNodes())
	}
	if !isLegal(r, addAgent("n3", "solver", "")) || isLegal(r, addAgent("n1", "solver", "")) {
		t.Error("node ids are reused after a drop")
	}
	mustApply(t, r, addAgent("n3", "solver", ""))
	if ids := []string{r.Nodes()[0].ID, r.Nodes()[1].ID, r.Nodes()[2].ID}; !slices.Equal(ids, []string{"n0", "n2", "n3"}) {
		t.Errorf("nodes %v", ids)
	}
}

func TestStopGradesOutputNode(t *testing.T) {
	sess := newFake()
	sess.reward = 0.75
	r := newTestRuntime(qaTask, sess, defaultOptions())
	mustApply(t, r, addAgent("n0", "solver", ""))
	mustApply(t, r, addAgent("n1", "verifier", ""))
	mustApply(t, r, onNode(KindSetOutput, "n1"))
	mustApply(t, r, stop)
	if !slices.Equal(sess.graded, []string{"Answer: n1-0"}) || !r.Stopped() || r.Reward() != 0.75 || r.Poisoned() {
		t.Errorf("graded %v stopped %v reward %v", sess.graded, r.Stopped(), r.Reward())
	}
	if len(r.Legal()) != 0 || r.Exhausted() {
		t.Error("a stopped episode offers actions or reports exhaustion")
	}
	if _, err := r.Apply(context.Background(), stop); err == nil {
		t.Error("applied an action after STOP")
	}
}

func TestIllegalActionRefusedWithoutEffect(t *testing.T) {
	sess := newFake()
	r := newTestRuntime(qaTask, sess, defaultOptions())
	for _, a := range []Action{stop, addAgent("n1", "solver", ""), addAgent("n0", "nobody", ""), onNode(KindRerunAgent, "n0"), {Kind: "BOGUS"}} {
		if _, err := r.Apply(context.Background(), a); err == nil {
			t.Errorf("illegal %s applied", a.JSON())
		}
	}
	if len(sess.reqs) != 0 || len(r.History()) != 0 || r.Poisoned() {
		t.Error("an illegal action changed the runtime")
	}
}

func TestExternalErrorsPoison(t *testing.T) {
	boom := errors.New("executor down")
	sess := newFake()
	r := newTestRuntime(qaTask, sess, defaultOptions())
	mustApply(t, r, addAgent("n0", "solver", ""))
	sess.execErr = boom
	if _, err := r.Apply(context.Background(), onNode(KindRerunAgent, "n0")); !errors.Is(err, boom) {
		t.Fatalf("error %v, want the executor's", err)
	}
	if !r.Poisoned() || !r.Stopped() || len(r.Legal()) != 0 {
		t.Error("an executor error must poison and stop the runtime")
	}
	h := r.History()
	if !h[len(h)-1].InfrastructureFailure || r.Features()[14] != 1 {
		t.Error("the failed action is not recorded as an infrastructure failure")
	}
	if _, err := r.Apply(context.Background(), onNode(KindSetOutput, "n0")); err == nil {
		t.Error("a poisoned runtime applied an action")
	}

	for name, setup := range map[string]func(*fakeSession){
		"grade error":       func(s *fakeSession) { s.gradeErr = errors.New("grader crashed") },
		"reward above 1":    func(s *fakeSession) { s.reward = 1.5 },
		"reward below zero": func(s *fakeSession) { s.reward = -0.1 },
	} {
		sess := newFake()
		setup(sess)
		r := newTestRuntime(qaTask, sess, defaultOptions())
		mustApply(t, r, addAgent("n0", "solver", ""))
		mustApply(t, r, onNode(KindSetOutput, "n0"))
		if _, err := r.Apply(context.Background(), stop); err == nil || !r.Poisoned() {
			t.Errorf("%s: err=%v poisoned=%v", name, err, r.Poisoned())
		}
	}
}

func TestDeferredExecutionAblation(t *testing.T) {
	sess := newFake()
	opt := defaultOptions()
	opt.Interleaved = false
	r := newTestRuntime(qaTask, sess, opt)
	mustApply(t, r, addAgent("n0", "solver", ""))
	mustApply(t, r, addAgent("n1", "verifier", ""))
	mustApply(t, r, addAgent("n2", "finalizer", ""))
	mustApply(t, r, onNode(KindDropAgent, "n2"))
	mustApply(t, r, addEdge("n0", "n1", ProtocolRevise))
	mustApply(t, r, addEdge("n1", "n0", ProtocolFeedback))
	mustApply(t, r, bind("n1", "s1"))
	if isLegal(r, onNode(KindRerunAgent, "n0")) {
		t.Error("RERUN legal under deferred execution")
	}
	mustApply(t, r, onNode(KindSetOutput, "n1"))
	if len(sess.reqs) != 0 {
		t.Fatalf("%d executions before STOP", len(sess.reqs))
	}
	out := mustApply(t, r, stop)
	if len(sess.reqs) != 2 || len(out.Executions) != 2 || sess.reqs[0].NodeID != "n0" || sess.reqs[1].NodeID != "n1" {
		t.Fatalf("STOP executions %d", len(sess.reqs))
	}
	// n0 runs first: n1 has not executed, so n0 gets no message; n1 then gets n0's output.
	if len(sess.reqs[0].Messages) != 0 || sess.reqs[1].PrevOutput != nil {
		t.Errorf("n0 messages %+v, n1 prev %v", sess.reqs[0].Messages, sess.reqs[1].PrevOutput)
	}
	if m := sess.reqs[1].Messages; len(m) != 1 || m[0].Body != "Answer: n0-0" || m[0].Protocol != ProtocolRevise || sess.reqs[1].Skills[0].ID != "s1" {
		t.Errorf("n1 request %+v", sess.reqs[1])
	}
	if !slices.Equal(sess.graded, []string{"Answer: n1-0"}) || r.Ledger().Settled().InputTokens != 200 {
		t.Errorf("graded %v, settled %+v", sess.graded, r.Ledger().Settled())
	}
}

func TestDeferredExecutionSkipsNodesBeyondBudget(t *testing.T) {
	sess := newFake()
	roles := []executor.Role{customRole("solver", 100, 100, false)}
	// 500 tokens: nothing is spent while editing, so four nodes can be added; at STOP each
	// execution reserves 200 and settles 150, and the fourth no longer fits.
	r := newTestRuntime(qaTask, sess, Options{Roles: roles, Budget: smallBudget(500), Repair: true})
	for i := 0; i < 4; i++ {
		mustApply(t, r, addAgent("n"+strconv.Itoa(i), "solver", ""))
	}
	mustApply(t, r, onNode(KindSetOutput, "n0"))
	out := mustApply(t, r, stop)
	if len(sess.reqs) != 3 || !strings.Contains(out.Observation, "Not executed, for lack of budget: n3.") {
		t.Errorf("%d executions; observation %q", len(sess.reqs), out.Observation)
	}
	if r.Nodes()[3].OutputVersion != 0 || !r.Stopped() {
		t.Error("the skipped node executed or the episode did not stop")
	}
}

func TestDeferredExecutionRunsInNumericOrder(t *testing.T) {
	sess := newFake()
	roles := []executor.Role{customRole("solver", 100, 100, false)}
	r := newTestRuntime(qaTask, sess, Options{Roles: roles, Budget: testBudget, Repair: true})
	var want []string
	for i := 0; i <= 10; i++ {
		id := "n" + strconv.Itoa(i)
		want = append(want, id)
		mustApply(t, r, addAgent(id, "solver", ""))
	}
	mustApply(t, r, onNode(KindSetOutput, "n10"))
	mustApply(t, r, stop)
	var got []string
	for _, req := range sess.reqs {
		got = append(got, req.NodeID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("execution order %v, want %v", got, want)
	}
}
