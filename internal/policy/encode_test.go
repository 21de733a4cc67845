package policy

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

// Offsets of the state vector after the 30 features and the task-type one-hot (T entries).
const (
	stValue = iota
	stValueChange
	stTokens
	stToolCalls
	stWall
	stMenu
	stCandidates
	stValidated
	stOutputAnswered
	stDisagree
	stLargestShare
	stFinalising
	stTeam                     // live nodes per role, n/(n+1), in Roles order
	stOutputRole = stTeam + 6  // the output node's role one-hot
	stCount      = stTeam + 12 // entries after the task-type one-hot
)

// Offsets of an action descriptor.
const (
	dKind        = 0
	dRole        = 7
	dSkill       = 13
	dCandidate   = 14
	dValidated   = 15
	dFeedback    = 16
	dRevise      = 17
	dTgtAnswered = 18
	dTgtFailed   = 19
	dTgtOutput   = 20
	dTgtExecs    = 21
	dTgtLargest  = 22
	dSrcAnswered = 23
	dSrcFailed   = 24
	dSrcOutput   = 25
	dSrcLargest  = 26
	dNewest      = 27
)

// teamScript: n0 and n1 answer Paris, the verifier n2 answers Lyon, n3 times out.
func teamScript() map[string][]executor.Result {
	return map[string][]executor.Result{
		"n0": {answered("The capital is well known.\nAnswer: Paris")},
		"n1": {answered("Answer: paris")},
		"n2": {answered("Verdict: the inputs contain an error\nAnswer: Lyon")},
		"n3": {timedOut()},
	}
}

// buildTeam plays the team state the encoding checks read: n0 (output, answered Paris),
// n1 (Paris), n2 verifier with the validated skill s2 (Lyon) receiving n0 by feedback,
// n3 failed.
func buildTeam(t *testing.T) *orchestra.Runtime {
	t.Helper()
	rt := newRuntime(teamScript(), testMenu)
	act(t, rt, addAgent("n0", "solver", ""))
	act(t, rt, onNode(orchestra.KindSetOutput, "n0"))
	act(t, rt, addAgent("n1", "solver", ""))
	act(t, rt, addAgent("n2", "verifier", "s2"))
	act(t, rt, addEdge("n0", "n2", orchestra.ProtocolFeedback))
	act(t, rt, addAgent("n3", "solver", ""))
	return rt
}

// descriptor is the encoded row of action a.
func descriptor(t *testing.T, d *Decision, actions []float32, a orchestra.Action) []float32 {
	t.Helper()
	i := mustFind(t, d.Legal, a)
	return actions[i*ActionWidth : (i+1)*ActionWidth]
}

func checkWidths(t *testing.T, d *Decision) (state, actions []float32) {
	t.Helper()
	state, actions = Encode(d)
	if len(state) != StateWidth(len(d.Families)) {
		t.Fatalf("state width %d, want StateWidth(%d) = %d", len(state), len(d.Families), StateWidth(len(d.Families)))
	}
	if len(actions) != len(d.Legal)*ActionWidth {
		t.Fatalf("%d action inputs for %d legal actions, want %d", len(actions), len(d.Legal), len(d.Legal)*ActionWidth)
	}
	for i, v := range append(slices.Clone(state), actions...) {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("entry %d is %v", i, v)
		}
	}
	// The encoding's answer groups agree with feature 17: answers agree somewhere exactly
	// when a group of two or more exists.
	feat, f := d.RT.Features(), newFacts(d.RT)
	if (feat[17] > 0) != (f.largest >= 2) {
		t.Fatalf("feature 17 = %v but the largest answer group holds %d", feat[17], f.largest)
	}
	for i := range d.Legal {
		row := actions[i*ActionWidth : (i+1)*ActionWidth]
		ones := 0
		for _, v := range row[dKind:dRole] {
			ones += int(v)
		}
		if ones != 1 || row[dKind+slices.Index(Kinds, d.Legal[i].Kind)] != 1 {
			t.Fatalf("%s: kind one-hot %v", d.Legal[i].JSON(), row[dKind:dRole])
		}
	}
	return state, actions
}

func TestStateWidth(t *testing.T) {
	if StateWidth(6) != 60 || StateWidth(0) != 54 {
		t.Errorf("StateWidth(6) = %d, StateWidth(0) = %d; want 60, 54", StateWidth(6), StateWidth(0))
	}
	if len(Kinds) != 7 || len(Roles) != 6 || ActionWidth != 28 {
		t.Errorf("%d kinds, %d roles, action width %d", len(Kinds), len(Roles), ActionWidth)
	}
}

