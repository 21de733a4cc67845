package orchestra

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/textrules"
)

func TestObservationText(t *testing.T) {
	h := teamState(t).History()
	want := map[int]string{
		0: "Added n0 (solver, skill s1) and executed it: its output states an answer; tool calls: 1 search call (1 success). " +
			"Team: 1 node; 1 of 1 state an answer; answer groups: n0 (1); no output node.",
		2: "Added n2 (planner) and executed it: its output states no answer. " +
			"Team: 3 nodes; 2 of 3 state an answer; answer groups: n0, n1 (2); no output node.",
		4: "Added feedback edge n0->n1; n1 receives n0's output (version 1) at its next execution. " +
			"Team: 4 nodes; 3 of 4 state an answer; answer groups: n0, n1 (2) | n3 (1); no output node; pending feedback edges: n0->n1.",
		5: "Set the output node to n0 (solver, skill s1). " +
			"Team: 4 nodes; 3 of 4 state an answer; answer groups: n0, n1 (2) | n3 (1); output node n0; pending feedback edges: n0->n1.",
		6: "Bound skill s2 to n3 and re-executed it with its previous output: its output states an answer; its output is unchanged. " +
			"Team: 4 nodes; 3 of 4 state an answer; answer groups: n0, n1 (2) | n3 (1); output node n0; pending feedback edges: n0->n1.",
		7: "Added revise edge n1->n3 and re-executed n3 with 1 input and its previous output: its output states an answer; " +
			"its output changed; tool calls: 2 python calls (1 success, 1 failed). " +
			"Team: 4 nodes; 3 of 4 state an answer; answer groups: n0, n1 (2) | n3 (1); output node n0; pending feedback edges: n0->n1.",
	}
	for i, text := range want {
		if h[i].Observation != text {
			t.Errorf("observation %d:\n got %s\nwant %s", i, h[i].Observation, text)
		}
	}
	r := pairState(t, onNode(KindSetOutput, "n0"), onNode(KindDropAgent, "n1"))
	h = r.History()
	if got := h[3].Observation; got != "Re-executed n1 with 1 input and its previous output: its execution failed (truncated); "+
		"its output states no answer; its output changed. Team: 2 nodes; 1 of 2 state an answer; answer groups: n0 (1); no output node." {
		t.Errorf("rerun observation %s (the feedback edge is delivered, so no longer pending)", got)
	}
	if got := h[5].Observation; got != "Dropped n1 and every edge into or out of it. Team: 1 node; 1 of 1 state an answer; answer groups: n0 (1); output node n0." {
		t.Errorf("drop observation %s", got)
	}
	out := mustApply(t, r, stop)
	if !strings.HasPrefix(out.Observation, "Stopped: the output of n0 was submitted for grading. Team:") {
		t.Errorf("stop observation %s", out.Observation)
	}
}

// prescriptive words an observation or diagnosis must not use.
var prescriptive = regexp.MustCompile(`(?i)\b(should|must|try|consider|recommend|suggest|next you|you need)\b`)

func TestObservationsAndDiagnosisDescribeOnly(t *testing.T) {
	for _, r := range []*Runtime{teamState(t), environmentState(t, true), pairState(t, onNode(KindSetOutput, "n0"))} {
		texts := []string{r.Diagnosis(0.5, 0.4, true)}
		for _, ev := range r.History() {
			texts = append(texts, ev.Observation)
		}
		for _, text := range texts {
			if prescriptive.MatchString(text) {
				t.Errorf("prescriptive text: %s", text)
			}
		}
	}
}

func TestDiagnosisEstimateLines(t *testing.T) {
	r := newTestRuntime(qaTask, newFake(), defaultOptions())
	if got := r.Diagnosis(0.4, 0.4, false); got != "No node has executed yet." {
		t.Errorf("unknown value, first decision: %q", got)
	}
	if got := r.Diagnosis(0.4, 0.4, true); got != "No node has executed yet. Estimated final score 0.40 for tasks of this family." {
		t.Errorf("first decision: %q", got)
	}
	mustApply(t, r, addAgent("n0", "solver", ""))
	first := strings.Split(r.Diagnosis(0.55, 0.4, true), "\n")[0]
	if first != "Estimated final score 0.55 (episode start 0.40; +0.15 since start; +0.15 after your last action ADD_AGENT)." {
		t.Errorf("second decision: %q", first)
	}
	mustApply(t, r, onNode(KindSetOutput, "n0"))
	first = strings.Split(r.Diagnosis(0.5, 0.4, true), "\n")[0]
	if first != "Estimated final score 0.50 (episode start 0.40; +0.10 since start; -0.05 after your last action SET_OUTPUT)." {
		t.Errorf("third decision: %q", first)
	}
	if got := r.Diagnosis(0.5, 0.4, false); strings.Contains(got, "Estimated") || !strings.HasPrefix(got, "Team: 1 node, 1 of 1 state an answer, output node n0 selected") {
		t.Errorf("unknown value, later decision: %q", got)
	}
	if signed(-0.001) != "+0.00" || signed(0.126) != "+0.13" || signed(-0.2) != "-0.20" {
		t.Error("signed formatting")
	}
}

