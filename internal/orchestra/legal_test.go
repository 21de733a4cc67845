package orchestra

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

var alfTask = tasks.Task{ID: "alfworld/7", Family: "alfworld", TaskType: "alfworld", Prompt: "Complete the ALFWorld instruction shown by the reset observation."}

// customRoles builds roles with the given token envelopes: name → (input, output).
func customRole(id string, in, out int64, nonOutput bool) executor.Role {
	return executor.Role{ID: id, Instruction: "Act as " + id + ".", Envelope: executor.Envelope{InputTokens: in, OutputTokens: out, ModelCalls: 1, WallMS: 1000}, NonOutput: nonOutput}
}

func smallBudget(tokens int64) config.Budget {
	return config.Budget{Tokens: tokens, ToolCalls: 5, WallSeconds: 100, ControllerWallMS: 5000}
}

func texts(actions []Action) []string {
	out := make([]string, len(actions))
	for i, a := range actions {
		out[i] = a.JSON()
	}
	return out
}

func TestLegalInitialState(t *testing.T) {
	r := newTestRuntime(qaTask, newFake(), defaultOptions())
	legal := texts(r.Legal())
	if len(legal) != 6*3 {
		t.Fatalf("%d legal actions, want ADD_AGENT for 6 roles × {none, s1, s2}: %v", len(legal), legal)
	}
	if !slices.IsSorted(legal) {
		t.Error("legal actions are not sorted by canonical text")
	}
	for _, a := range r.Legal() {
		if a.Kind != KindAddAgent || a.NodeID != "n0" {
			t.Errorf("unexpected initial action %s", a.JSON())
		}
	}
}

func TestLegalAfterFirstNode(t *testing.T) {
	r := newTestRuntime(qaTask, newFake(), defaultOptions())
	mustApply(t, r, addAgent("n0", "solver", ""))
	want := []Action{onNode(KindSetOutput, "n0"), onNode(KindDropAgent, "n0"), onNode(KindRerunAgent, "n0"), bind("n0", "s1"), bind("n0", "s2")}
	for _, role := range []string{"solver", "verifier", "planner", "researcher", "finalizer", "tool_user"} {
		want = append(want, addAgent("n1", role, ""), addAgent("n1", role, "s1"), addAgent("n1", role, "s2"))
	}
	got := texts(r.Legal())
	if !slices.Equal(got, texts(sortActions(want))) {
		t.Errorf("legal after one node:\n got %v\nwant %v", got, texts(sortActions(want)))
	}
}

func TestLegalOutputRules(t *testing.T) {
	r := newTestRuntime(qaTask, newFake(), defaultOptions())
	mustApply(t, r, addAgent("n0", "solver", ""))
	mustApply(t, r, addAgent("n1", "planner", ""))
	mustApply(t, r, addAgent("n2", "verifier", ""))
	if isLegal(r, stop) {
		t.Error("STOP legal without an output node")
	}
	if !isLegal(r, onNode(KindSetOutput, "n0")) || !isLegal(r, onNode(KindSetOutput, "n2")) {
		t.Error("SET_OUTPUT missing for output-capable nodes")
	}
	if isLegal(r, onNode(KindSetOutput, "n1")) {
		t.Error("SET_OUTPUT legal for a planner while other roles exist")
	}
	mustApply(t, r, onNode(KindSetOutput, "n0"))
	if !isLegal(r, stop) {
		t.Error("STOP not legal with an output node")
	}
	if isLegal(r, onNode(KindSetOutput, "n0")) || isLegal(r, onNode(KindDropAgent, "n0")) {
		t.Error("the output node can be re-selected or dropped")
	}
	if !isLegal(r, onNode(KindSetOutput, "n2")) || !isLegal(r, onNode(KindDropAgent, "n1")) {
		t.Error("other nodes lost SET_OUTPUT or DROP")
	}
}