// TestEncodeWidthsAlongEpisodes encodes every state of several scripted episodes: the
// widths always match, for every family list.
func TestEncodeWidthsAlongEpisodes(t *testing.T) {
	plays := [][]orchestra.Action{
		{addAgent("n0", "solver", ""), onNode(orchestra.KindSetOutput, "n0"), stop},
		{addAgent("n0", "planner", "s1"), addAgent("n1", "solver", ""), addEdge("n0", "n1", orchestra.ProtocolRevise),
			bindSkill("n1", "s2"), onNode(orchestra.KindRerunAgent, "n1"), onNode(orchestra.KindSetOutput, "n1"),
			onNode(orchestra.KindDropAgent, "n0"), stop},
		{addAgent("n0", "solver", ""), addAgent("n1", "solver", ""), addAgent("n2", "verifier", "s2"),
			addEdge("n0", "n2", orchestra.ProtocolFeedback), addAgent("n3", "solver", ""),
			onNode(orchestra.KindRerunAgent, "n3"), onNode(orchestra.KindSetOutput, "n2"), stop},
	}
	for _, fams := range [][]string{families, {"hotpotqa"}, nil} {
		for p, play := range plays {
			for _, menu := range [][]orchestra.MenuSkill{testMenu, nil} {
				if menu == nil && p > 0 {
					continue // the plays bind skills
				}
				rt := newRuntime(teamScript(), menu)
				for k, a := range play {
					d := &Decision{RT: rt, Legal: rt.Legal(), Families: fams, Value: 0.5}
					t.Run(fmt.Sprintf("families%d/play%d/step%d", len(fams), p, k), func(t *testing.T) { checkWidths(t, d) })
					act(t, rt, a)
				}
			}
		}
	}
}

func TestEncodeEmptyTeam(t *testing.T) {
	rt := newRuntime(nil, testMenu)
	d := &Decision{RT: rt, Legal: rt.Legal(), Families: families, Value: 0.25, ValueChange: -0.125}
	state, actions := checkWidths(t, d)
	if len(d.Legal) != 6*3 {
		t.Fatalf("%d legal actions in the empty team, want 18", len(d.Legal))
	}
	feat := rt.Features()
	if !slices.Equal(state[:30], feat[:]) {
		t.Errorf("state[:30] = %v, want the features %v", state[:30], feat)
	}
	want := []float32{1, 0, 0, 0, 0, 0, // hotpotqa
		0.25, -0.125, 1, 1, 1, // value, change, full budget
		2.0 / 3, 1.0 / 3, 1.0 / 3, // menu of 2: one candidate, one validated
		0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, // no nodes
		0, 0, 0, 0, 0, 0} // no output
	if got := state[30:]; !slices.Equal(got, want) {
		t.Errorf("state[30:] = %v, want %v", got, want)
	}

	row := descriptor(t, d, actions, addAgent("n0", "verifier", "s1"))
	wantRow := make([]float32, ActionWidth)
	wantRow[dKind+0] = 1    // ADD_AGENT
	wantRow[dRole+1] = 1    // verifier
	wantRow[dSkill] = 1     // a skill...
	wantRow[dCandidate] = 1 // ...that is a candidate
	if !slices.Equal(row, wantRow) {
		t.Errorf("ADD_AGENT(verifier, s1) = %v, want %v", row, wantRow)
	}
	row = descriptor(t, d, actions, addAgent("n0", "tool_user", "s2"))
	clear(wantRow)
	wantRow[dKind+0], wantRow[dRole+5], wantRow[dSkill], wantRow[dValidated] = 1, 1, 1, 1
	if !slices.Equal(row, wantRow) {
		t.Errorf("ADD_AGENT(tool_user, s2) = %v, want %v", row, wantRow)
	}
	row = descriptor(t, d, actions, addAgent("n0", "researcher", ""))
	clear(wantRow)
	wantRow[dKind+0], wantRow[dRole+3] = 1, 1
	if !slices.Equal(row, wantRow) {
		t.Errorf("ADD_AGENT(researcher) = %v, want %v", row, wantRow)
	}
}

