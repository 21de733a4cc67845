package policy

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

// priorKeys are the yaml keys of config.ReferencePrior in field order.
func priorKeys() []string {
	typ := reflect.TypeFor[config.ReferencePrior]()
	keys := make([]string, typ.NumField())
	for i := range keys {
		keys[i], _, _ = strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
	}
	return keys
}

// distinctWeights gives every weight a different value: field i weighs i+1.5 (negated for odd i).
func distinctWeights() (config.ReferencePrior, map[string]float64) {
	var w config.ReferencePrior
	byKey := map[string]float64{}
	v := reflect.ValueOf(&w).Elem()
	for i, key := range priorKeys() {
		x := float64(i) + 1.5
		if i%2 == 1 {
			x = -x
		}
		v.Field(i).SetFloat(x)
		byKey[key] = x
	}
	return w, byKey
}

// TestIndicatorsMatchConfig: one indicator per reference_prior key, in the same order, each
// reading the weight of its own key.
func TestIndicatorsMatchConfig(t *testing.T) {
	var names []string
	for _, ind := range indicators {
		names = append(names, ind.name)
	}
	if keys := priorKeys(); !slices.Equal(names, keys) {
		t.Fatalf("indicators %v\nwant the reference_prior keys %v", names, keys)
	}
	w, byKey := distinctWeights()
	for _, ind := range indicators {
		if got := ind.weight(&w); got != byKey[ind.name] {
			t.Errorf("indicator %s reads weight %v, want its key's %v", ind.name, got, byKey[ind.name])
		}
	}
}

// priorStates are the states the indicator checks read.
type priorStates struct {
	empty     *Decision // no node
	disagree  *Decision // n0 Paris, n1 Lyon; no output
	agreeOut  *Decision // n0 (output) and n1 both Paris; n2 verifier (Paris); n3 failed
	failedOut *Decision // n0 failed and the output; n1 Paris
	lonely    *Decision // n0 Paris, the output, alone
	checked   *Decision // agreeOut after a revise edge n0 -> n2: the verifier n2 has checked an answer
	acting    *Decision // an interactive task: n0 acted and is the output, the environment runs on
}

func buildPriorStates(t *testing.T) priorStates {
	t.Helper()
	var s priorStates
	rt := newRuntime(nil, testMenu)
	s.empty = decision(rt)

	rt = newRuntime(map[string][]executor.Result{"n0": {answered("Answer: Paris")}, "n1": {answered("Answer: Lyon")}}, testMenu)
	addSolvers(t, rt, 0, 2)
	s.disagree = decision(rt)

	rt = newRuntime(map[string][]executor.Result{
		"n0": {answered("Answer: Paris")}, "n1": {answered("Answer: paris")},
		"n2": {answered("Verdict: the inputs are consistent\nAnswer: Paris")}, "n3": {timedOut()},
	}, testMenu)
	addSolvers(t, rt, 0, 2)
	act(t, rt, onNode(orchestra.KindSetOutput, "n0"))
	act(t, rt, addAgent("n2", "verifier", ""))
	act(t, rt, addAgent("n3", "solver", ""))
	s.agreeOut = decision(rt)

	rt = newRuntime(map[string][]executor.Result{"n0": {timedOut()}, "n1": {answered("Answer: Paris")}}, testMenu)
	addSolvers(t, rt, 0, 1)
	act(t, rt, onNode(orchestra.KindSetOutput, "n0"))
	addSolvers(t, rt, 1, 2)
	s.failedOut = decision(rt)

	rt = newRuntime(map[string][]executor.Result{"n0": {answered("Answer: Paris")}}, testMenu)
	addSolvers(t, rt, 0, 1)
	act(t, rt, onNode(orchestra.KindSetOutput, "n0"))
	s.lonely = decision(rt)

	rt = newRuntime(map[string][]executor.Result{
		"n0": {answered("Answer: Paris")}, "n1": {answered("Answer: paris")},
		"n2": {answered("Answer: Paris"), answered("Verdict: the inputs are consistent\nAnswer: Paris")}, "n3": {timedOut()},
	}, testMenu)
	addSolvers(t, rt, 0, 2)
	act(t, rt, onNode(orchestra.KindSetOutput, "n0"))
	act(t, rt, addAgent("n2", "verifier", ""))
	act(t, rt, addAgent("n3", "solver", ""))
	act(t, rt, addEdge("n0", "n2", "revise"))
	s.checked = decision(rt)

	alf := tasks.Task{ID: "alfworld/1", Family: "alfworld", TaskType: "alfworld", Prompt: "Put a clean mug in the coffee machine."}
	rt = orchestra.New(alf, newFake(map[string][]executor.Result{"n0": {answered(`{"actions":["look"],"episode_done":false}`)}}), 42,
		orchestra.Options{Budget: testBudget, Interleaved: true, Repair: true})
	act(t, rt, addAgent("n0", "solver", ""))
	act(t, rt, onNode(orchestra.KindSetOutput, "n0"))
	s.acting = decision(rt)
	return s
}