func TestLegalNonOutputFallback(t *testing.T) {
	roles := []executor.Role{customRole("solver", 900, 200, false), customRole("planner", 200, 100, true)}
	// 1000 tokens: the solver's 1100-token envelope never fits, so the planner may be output.
	r := newTestRuntime(qaTask, newFake(), Options{Roles: roles, Budget: smallBudget(1000), Interleaved: true, Repair: true})
	if isLegal(r, addAgent("n0", "solver", "")) {
		t.Fatal("unaffordable role offered")
	}
	mustApply(t, r, addAgent("n0", "planner", ""))
	if !isLegal(r, onNode(KindSetOutput, "n0")) {
		t.Error("fallback: a planner-only team whose other roles cannot execute must be able to select an output")
	}
	// With the solver affordable the fallback does not apply.
	r = newTestRuntime(qaTask, newFake(), Options{Roles: roles, Budget: smallBudget(5000), Interleaved: true, Repair: true})
	mustApply(t, r, addAgent("n0", "planner", ""))
	if isLegal(r, onNode(KindSetOutput, "n0")) {
		t.Error("planner selectable although a solver can still be added")
	}
}

func TestLegalCanExecBudgetGating(t *testing.T) {
	roles := []executor.Role{customRole("big", 1000, 500, false), customRole("small", 100, 100, false)}
	toolish := customRole("toolish", 10, 10, false)
	toolish.Envelope.ToolCalls = 6 // more than the episode's 5 tool calls
	roles = append(roles, toolish)
	r := newTestRuntime(qaTask, newFake(), Options{Roles: roles, Menu: testMenu[:1], Budget: smallBudget(2000), Interleaved: true, Repair: true})
	if isLegal(r, addAgent("n0", "toolish", "")) {
		t.Error("a role whose envelope exceeds the tool-call cap is offered")
	}
	mustApply(t, r, addAgent("n0", "big", ""))    // settled 150
	mustApply(t, r, addAgent("n1", "small", ""))  // 300
	mustApply(t, r, onNode(KindRerunAgent, "n0")) // 450: 1550 left ≥ 1500
	if !isLegal(r, addAgent("n2", "big", "")) {
		t.Fatal("big role should still fit")
	}
	mustApply(t, r, onNode(KindRerunAgent, "n1")) // 600: 1400 left < 1500
	for _, a := range []Action{addAgent("n2", "big", ""), onNode(KindRerunAgent, "n0"), bind("n0", "s2"), addEdge("n1", "n0", ProtocolRevise)} {
		if isLegal(r, a) {
			t.Errorf("%s legal although big's envelope no longer fits", a.JSON())
		}
	}
	for _, a := range []Action{addAgent("n2", "small", ""), onNode(KindRerunAgent, "n1"), bind("n1", "s2"), addEdge("n0", "n1", ProtocolRevise), addEdge("n1", "n0", ProtocolFeedback)} {
		if !isLegal(r, a) {
			t.Errorf("%s not legal although small's envelope fits", a.JSON())
		}
	}
}

func TestLegalEdgeRules(t *testing.T) {
	r := newTestRuntime(qaTask, newFake(), defaultOptions())
	mustApply(t, r, addAgent("n0", "solver", ""))
	mustApply(t, r, addAgent("n1", "verifier", ""))
	mustApply(t, r, addAgent("n2", "finalizer", ""))
	for _, a := range r.Legal() {
		if a.Kind == KindAddEdge && a.SourceID == a.TargetID {
			t.Errorf("self-edge offered: %s", a.JSON())
		}
	}
	if n := strings.Count(strings.Join(texts(r.Legal()), "\n"), `"kind":"ADD_EDGE"`); n != 3*2*2 {
		t.Errorf("%d edges offered, want 12 (6 ordered pairs × 2 protocols)", n)
	}
	mustApply(t, r, addEdge("n0", "n1", ProtocolFeedback))
	mustApply(t, r, addEdge("n1", "n2", ProtocolRevise))
	for _, a := range []Action{addEdge("n0", "n1", ProtocolFeedback), addEdge("n0", "n1", ProtocolRevise), addEdge("n1", "n2", ProtocolFeedback), addEdge("n1", "n2", ProtocolRevise)} {
		if isLegal(r, a) {
			t.Errorf("duplicate edge offered: %s", a.JSON())
		}
	}
	for _, a := range []Action{addEdge("n1", "n0", ProtocolFeedback), addEdge("n1", "n0", ProtocolRevise), addEdge("n2", "n1", ProtocolRevise)} {
		if !isLegal(r, a) {
			t.Errorf("reverse edge missing: %s", a.JSON())
		}
	}
}