func TestEncodeTeamState(t *testing.T) {
	rt := buildTeam(t)
	d := &Decision{RT: rt, Legal: rt.Legal(), Families: families, Value: 0.75, ValueChange: 0.5}
	state, actions := checkWidths(t, d)

	// State.
	feat := rt.Features()
	if !slices.Equal(state[:30], feat[:]) {
		t.Errorf("state[:30] = %v, want the features %v", state[:30], feat)
	}
	s := state[30+len(families):]
	if len(s) != stCount {
		t.Fatalf("%d state entries after the one-hot, want %d", len(s), stCount)
	}
	checks := []struct {
		name string
		i    int
		want float32
	}{
		{"value", stValue, 0.75},
		{"value change", stValueChange, 0.5},
		{"tokens available", stTokens, float32((98304.0 - 4*150) / 98304)}, // 4 executions of 150 tokens
		{"tool calls available", stToolCalls, 1},
		{"wall time available", stWall, float32((600000.0 - 4*1000) / 600000)},
		{"menu size", stMenu, 2.0 / 3},
		{"menu candidates", stCandidates, 1.0 / 3},
		{"menu validated", stValidated, 1.0 / 3},
		{"output answered", stOutputAnswered, 1},
		{"answers disagree", stDisagree, 1},
		{"largest group share", stLargestShare, 2.0 / 3}, // Paris x2 of three answers
		{"finalising", stFinalising, 0},
		{"solvers", stTeam + 0, 3.0 / 4}, // n0, n1, n3
		{"verifiers", stTeam + 1, 1.0 / 2},
		{"planners", stTeam + 2, 0},
		{"output is a solver", stOutputRole + 0, 1},
		{"output is a verifier", stOutputRole + 1, 0},
	}
	for _, c := range checks {
		if math.Abs(float64(s[c.i]-c.want)) > 1e-6 {
			t.Errorf("%s = %v, want %v", c.name, s[c.i], c.want)
		}
	}
	if feat[17] != 1.0/3 { // answer agreement: one agreeing pair of three
		t.Errorf("feature 17 = %v, want 1/3", feat[17])
	}

	type entry struct {
		i int
		v float32
	}
	expect := func(a orchestra.Action, entries ...entry) {
		t.Helper()
		want := make([]float32, ActionWidth)
		for _, e := range entries {
			want[e.i] = e.v
		}
		if got := descriptor(t, d, actions, a); !slices.Equal(got, want) {
			t.Errorf("%s:\n got %v\nwant %v", a.JSON(), got, want)
		}
	}
	half := float32(0.5) // one execution: 1/(1+1)
	// A node action's role is its target's; target facts of the output n0 (answered, in the
	// largest group, not the newest).
	expect(onNode(orchestra.KindRerunAgent, "n0"), entry{dKind + 4, 1}, entry{dRole + 0, 1},
		entry{dTgtAnswered, 1}, entry{dTgtOutput, 1}, entry{dTgtExecs, half}, entry{dTgtLargest, 1})
	// The failed newest node n3.
	expect(onNode(orchestra.KindRerunAgent, "n3"), entry{dKind + 4, 1}, entry{dRole + 0, 1},
		entry{dTgtFailed, 1}, entry{dTgtExecs, half}, entry{dNewest, 1})
	expect(onNode(orchestra.KindDropAgent, "n3"), entry{dKind + 5, 1}, entry{dRole + 0, 1},
		entry{dTgtFailed, 1}, entry{dTgtExecs, half}, entry{dNewest, 1})
	// The verifier n2: answered (Lyon), outside the largest group.
	expect(onNode(orchestra.KindSetOutput, "n2"), entry{dKind + 3, 1}, entry{dRole + 1, 1},
		entry{dTgtAnswered, 1}, entry{dTgtExecs, half})
	expect(onNode(orchestra.KindSetOutput, "n1"), entry{dKind + 3, 1}, entry{dRole + 0, 1},
		entry{dTgtAnswered, 1}, entry{dTgtExecs, half}, entry{dTgtLargest, 1})
	// Skill bits of BIND_SKILL: the candidate s1 on n2 (n2 already holds s2).
	expect(bindSkill("n2", "s1"), entry{dKind + 2, 1}, entry{dRole + 1, 1}, entry{dSkill, 1}, entry{dCandidate, 1},
		entry{dTgtAnswered, 1}, entry{dTgtExecs, half})
	expect(bindSkill("n1", "s2"), entry{dKind + 2, 1}, entry{dRole + 0, 1}, entry{dSkill, 1}, entry{dValidated, 1},
		entry{dTgtAnswered, 1}, entry{dTgtExecs, half}, entry{dTgtLargest, 1})
	// Edges: the role is the target's; protocol bits; target and source facts.
	expect(addEdge("n1", "n2", orchestra.ProtocolRevise), entry{dKind + 1, 1}, entry{dRole + 1, 1}, entry{dRevise, 1},
		entry{dTgtAnswered, 1}, entry{dTgtExecs, half},
		entry{dSrcAnswered, 1}, entry{dSrcLargest, 1})
	expect(addEdge("n3", "n0", orchestra.ProtocolFeedback), entry{dKind + 1, 1}, entry{dRole + 0, 1}, entry{dFeedback, 1},
		entry{dTgtAnswered, 1}, entry{dTgtOutput, 1}, entry{dTgtExecs, half}, entry{dTgtLargest, 1},
		entry{dSrcFailed, 1})
	expect(addEdge("n0", "n3", orchestra.ProtocolFeedback), entry{dKind + 1, 1}, entry{dRole + 0, 1}, entry{dFeedback, 1},
		entry{dTgtFailed, 1}, entry{dTgtExecs, half}, entry{dNewest, 1},
		entry{dSrcAnswered, 1}, entry{dSrcOutput, 1}, entry{dSrcLargest, 1})
	// ADD_AGENT with a skill after the team exists; STOP carries its kind alone.
	expect(addAgent("n4", "finalizer", "s2"), entry{dKind + 0, 1}, entry{dRole + 4, 1}, entry{dSkill, 1}, entry{dValidated, 1})
	expect(addAgent("n4", "planner", ""), entry{dKind + 0, 1}, entry{dRole + 2, 1})
	expect(stop, entry{dKind + 6, 1})
	if slices.ContainsFunc(d.Legal, func(a orchestra.Action) bool { return a.JSON() == addEdge("n0", "n2", "feedback").JSON() }) {
		t.Error("the occupied edge n0->n2 is offered again")
	}

	// A rerun raises the executions fraction to 2/3.
	act(t, rt, onNode(orchestra.KindRerunAgent, "n1"))
	d = &Decision{RT: rt, Legal: rt.Legal(), Families: families}
	_, actions = checkWidths(t, d)
	if got := descriptor(t, d, actions, onNode(orchestra.KindSetOutput, "n1"))[dTgtExecs]; math.Abs(float64(got)-2.0/3) > 1e-6 {
		t.Errorf("executions fraction after a rerun = %v, want 2/3", got)
	}
}