func TestDiagnosisTeamLines(t *testing.T) {
	got := teamState(t).Diagnosis(0.5, 0.4, true)
	want := "Estimated final score 0.50 (episode start 0.40; +0.10 since start).\n" +
		"Team: 4 nodes, 3 of 4 state an answer, output node n0 selected, 2 of 4 called a tool, 2 of 3 answers appear in the search results, " +
		"1 of 2 python runs in the nodes' latest executions exited cleanly, answering nodes partly agree, the last execution changed its node's output, " +
		"feedback edge n0->n1 waits for n1's next execution.\n" +
		"Nodes: n0 solver (output node): states an answer, its answer appears in the search results; n1 researcher: states an answer, " +
		"its answer appears in the search results; n2 planner: states no answer; n3 verifier: states an answer, its latest execution did not search, " +
		"1 of 2 python runs exited cleanly.\n" +
		"Answer groups (nodes giving the same answer): n0, n1 | n3."
	if got != want {
		t.Errorf("diagnosis:\n%s\n--- want:\n%s", got, want)
	}
	got = environmentState(t, true).Diagnosis(0.3, 0.2, true)
	want = "Estimated final score 0.30 (episode start 0.20; +0.10 since start).\n" +
		"Team: 1 node, no output node selected, the environment reports the task completed (30 of 50 steps used), last environment action succeeded."
	if got != want {
		t.Errorf("environment diagnosis:\n%s\n--- want:\n%s", got, want)
	}
}

func TestDiagnosisExcludesNonAnswers(t *testing.T) {
	sess := newFake()
	sess.script["n0"] = []executor.Result{answer("The search results do not contain the answer.")}
	sess.script["n1"] = []executor.Result{answer("Answer: <answer>")}
	sess.script["n2"] = []executor.Result{answer("1. Identify the city\n2. Search for it\n3. Verify the result")}
	sess.script["n3"] = []executor.Result{answer("Answer: Paris")}
	r := newTestRuntime(qaTask, sess, defaultOptions())
	for i, role := range []string{"solver", "finalizer", "researcher", "verifier"} {
		mustApply(t, r, addAgent("n"+strconv.Itoa(i), role, ""))
	}
	if f := r.Features(); f[15] != 1 {
		t.Errorf("answered_fraction %v: the features count every stated answer", f[15])
	}
	lines := strings.Split(r.Diagnosis(0.5, 0.5, true), "\n")
	if lines[1] != "Team: 4 nodes, 1 of 4 state an answer (1 refusal, 1 placeholder, 1 plan), no output node selected." {
		t.Errorf("team line %q", lines[1])
	}
	if lines[2] != "Nodes: n0 solver: states no answer (it says the information was not found); n1 finalizer: states no answer (a placeholder); "+
		"n2 researcher: states no answer (a plan); n3 verifier: states an answer." || len(lines) != 3 {
		t.Errorf("nodes lines %q", lines[2:])
	}
}

func TestDiagnosisAgreeingAnswers(t *testing.T) {
	sess := newFake()
	sess.script["n0"] = []executor.Result{answer("Answer: Paris")}
	sess.script["n1"] = []executor.Result{answer("It is the capital.\nanswer: paris.")}
	r := newTestRuntime(qaTask, sess, defaultOptions())
	mustApply(t, r, addAgent("n0", "solver", ""))
	mustApply(t, r, addAgent("n1", "finalizer", ""))
	lines := strings.Split(r.Diagnosis(0.5, 0.5, true), "\n")
	if !strings.HasSuffix(lines[1], "answering nodes agree.") || lines[3] != "Answer groups: all answering nodes give the same answer." {
		t.Errorf("diagnosis %q", lines)
	}
}