func TestLegalDropRules(t *testing.T) {
	roles := []executor.Role{customRole("only", 200, 100, false)}
	// 400 tokens: after one execution (150) the 300-token envelope no longer fits.
	r := newTestRuntime(qaTask, newFake(), Options{Roles: roles, Budget: smallBudget(400), Interleaved: true, Repair: true})
	mustApply(t, r, addAgent("n0", "only", ""))
	if isLegal(r, onNode(KindDropAgent, "n0")) {
		t.Error("the last node is droppable although no role can execute")
	}
	r = newTestRuntime(qaTask, newFake(), Options{Roles: roles, Budget: smallBudget(600), Interleaved: true, Repair: true})
	mustApply(t, r, addAgent("n0", "only", ""))
	if !isLegal(r, onNode(KindDropAgent, "n0")) {
		t.Error("a single node is not droppable although a role can execute")
	}
	mustApply(t, r, addAgent("n1", "only", ""))
	mustApply(t, r, onNode(KindRerunAgent, "n0")) // 450 settled: nothing fits
	if !isLegal(r, onNode(KindDropAgent, "n0")) || !isLegal(r, onNode(KindDropAgent, "n1")) {
		t.Error("with two nodes each is droppable")
	}
}

func TestLegalRepairAblation(t *testing.T) {
	opt := defaultOptions()
	opt.Repair = false
	r := newTestRuntime(qaTask, newFake(), opt)
	mustApply(t, r, addAgent("n0", "solver", ""))
	mustApply(t, r, addAgent("n1", "verifier", ""))
	for _, a := range r.Legal() {
		if a.Kind == KindRerunAgent || a.Kind == KindDropAgent {
			t.Errorf("%s legal with repair ablated", a.JSON())
		}
	}
	if !isLegal(r, bind("n0", "s1")) || !isLegal(r, addEdge("n0", "n1", ProtocolRevise)) {
		t.Error("repair ablation removed BIND or revise edges")
	}
}

func TestLegalGatedStop(t *testing.T) {
	webshop := tasks.Task{ID: "webshop/1", Family: "webshop", TaskType: "alfworld", Prompt: "Buy a lamp."}
	for _, task := range []tasks.Task{alfTask, webshop} {
		sess := newFake()
		r := newTestRuntime(task, sess, defaultOptions())
		mustApply(t, r, addAgent("n0", "solver", ""))
		mustApply(t, r, onNode(KindSetOutput, "n0"))
		if isLegal(r, stop) {
			t.Errorf("%s: STOP legal while the environment runs and nodes can execute", task.Family)
		}
		sess.envDone = true
		if !isLegal(r, stop) {
			t.Errorf("%s: STOP not legal once the environment is done", task.Family)
		}
	}
	// Text families are not gated.
	r := newTestRuntime(qaTask, newFake(), defaultOptions())
	mustApply(t, r, addAgent("n0", "solver", ""))
	mustApply(t, r, onNode(KindSetOutput, "n0"))
	if !isLegal(r, stop) {
		t.Error("hotpotqa STOP gated")
	}
	// An explicitly empty gate list disables gating.
	opt := defaultOptions()
	opt.StopGateFamilies = []string{}
	r = newTestRuntime(alfTask, newFake(), opt)
	mustApply(t, r, addAgent("n0", "solver", ""))
	mustApply(t, r, onNode(KindSetOutput, "n0"))
	if !isLegal(r, stop) {
		t.Error("STOP gated with an empty gate list")
	}
	// The gate lifts when no node-executing action is legal: 35700 tokens hold one 35600-token
	// ALFWorld envelope, and after one execution none fits.
	opt = defaultOptions()
	opt.Budget.Tokens = 35700
	r = newTestRuntime(alfTask, newFake(), opt)
	mustApply(t, r, addAgent("n0", "solver", ""))
	mustApply(t, r, onNode(KindSetOutput, "n0"))
	if !isLegal(r, stop) {
		t.Error("STOP gated although nothing can execute")
	}
}