// TestEncodeAgreementState: answers that all agree give no disagreement and share 1.
func TestEncodeAgreementState(t *testing.T) {
	rt := newRuntime(map[string][]executor.Result{"n1": {answered("Answer: n0")}}, nil)
	addSolvers(t, rt, 0, 2)
	d := decision(rt)
	state, _ := checkWidths(t, d)
	s := state[30+len(families):]
	if s[stOutputAnswered] != 0 || s[stDisagree] != 0 || s[stLargestShare] != 1 {
		t.Errorf("two agreeing answers, no output: output answered %v, disagree %v, share %v; want 0, 0, 1",
			s[stOutputAnswered], s[stDisagree], s[stLargestShare])
	}
	if s[stMenu] != 0 || s[stCandidates] != 0 || s[stValidated] != 0 {
		t.Errorf("empty menu encoded as %v", s[stMenu:stValidated+1])
	}
	// A single answer is a group of one: share 1, no disagreement, not a "largest group".
	rt = newRuntime(nil, nil)
	addSolvers(t, rt, 0, 1)
	d = decision(rt)
	state, actions := checkWidths(t, d)
	s = state[30+len(families):]
	if s[stDisagree] != 0 || s[stLargestShare] != 1 {
		t.Errorf("one answer: disagree %v, share %v; want 0, 1", s[stDisagree], s[stLargestShare])
	}
	if descriptor(t, d, actions, onNode(orchestra.KindSetOutput, "n0"))[dTgtLargest] != 0 {
		t.Error("a lone answer counts as the largest agreeing group")
	}
}