// TestPriorIndicatorsFire checks every indicator in a state and action where it fires and in
// one where it does not. Every action is legal in its state.
func TestPriorIndicatorsFire(t *testing.T) {
	s := buildPriorStates(t)
	p := NewPrior(config.ReferencePrior{})
	type probe struct {
		d *Decision
		a orchestra.Action
	}
	cases := []struct {
		name     string
		fires    []probe
		notFires []probe
	}{
		{"add_agent",
			[]probe{{s.empty, addAgent("n0", "planner", "")}, {s.agreeOut, addAgent("n4", "solver", "s1")}},
			[]probe{{s.lonely, stop}, {s.disagree, addEdge("n0", "n1", "feedback")}}},
		{"add_solver_to_empty_team",
			[]probe{{s.empty, addAgent("n0", "solver", "")}},
			[]probe{{s.empty, addAgent("n0", "solver", "s1")}, {s.empty, addAgent("n0", "verifier", "")},
				{s.disagree, addAgent("n2", "solver", "")}}},
		{"add_agent_with_skill",
			[]probe{{s.empty, addAgent("n0", "solver", "s2")}, {s.lonely, addAgent("n1", "finalizer", "s1")}},
			[]probe{{s.empty, addAgent("n0", "solver", "")}, {s.lonely, bindSkill("n0", "s1")}}},
		{"add_verifier_when_answers_disagree",
			[]probe{{s.disagree, addAgent("n2", "verifier", "")}, {s.disagree, addAgent("n2", "verifier", "s1")}},
			[]probe{{s.disagree, addAgent("n2", "solver", "")}, {s.agreeOut, addAgent("n4", "verifier", "")},
				{s.lonely, addAgent("n1", "verifier", "")}, {s.empty, addAgent("n0", "verifier", "")}}},
		{"add_agent_after_answered_output",
			[]probe{{s.lonely, addAgent("n1", "solver", "")}, {s.agreeOut, addAgent("n4", "researcher", "s2")}},
			[]probe{{s.disagree, addAgent("n2", "solver", "")}, {s.failedOut, addAgent("n2", "solver", "")},
				{s.lonely, onNode(orchestra.KindRerunAgent, "n0")}}},
		{"add_edge",
			[]probe{{s.disagree, addEdge("n0", "n1", "feedback")}, {s.agreeOut, addEdge("n3", "n1", "revise")}},
			[]probe{{s.disagree, addAgent("n2", "solver", "")}, {s.lonely, stop}}},
		{"add_edge_answer_to_verifier",
			[]probe{{s.agreeOut, addEdge("n0", "n2", "feedback")}, {s.agreeOut, addEdge("n1", "n2", "revise")}},
			[]probe{{s.agreeOut, addEdge("n3", "n2", "feedback")}, // the failed n3 states no answer
				{s.agreeOut, addEdge("n0", "n1", "feedback")}, // n1 is a solver
				{s.agreeOut, addEdge("n2", "n0", "feedback")}}},
		{"bind_skill",
			[]probe{{s.lonely, bindSkill("n0", "s1")}},
			[]probe{{s.lonely, addAgent("n1", "solver", "s1")}}},
		{"set_output_answered",
			[]probe{{s.disagree, onNode(orchestra.KindSetOutput, "n1")}, {s.failedOut, onNode(orchestra.KindSetOutput, "n1")}},
			[]probe{{s.agreeOut, onNode(orchestra.KindSetOutput, "n3")}, {s.lonely, stop}}},
		{"set_output_largest_group",
			[]probe{{s.agreeOut, onNode(orchestra.KindSetOutput, "n1")}, {s.agreeOut, onNode(orchestra.KindSetOutput, "n2")}},
			[]probe{{s.disagree, onNode(orchestra.KindSetOutput, "n0")}, // two groups of one
				{s.agreeOut, onNode(orchestra.KindSetOutput, "n3")}}},
		{"set_output_unanswered",
			[]probe{{s.agreeOut, onNode(orchestra.KindSetOutput, "n3")}},
			[]probe{{s.agreeOut, onNode(orchestra.KindSetOutput, "n1")}, {s.failedOut, onNode(orchestra.KindRerunAgent, "n0")}}},
		{"rerun_agent",
			[]probe{{s.lonely, onNode(orchestra.KindRerunAgent, "n0")}},
			[]probe{{s.disagree, onNode(orchestra.KindDropAgent, "n0")}, {s.lonely, stop}}},
		{"rerun_failed",
			[]probe{{s.failedOut, onNode(orchestra.KindRerunAgent, "n0")}, {s.agreeOut, onNode(orchestra.KindRerunAgent, "n3")}},
			[]probe{{s.failedOut, onNode(orchestra.KindRerunAgent, "n1")}, {s.agreeOut, onNode(orchestra.KindDropAgent, "n3")}}},
		{"drop_agent",
			[]probe{{s.disagree, onNode(orchestra.KindDropAgent, "n0")}},
			[]probe{{s.disagree, onNode(orchestra.KindRerunAgent, "n0")}}},
		{"drop_failed",
			[]probe{{s.agreeOut, onNode(orchestra.KindDropAgent, "n3")}},
			[]probe{{s.agreeOut, onNode(orchestra.KindDropAgent, "n1")}, {s.agreeOut, onNode(orchestra.KindRerunAgent, "n3")}}},
		{"stop",
			[]probe{{s.lonely, stop}, {s.failedOut, stop}},
			[]probe{{s.lonely, onNode(orchestra.KindRerunAgent, "n0")}}},
		{"stop_output_answered",
			[]probe{{s.lonely, stop}, {s.agreeOut, stop}},
			[]probe{{s.failedOut, stop}, {s.lonely, onNode(orchestra.KindRerunAgent, "n0")}}},
		{"stop_output_agrees",
			[]probe{{s.agreeOut, stop}},
			[]probe{{s.lonely, stop}, // a lone answer is no agreeing group
				{s.failedOut, stop}, {s.agreeOut, onNode(orchestra.KindSetOutput, "n1")}}},
		{"add_tool_agent_to_empty_team", // the QA task type offers search: researcher and tool_user hold it
			[]probe{{s.empty, addAgent("n0", "researcher", "")}, {s.empty, addAgent("n0", "tool_user", "")}},
			[]probe{{s.empty, addAgent("n0", "solver", "")}, {s.empty, addAgent("n0", "researcher", "s1")},
				{s.lonely, addAgent("n1", "researcher", "")}}},
		{"add_verifier_to_check_output",
			[]probe{{s.lonely, addAgent("n1", "verifier", "")}, {s.lonely, addAgent("n1", "verifier", "s1")}},
			[]probe{{s.agreeOut, addAgent("n4", "verifier", "")}, {s.disagree, addAgent("n2", "verifier", "")},
				{s.lonely, addAgent("n1", "solver", "")}}},
		{"add_revise_answer_to_verifier",
			[]probe{{s.agreeOut, addEdge("n1", "n2", "revise")}},
			[]probe{{s.agreeOut, addEdge("n1", "n2", "feedback")}, {s.checked, addEdge("n1", "n2", "revise")},
				{s.agreeOut, addEdge("n2", "n1", "revise")}}},
		{"set_output_checked_verifier",
			[]probe{{s.checked, onNode(orchestra.KindSetOutput, "n2")}},
			[]probe{{s.agreeOut, onNode(orchestra.KindSetOutput, "n2")}, {s.checked, onNode(orchestra.KindSetOutput, "n1")}}},
		{"stop_with_unchecked_verifier",
			[]probe{{s.agreeOut, stop}},
			[]probe{{s.checked, stop}, {s.lonely, stop}}},
		{"rerun_output_while_environment_runs",
			[]probe{{s.acting, onNode(orchestra.KindRerunAgent, "n0")}},
			[]probe{{s.lonely, onNode(orchestra.KindRerunAgent, "n0")}, // no environment: STOP is open
				{s.acting, addAgent("n1", "solver", "")}}},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.name] = true
		for _, pr := range c.fires {
			mustFind(t, pr.d.Legal, pr.a)
			if !slices.Contains(p.Fired(pr.d, pr.a), c.name) {
				t.Errorf("%s does not fire on %s (fired: %v)", c.name, pr.a.JSON(), p.Fired(pr.d, pr.a))
			}
		}
		for _, pr := range c.notFires {
			mustFind(t, pr.d.Legal, pr.a)
			if slices.Contains(p.Fired(pr.d, pr.a), c.name) {
				t.Errorf("%s fires on %s (fired: %v)", c.name, pr.a.JSON(), p.Fired(pr.d, pr.a))
			}
		}
		if len(c.fires) == 0 || len(c.notFires) == 0 {
			t.Errorf("%s: probe both a firing and a non-firing action", c.name)
		}
	}
	for _, key := range priorKeys() {
		if !covered[key] {
			t.Errorf("indicator %s is not checked", key)
		}
	}
	// The exact fired set of a few actions.
	for _, c := range []struct {
		d    *Decision
		a    orchestra.Action
		want []string
	}{
		{s.empty, addAgent("n0", "solver", ""), []string{"add_agent", "add_solver_to_empty_team"}},
		{s.disagree, addAgent("n2", "verifier", "s1"), []string{"add_agent", "add_agent_with_skill", "add_verifier_when_answers_disagree"}},
		{s.agreeOut, stop, []string{"stop", "stop_output_answered", "stop_output_agrees", "stop_with_unchecked_verifier"}},
		{s.checked, stop, []string{"stop", "stop_output_answered", "stop_output_agrees"}},
		{s.empty, addAgent("n0", "tool_user", ""), []string{"add_agent", "add_tool_agent_to_empty_team"}},
		{s.agreeOut, onNode(orchestra.KindSetOutput, "n2"), []string{"set_output_answered", "set_output_largest_group"}},
		{s.agreeOut, addEdge("n1", "n2", "feedback"), []string{"add_edge", "add_edge_answer_to_verifier"}},
		{s.failedOut, onNode(orchestra.KindRerunAgent, "n0"), []string{"rerun_agent", "rerun_failed"}},
		{s.failedOut, stop, []string{"stop"}},
	} {
		if got := p.Fired(c.d, c.a); !slices.Equal(got, c.want) {
			t.Errorf("%s fires %v, want %v", c.a.JSON(), got, c.want)
		}
	}
}