func TestControllerPrompt(t *testing.T) {
	sess := newFake()
	long := strings.Repeat("x", 1500) + strings.Repeat("y", 1500)
	sess.script["n0"] = []executor.Result{answer(long)}
	opt := defaultOptions()
	opt.Menu = append(slices.Clone(testMenu), MenuSkill{ID: "s3", ContentHash: "sha256:3", Name: strings.Repeat("N", 200), Text: "t"})
	r := newTestRuntime(qaTask, sess, opt)
	first := r.ControllerPrompt(0.4, 0)
	if !strings.HasSuffix(first, "\n\nDiagnosis:\nNo node has executed yet. Estimated final score 0.40 for tasks of this family.") {
		t.Errorf("first prompt ends %q", first[len(first)-120:])
	}
	mustApply(t, r, addAgent("n0", "solver", ""))
	prompt := r.ControllerPrompt(0.55, 0.15)
	if prompt != r.ControllerPrompt(0.55, 0.15) {
		t.Error("the prompt is not deterministic")
	}
	body, diagnosis, ok := strings.Cut(prompt, "\n\nDiagnosis:\n")
	if !ok || !strings.HasPrefix(diagnosis, "Estimated final score 0.55 (episode start 0.40; +0.15 since start; +0.15 after your last action ADD_AGENT).\nTeam: 1 node") {
		t.Fatalf("diagnosis part %q", diagnosis)
	}
	var doc struct {
		TaskFamily  string              `json:"task_family"`
		Value       float64             `json:"reference_value"`
		ValueChange float64             `json:"reference_value_change"`
		Legal       []map[string]string `json:"legal_actions"`
		Execution   json.RawMessage     `json:"execution"`
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.TaskFamily != "hotpotqa" || doc.Value != 0.55 || doc.ValueChange != 0.15 {
		t.Errorf("header %+v", doc)
	}
	var legal []string
	for _, fields := range doc.Legal {
		a := Action{Kind: fields["kind"]}
		for k, v := range fields {
			if p := a.field(k); p != nil {
				*p = v
			}
		}
		legal = append(legal, a.JSON())
	}
	if !slices.Equal(legal, texts(r.Legal())) {
		t.Error("legal_actions differ from Legal()")
	}
	var exec map[string]json.RawMessage
	if err := json.Unmarshal(doc.Execution, &exec); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"graph", "roles", "skill_menu", "history", "budget_available", "total_token_budget", "feature_names", "execution_features", "stopped", "task_prompt"} {
		if _, ok := exec[key]; !ok {
			t.Errorf("execution lacks %s", key)
		}
	}
	for _, key := range []string{"runtime_id", "executor_identity", "prompt", "node_request", "controller_budget_finalization"} {
		if _, ok := exec[key]; ok {
			t.Errorf("execution shows %s", key)
		}
	}
	wantOutput := strings.Repeat("x", 1200) + "[... 600 characters omitted ...]" + strings.Repeat("y", 1200)
	if !strings.Contains(string(exec["graph"]), `"output":"`+wantOutput+`"`) {
		t.Error("node output not cut to 1200 head + 1200 tail characters")
	}
	if !strings.Contains(string(exec["skill_menu"]), `{"content_hash":"sha256:3","name":"`+strings.Repeat("N", 120)+`","skill_id":"s3"}`) {
		t.Errorf("skill menu %s", exec["skill_menu"])
	}
	var features []float64
	if err := json.Unmarshal(exec["execution_features"], &features); err != nil || len(features) != 30 {
		t.Fatal(err)
	}
	for i, f := range r.Features() {
		if float32(features[i]) != f {
			t.Errorf("execution_features[%d] = %v, Features = %v", i, features[i], f)
		}
	}
	if string(exec["total_token_budget"]) != `{"available":98154,"cap":98304}` {
		t.Errorf("total_token_budget %s", exec["total_token_budget"])
	}
	// A failed controller reservation is visible to the controller.
	r.ControllerReservation(textrules.Tokens(prompt), 1_000_000)
	if !strings.Contains(r.ControllerPrompt(0.55, 0), `"controller_budget_finalization":true`) {
		t.Error("finalisation not shown")
	}
}

// TestControllerPromptWithoutValue: the value-head ablation withholds v̂ and its change from
// the state: no value fields and no estimate lines.
func TestControllerPromptWithoutValue(t *testing.T) {
	sess := newFake()
	sess.script["n0"] = []executor.Result{answer("Answer: Paris")}
	r := newTestRuntime(qaTask, sess, defaultOptions())
	if got := r.ControllerPromptWithoutValue(); !strings.HasSuffix(got, "\n\nDiagnosis:\nNo node has executed yet.") {
		t.Errorf("first prompt ends %q", got[max(0, len(got)-80):])
	}
	mustApply(t, r, addAgent("n0", "solver", ""))
	p := r.ControllerPromptWithoutValue()
	body, diagnosis, _ := strings.Cut(p, "\n\nDiagnosis:\n")
	if strings.Contains(body, "reference_value") || strings.Contains(diagnosis, "Estimated final score") || !strings.HasPrefix(diagnosis, "Team: 1 node") {
		t.Fatalf("withheld value still shown:\n%s", p)
	}
}