// TestEncodeNewestNode: the newest node is the highest-numbered live one (n10 after n9), and
// after it is dropped the next highest.
func TestEncodeNewestNode(t *testing.T) {
	rt := newRuntime(nil, nil)
	addSolvers(t, rt, 0, 11)
	act(t, rt, onNode(orchestra.KindSetOutput, "n0"))
	newest := func() []string {
		d := decision(rt)
		_, actions := checkWidths(t, d)
		var ids []string
		for i, a := range d.Legal {
			if a.Kind == orchestra.KindRerunAgent && actions[i*ActionWidth+dNewest] == 1 {
				ids = append(ids, a.NodeID)
			}
		}
		return ids
	}
	if got := newest(); !slices.Equal(got, []string{"n10"}) {
		t.Errorf("newest among n0..n10: %v, want [n10]", got)
	}
	act(t, rt, onNode(orchestra.KindDropAgent, "n10"))
	if got := newest(); !slices.Equal(got, []string{"n9"}) {
		t.Errorf("newest after dropping n10: %v, want [n9]", got)
	}
}

// TestEncodeTaskTypeOneHot: the one-hot follows the family list's order and the task type,
// so an OOD family lands on its IID task type.
func TestEncodeTaskTypeOneHot(t *testing.T) {
	for _, c := range []struct {
		task tasks.Task
		fams []string
		want []float32
	}{
		{tasks.Task{ID: "mbpp_plus/1", Family: "mbpp_plus", TaskType: "mbpp_plus", Prompt: "Write f."}, families, []float32{0, 0, 0, 0, 1, 0}},
		{tasks.Task{ID: "musique/1", Family: "musique", TaskType: "hotpotqa", Prompt: "Who?"}, families, []float32{1, 0, 0, 0, 0, 0}},
		{tasks.Task{ID: "medqa/1", Family: "medqa", TaskType: "medqa", Prompt: "Which?"}, []string{"medqa", "hotpotqa"}, []float32{1, 0}},
		{tasks.Task{ID: "x/1", Family: "x", TaskType: "", Prompt: "?"}, []string{"medqa", "hotpotqa"}, []float32{0, 0}},
	} {
		rt := orchestra.New(c.task, newFake(nil), 1, orchestra.Options{Budget: testBudget, Interleaved: true, Repair: true,
			Roles: orchestra.RolesFor("hotpotqa", "")})
		d := &Decision{RT: rt, Legal: rt.Legal(), Families: c.fams}
		state, _ := checkWidths(t, d)
		if got := state[30 : 30+len(c.fams)]; !slices.Equal(got, c.want) {
			t.Errorf("%s with families %v: one-hot %v, want %v", c.task.ID, c.fams, got, c.want)
		}
	}
}

// TestEncodeFinalising: after a failed controller reservation the state says so and the
// single forced action is encoded.
func TestEncodeFinalising(t *testing.T) {
	budget := testBudget
	budget.ControllerWallMS = 10_000_000 // the controller can never reserve its wall time
	rt := orchestra.New(qaTask, newFake(nil), 42, orchestra.Options{Budget: budget, Interleaved: true, Repair: true})
	act(t, rt, addAgent("n0", "solver", ""))
	if rt.ControllerReservation(1000, 20) {
		t.Fatal("the controller reservation fitted")
	}
	d := decision(rt)
	if len(d.Legal) != 1 || d.Legal[0].JSON() != onNode(orchestra.KindSetOutput, "n0").JSON() {
		t.Fatalf("finalising legal set %v, want the forced SET_OUTPUT(n0)", texts(d.Legal))
	}
	state, actions := checkWidths(t, d)
	if state[30+len(d.Families)+stFinalising] != 1 {
		t.Error("finalising is not encoded")
	}
	if actions[dKind+3] != 1 || actions[dTgtAnswered] != 1 || actions[dNewest] != 1 {
		t.Errorf("forced SET_OUTPUT(n0) encoded as %v", actions)
	}
	lp, err := NewPrior(config.ReferencePrior{SetOutputUnanswered: -5, SetOutputAnswered: 3}).LogProbs(d)
	if err != nil || len(lp) != 1 || lp[0] != 0 {
		t.Errorf("the prior's log-prob of the forced action = %v, %v; want exactly 0", lp, err)
	}
}