// TestPriorLogitsSumFiredWeights: every legal action's logit is the sum of the weights of
// the indicators it fires, under distinct weights and the default ones; LogProbs is their
// log-softmax over the legal set.
func TestPriorLogitsSumFiredWeights(t *testing.T) {
	s := buildPriorStates(t)
	def, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	w, byKey := distinctWeights()
	defByKey := map[string]float64{}
	v := reflect.ValueOf(def.Prior)
	for i, key := range priorKeys() {
		defByKey[key] = v.Field(i).Float()
	}
	for _, weights := range []struct {
		w     config.ReferencePrior
		byKey map[string]float64
	}{{w, byKey}, {def.Prior, defByKey}} {
		p := NewPrior(weights.w)
		for _, d := range []*Decision{s.empty, s.disagree, s.agreeOut, s.failedOut, s.lonely} {
			logits := p.Logits(d)
			if len(logits) != len(d.Legal) {
				t.Fatalf("%d logits for %d legal actions", len(logits), len(d.Legal))
			}
			for i, a := range d.Legal {
				var want float64
				for _, name := range p.Fired(d, a) {
					want += weights.byKey[name]
				}
				if math.Abs(logits[i]-want) > 1e-12 {
					t.Errorf("%s: logit %v, want the fired weights' sum %v", a.JSON(), logits[i], want)
				}
			}
			lp, err := p.LogProbs(d)
			if err != nil {
				t.Fatal(err)
			}
			want := LogSoftmax(logits)
			if len(lp) != len(d.Legal) {
				t.Fatalf("%d log-probs for %d legal actions", len(lp), len(d.Legal))
			}
			for i := range lp {
				if math.Abs(lp[i]-want[i]) > 1e-12 {
					t.Errorf("log-prob %v, want %v", lp[i], want[i])
				}
			}
			if sum := probSum(lp); math.Abs(sum-1) > 1e-9 {
				t.Errorf("log-probs sum to %v in probability", sum)
			}
		}
	}
	// Zero weights: uniform over the legal set.
	lp, _ := NewPrior(config.ReferencePrior{}).LogProbs(s.agreeOut)
	for _, l := range lp {
		if math.Abs(l+math.Log(float64(len(lp)))) > 1e-12 {
			t.Fatalf("zero weights give %v, want uniform", lp)
		}
	}
}