func TestControllerReservationCharge(t *testing.T) {
	r := newTestRuntime(qaTask, newFake(), defaultOptions())
	mustApply(t, r, addAgent("n0", "solver", ""))
	before := r.Ledger().Settled()
	if !r.ControllerReservation(1000, 20) {
		t.Fatal("controller reservation refused")
	}
	if got, want := r.Ledger().Reserved(), (Vector{InputTokens: 1256, OutputTokens: 20, ModelCalls: 1, AgentTurns: 1, WallMS: 5000}); got != want {
		t.Errorf("reserved %+v, want %+v", got, want)
	}
	if _, err := r.Apply(context.Background(), onNode(KindSetOutput, "n0")); err == nil {
		t.Error("Apply accepted while the controller reservation is open")
	}
	r.SettleController(2000, 30) // capped at the reservation
	if got, want := r.Ledger().Settled().sub(before), (Vector{InputTokens: 1256, OutputTokens: 20, ModelCalls: 1, AgentTurns: 1}); got != want || r.Ledger().Reserved() != (Vector{}) {
		t.Errorf("controller charged %+v (reserved %+v), want %+v", got, r.Ledger().Reserved(), want)
	}
	if !r.ControllerReservation(30000, 10) || r.Ledger().Reserved().InputTokens != 24576-256 {
		t.Errorf("input reservation %d, want the window less the action reserve", r.Ledger().Reserved().InputTokens)
	}
	r.SettleController(0, 0)
	// A zero controller wall time in the budget means the default 5000 ms.
	opt := defaultOptions()
	opt.Budget.ControllerWallMS = 0
	r = newTestRuntime(qaTask, newFake(), opt)
	r.ControllerReservation(10, 10)
	if r.Ledger().Reserved().WallMS != 5000 {
		t.Errorf("controller wall reservation %d", r.Ledger().Reserved().WallMS)
	}
}

func TestLegalComputedWithControllerReservationHeld(t *testing.T) {
	roles := []executor.Role{customRole("big", 1000, 500, false), customRole("small", 100, 100, false)}
	r := newTestRuntime(qaTask, newFake(), Options{Roles: roles, Budget: smallBudget(2000), Interleaved: true, Repair: true})
	if !isLegal(r, addAgent("n0", "big", "")) {
		t.Fatal("big not legal at the start")
	}
	if !r.ControllerReservation(400, 50) { // holds 706 tokens: 1500 more no longer fit
		t.Fatal("reservation refused")
	}
	if isLegal(r, addAgent("n0", "big", "")) || !isLegal(r, addAgent("n0", "small", "")) {
		t.Error("legal set ignores the held controller reservation")
	}
	r.SettleController(100, 50)
	if !isLegal(r, addAgent("n0", "big", "")) {
		t.Error("settling did not release the unused controller reservation")
	}
}

func TestFinalisationForcedStop(t *testing.T) {
	for _, task := range []tasks.Task{qaTask, alfTask} { // forced STOP ignores the environment gate
		sess := newFake()
		r := newTestRuntime(task, sess, defaultOptions())
		mustApply(t, r, addAgent("n0", "solver", ""))
		mustApply(t, r, onNode(KindSetOutput, "n0"))
		if r.ControllerReservation(100, 1_000_000) {
			t.Fatal("an impossible controller reservation succeeded")
		}
		if got := texts(r.Legal()); !r.Finalising() || !slices.Equal(got, []string{`{"kind":"STOP"}`}) {
			t.Fatalf("%s: finalising=%v legal=%v, want only STOP", task.Family, r.Finalising(), got)
		}
		mustApply(t, r, stop)
		if !r.Stopped() || len(sess.graded) != 1 {
			t.Errorf("%s: forced STOP did not grade", task.Family)
		}
	}
}