// TestEncodeDoesNotChangeTheRuntime: encoding twice gives the same vectors and leaves the
// legal set and the features as they were.
func TestEncodeDoesNotChangeTheRuntime(t *testing.T) {
	rt := buildTeam(t)
	d := decision(rt)
	feat := rt.Features()
	s1, a1 := Encode(d)
	s2, a2 := Encode(d)
	if !slices.Equal(s1, s2) || !slices.Equal(a1, a2) {
		t.Error("encoding the same decision twice differs")
	}
	if f := rt.Features(); f != feat || !slices.Equal(texts(rt.Legal()), texts(d.Legal)) {
		t.Error("encoding changed the runtime")
	}
}

// TestEncodeDisagreementWithoutOutput: two different answers and a planner's plan, no output
// yet: answers disagree, the output states nothing, the largest group holds half the
// answers; the planner is neither answered nor failed.
func TestEncodeDisagreementWithoutOutput(t *testing.T) {
	plan := executor.Result{Output: "Plan:\n1. Find the country.\n2. Name its capital.", Status: "success", Usage: fakeUsage}
	rt := newRuntime(map[string][]executor.Result{
		"n0": {answered("Answer: Paris")}, "n1": {answered("Answer: Lyon")}, "n2": {plan},
	}, nil)
	addSolvers(t, rt, 0, 2)
	act(t, rt, addAgent("n2", "planner", ""))
	d := decision(rt)
	state, actions := checkWidths(t, d)
	s := state[30+len(families):]
	if s[stOutputAnswered] != 0 || s[stDisagree] != 1 || s[stLargestShare] != 0.5 {
		t.Errorf("output answered %v, disagree %v, share %v; want 0, 1, 0.5", s[stOutputAnswered], s[stDisagree], s[stLargestShare])
	}
	row := descriptor(t, d, actions, onNode(orchestra.KindRerunAgent, "n2"))
	if row[dRole+2] != 1 || row[dTgtAnswered] != 0 || row[dTgtFailed] != 0 || row[dNewest] != 1 || row[dTgtLargest] != 0 {
		t.Errorf("RERUN(planner n2) = %v", row)
	}
	row = descriptor(t, d, actions, addEdge("n2", "n0", orchestra.ProtocolFeedback))
	if row[dRole+0] != 1 || row[dSrcAnswered] != 0 || row[dSrcFailed] != 0 || row[dTgtAnswered] != 1 || row[dTgtLargest] != 0 {
		t.Errorf("ADD_EDGE(n2->n0) = %v", row)
	}
	if slices.ContainsFunc(d.Legal, func(a orchestra.Action) bool {
		return a.Kind == orchestra.KindSetOutput && a.NodeID == "n2"
	}) {
		t.Error("the planner is offered as the output while solvers exist")
	}
}

// TestEncodeEmptyAnswersNeverAgree: answers whose key is empty (an empty code block, an empty
// \boxed{}) state an answer but agree with nothing, as feature 17 counts them.
func TestEncodeEmptyAnswersNeverAgree(t *testing.T) {
	rt := newRuntime(map[string][]executor.Result{
		"n0": {answered("```python\n```")}, "n1": {answered("```python\n```")}, "n2": {answered("So the final result is \\boxed{}.")},
	}, nil)
	addSolvers(t, rt, 0, 3)
	act(t, rt, onNode(orchestra.KindSetOutput, "n0"))
	d := decision(rt)
	state, actions := checkWidths(t, d)
	if feat := rt.Features(); feat[15] != 1 || feat[17] != 0 {
		t.Fatalf("features 15, 17 = %v, %v; want every node answered and no agreement", feat[15], feat[17])
	}
	s := state[30+len(families):]
	if s[stOutputAnswered] != 1 || s[stDisagree] != 1 || math.Abs(float64(s[stLargestShare])-1.0/3) > 1e-6 {
		t.Errorf("output answered %v, disagree %v, share %v; want 1, 1, 1/3", s[stOutputAnswered], s[stDisagree], s[stLargestShare])
	}
	if row := descriptor(t, d, actions, onNode(orchestra.KindSetOutput, "n1")); row[dTgtAnswered] != 1 || row[dTgtLargest] != 0 {
		t.Errorf("SET_OUTPUT(n1) = %v: answered, not in an agreeing group", row)
	}
	p := NewPrior(config.ReferencePrior{})
	if fired := p.Fired(d, stop); !slices.Equal(fired, []string{"stop", "stop_output_answered"}) {
		t.Errorf("STOP over empty answers fires %v; want no agreement", fired)
	}
}