// prob is the default prior's probability of a (which must be legal) in d, and the actions
// more likely than it.
func prob(t *testing.T, p *Prior, d *Decision, a orchestra.Action) (float64, []string) {
	t.Helper()
	lp, err := p.LogProbs(d)
	if err != nil {
		t.Fatal(err)
	}
	i := mustFind(t, d.Legal, a)
	var above []string
	for k, l := range lp {
		if l > lp[i] {
			above = append(above, d.Legal[k].JSON())
		}
	}
	return math.Exp(lp[i]), above
}

// TestDefaultPriorIsAReferencePolicy: the default weights (fitted to the paper's ρ cells by
// evosteer calibrate) make rho a sensible reference: it opens with a role holding the task
// type's tool, as a prompted orchestrator that knows the tools would, yet tries every role
// (which leaves AnchorTB something to learn), makes an answering node the output, stops once the output states an
// answer (rather than moving the output around) and any verifier has checked it (outputting that
// verifier first), reruns a failed
// node, and adds a verifier when answers disagree.
func TestDefaultPriorIsAReferencePolicy(t *testing.T) {
	def, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	p := NewPrior(def.Prior)
	s := buildPriorStates(t)
	type want struct {
		name string
		d    *Decision
		a    orchestra.Action
		min  float64
	}
	for _, c := range []want{
		{"stop with an answered output", s.lonely, stop, 0.9},
		{"output the verifier that checked", s.checked, onNode(orchestra.KindSetOutput, "n2"), 0.6},
	} {
		if got, above := prob(t, p, c.d, c.a); got < c.min || len(above) > 0 {
			t.Errorf("%s: P(%s) = %.3f, want >= %.2f and the most likely (above it: %v)", c.name, c.a.JSON(), got, c.min, above)
		}
	}
	// A verifier in the team that has checked nothing holds STOP back.
	if got, _ := prob(t, p, s.agreeOut, stop); got > 0.05 {
		t.Errorf("P(STOP) with an unchecked verifier = %.3f, want <= 0.05", got)
	}
	// The empty team's task type offers search: researcher and tool_user hold it.
	var tool float64
	for _, role := range []string{"researcher", "tool_user"} {
		got, _ := prob(t, p, s.empty, addAgent("n0", role, ""))
		tool += got
	}
	if tool < 0.6 {
		t.Errorf("P(first agent holds search) = %.3f, want >= 0.6: ρ knows which roles hold the task type's tool", tool)
	}
	for _, role := range []string{"solver", "verifier", "planner", "finalizer"} {
		if got, _ := prob(t, p, s.empty, addAgent("n0", role, "")); got < 0.001 {
			t.Errorf("P(first agent %s) = %.4f, want >= 0.001: the reference must try every role", role, got)
		}
	}
	// One answering solver: make it the output.
	rt := newRuntime(nil, nil)
	addSolvers(t, rt, 0, 1)
	if got, above := prob(t, p, decision(rt), onNode(orchestra.KindSetOutput, "n0")); got < 0.85 || len(above) > 0 {
		t.Errorf("P(SET_OUTPUT of the lone answering solver) = %.3f (above it: %v), want >= 0.85 and the most likely", got, above)
	}
	// A disagreeing output: STOP still beats moving the output to the other answer.
	rt = newRuntime(map[string][]executor.Result{"n0": {answered("Answer: Paris")}, "n1": {answered("Answer: Lyon")}}, nil)
	addSolvers(t, rt, 0, 2)
	act(t, rt, onNode(orchestra.KindSetOutput, "n0"))
	d := decision(rt)
	if got, above := prob(t, p, d, stop); got < 0.6 || len(above) > 0 {
		t.Errorf("P(STOP) with a disagreeing answered output = %.3f (above it: %v), want >= 0.6 and the most likely", got, above)
	}
	if ps, _ := prob(t, p, d, stop); true {
		if pm, _ := prob(t, p, d, onNode(orchestra.KindSetOutput, "n1")); pm > ps/4 {
			t.Errorf("P(SET_OUTPUT to the other answer) = %.3f against P(STOP) = %.3f: the output would flip back and forth", pm, ps)
		}
	}
	// Answers disagree and no output yet: a verifier is the most likely new agent.
	d = s.disagree
	pv, _ := prob(t, p, d, addAgent("n2", "verifier", ""))
	for _, role := range []string{"solver", "planner", "researcher", "finalizer", "tool_user"} {
		if pr, _ := prob(t, p, d, addAgent("n2", role, "")); pr >= pv {
			t.Errorf("answers disagree: P(ADD %s) = %.3f >= P(ADD verifier) = %.3f", role, pr, pv)
		}
	}
	// A failed output: rerun it rather than stop.
	pr, _ := prob(t, p, s.failedOut, onNode(orchestra.KindRerunAgent, "n0"))
	if ps, _ := prob(t, p, s.failedOut, stop); pr <= ps {
		t.Errorf("failed output: P(RERUN) = %.3f <= P(STOP) = %.3f", pr, ps)
	}
	// An answering node feeds the verifier rather than an arbitrary edge.
	pe, _ := prob(t, p, s.agreeOut, addEdge("n0", "n2", "feedback"))
	if po, _ := prob(t, p, s.agreeOut, addEdge("n0", "n1", "feedback")); pe <= po {
		t.Errorf("P(edge answer->verifier) = %.4f <= P(edge answer->solver) = %.4f", pe, po)
	}
}