func TestFinalisationForcedSetOutput(t *testing.T) {
	r := newTestRuntime(qaTask, newFake(), defaultOptions())
	for i := 0; i <= 10; i++ {
		role := "planner"
		if i == 2 || i == 10 {
			role = "solver"
		}
		mustApply(t, r, addAgent("n"+strconv.Itoa(i), role, ""))
	}
	r.ControllerReservation(100, 1_000_000)
	if got := texts(r.Legal()); !slices.Equal(got, []string{`{"kind":"SET_OUTPUT","node_id":"n2"}`}) {
		t.Fatalf("forced action %v, want SET_OUTPUT of the lowest-numbered output-capable node n2", got)
	}
	mustApply(t, r, onNode(KindSetOutput, "n2"))
	if r.Finalising() || len(r.Legal()) < 2 {
		t.Error("finalisation did not end with the forced action")
	}
	r.ControllerReservation(100, 1_000_000)
	if got := texts(r.Legal()); !slices.Equal(got, []string{`{"kind":"STOP"}`}) {
		t.Errorf("second forced action %v, want STOP", got)
	}
	// A planner-only team falls back to its lowest-numbered node.
	r = newTestRuntime(qaTask, newFake(), defaultOptions())
	mustApply(t, r, addAgent("n0", "planner", ""))
	mustApply(t, r, addAgent("n1", "planner", ""))
	r.ControllerReservation(100, 1_000_000)
	if got := texts(r.Legal()); !slices.Equal(got, []string{`{"kind":"SET_OUTPUT","node_id":"n0"}`}) {
		t.Errorf("planner-only forced action %v", got)
	}
}

func TestFinalisationEmptyTeamExhausts(t *testing.T) {
	r := newTestRuntime(qaTask, newFake(), defaultOptions())
	if r.Exhausted() {
		t.Fatal("fresh runtime exhausted")
	}
	if r.ControllerReservation(100, 1_000_000) || len(r.Legal()) != 0 || !r.Exhausted() || r.Stopped() {
		t.Error("an empty team under finalisation must end unstopped with nothing legal")
	}
	// The reservation fits but, held, leaves nothing legal: it is released and the runtime finalises.
	roles := []executor.Role{customRole("only", 300, 300, false)}
	r = newTestRuntime(qaTask, newFake(), Options{Roles: roles, Budget: smallBudget(1000), Interleaved: true, Repair: true})
	if r.ControllerReservation(100, 50) || r.Ledger().Reserved() != (Vector{}) || !r.Exhausted() {
		t.Errorf("reservation leaving nothing legal: reserved %+v exhausted %v", r.Ledger().Reserved(), r.Exhausted())
	}
}

func TestOfferCacheKeepsStopAdmissible(t *testing.T) {
	// 36000 tokens: after n0 (150) one 35600-token ALFWorld envelope fits, so the gate hides
	// STOP; with a 400-token controller reservation held it does not, so STOP is offered.
	setup := func() *Runtime {
		opt := defaultOptions()
		opt.Budget.Tokens = 36000
		r := newTestRuntime(alfTask, newFake(), opt)
		mustApply(t, r, addAgent("n0", "solver", ""))
		mustApply(t, r, onNode(KindSetOutput, "n0"))
		return r
	}
	r := setup()
	if !r.ControllerReservation(44, 100) {
		t.Fatal("reservation refused")
	}
	if !isLegal(r, stop) {
		t.Fatal("STOP not offered while nothing can execute")
	}
	r.SettleController(40, 5)
	if slices.ContainsFunc(r.legal(), func(a Action) bool { return a.Kind == KindStop }) {
		t.Fatal("gate should withhold STOP after settlement")
	}
	if _, err := r.Apply(context.Background(), stop); err != nil {
		t.Errorf("offered STOP refused: %v", err)
	}
	r = setup()
	if _, err := r.Apply(context.Background(), stop); err == nil {
		t.Error("gated STOP accepted without having been offered")
	}
}