// Under deferred execution (the interleaved-execution ablation) nothing has run before STOP:
// the prior reads an agent of an answering role as one that will answer, so SET_OUTPUT on it and
// STOP after it fire the answered indicators, while a planner (which states no answer) does not.
func TestPriorDeferredReadsPendingAnswers(t *testing.T) {
	rt := orchestra.New(qaTask, newFake(nil), 42, orchestra.Options{Menu: testMenu, Budget: testBudget, Interleaved: false, Repair: true})
	act(t, rt, addAgent("n0", "solver", ""))
	act(t, rt, addAgent("n1", "planner", ""))
	p := NewPrior(config.ReferencePrior{})
	d := decision(rt)
	if got := p.Fired(d, onNode(orchestra.KindSetOutput, "n0")); !slices.Equal(got, []string{"set_output_answered"}) {
		t.Errorf("SET_OUTPUT(solver) fires %v", got)
	}
	act(t, rt, onNode(orchestra.KindSetOutput, "n0"))
	d = decision(rt)
	if got := p.Fired(d, stop); !slices.Equal(got, []string{"stop", "stop_output_answered"}) {
		t.Errorf("STOP fires %v", got)
	}
	if got := p.Fired(d, addAgent("n2", "solver", "")); !slices.Contains(got, "add_agent_after_answered_output") {
		t.Errorf("ADD_AGENT after a pending output fires %v", got)
	}
	// Interleaved, the same unexecuted state cannot exist: every added node has run.
	if !rt.Deferred() || newRuntime(nil, testMenu).Deferred() {
		t.Error("Deferred does not follow Options.Interleaved")
	}
}
