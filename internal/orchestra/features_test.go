package orchestra

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/textrules"
)

func usage(in, out, calls, tools, wall int64) executor.Usage {
	return executor.Usage{TokensIn: in, TokensOut: out, ModelCalls: calls, ToolCalls: tools, WallMS: wall}
}

func result(output string, reported bool, u executor.Usage, tools ...executor.ToolCall) executor.Result {
	return executor.Result{Output: output, AnswerPresent: reported, Status: "success", Usage: u, Tools: tools}
}

// teamState builds a four-node hotpotqa team with search and python evidence.
func teamState(t *testing.T) *Runtime { return teamStateUpTo(t, 8) }

// teamStateUpTo applies the first k of teamState's actions.
func teamStateUpTo(t *testing.T, k int) *Runtime {
	sess := newFake()
	u := usage(1000, 500, 1, 0, 2000)
	sess.script["n0"] = []executor.Result{result("The capital is Paris.\nAnswer: Paris", true, u,
		executor.ToolCall{Tool: "search", Status: "success", Result: "Doc 1(Title: \"Paris\") Paris is the capital\nof  France."})}
	sess.script["n1"] = []executor.Result{result("Facts: capital is paris.\nAnswer: paris", true, usage(1000, 500, 3, 2, 2000))}
	sess.script["n2"] = []executor.Result{result("Plan:\n1. Find the city\n2. Check it", true, u)}
	sess.script["n3"] = []executor.Result{
		result("Answer: Lyon", true, u),
		result("Answer: Lyon", true, u),
		result("I checked.\nAnswer: Lyon", true, u, executor.ToolCall{Tool: "python", Status: "success"}, executor.ToolCall{Tool: "python", Status: "failed"}),
	}
	r := newTestRuntime(qaTask, sess, defaultOptions())
	for _, a := range []Action{
		addAgent("n0", "solver", "s1"), addAgent("n1", "researcher", ""), addAgent("n2", "planner", ""),
		addAgent("n3", "verifier", ""), addEdge("n0", "n1", ProtocolFeedback), onNode(KindSetOutput, "n0"),
		bind("n3", "s2"), addEdge("n1", "n3", ProtocolRevise),
	}[:k] {
		mustApply(t, r, a)
	}
	return r
}

// environmentState is an ALFWorld node after one truncated phase; rerun finishes the game.
func environmentState(t *testing.T, rerun bool) *Runtime {
	sess := newFake()
	steps := func(n int, last string) []executor.ToolCall {
		calls := make([]executor.ToolCall, n)
		for i := range calls {
			calls[i] = executor.ToolCall{Tool: "environment", Status: "success"}
		}
		calls[n-1].Status = last
		return calls
	}
	first := result(`{"actions":["go to desk 1"]}`, false, usage(5000, 800, 11, 10, 30000), steps(10, "parse_error")...)
	first.Status, first.FailureKind = "failed", "truncated"
	first.Environment = executor.Environment{Enabled: true, StepsCompleted: 10, MaxPhases: 2, StepsPerPhase: 25}
	second := result(`{"actions":["put lamp 1"],"episode_done":true}`, false, usage(5000, 800, 21, 20, 30000), steps(20, "success")...)
	second.Environment = executor.Environment{Enabled: true, StepsCompleted: 30, MaxPhases: 2, StepsPerPhase: 25, PhaseIndex: 1, Done: true}
	sess.script["n0"] = []executor.Result{first, second}
	r := newTestRuntime(alfTask, sess, Options{Budget: testBudget, Interleaved: true, Repair: true})
	mustApply(t, r, addAgent("n0", "solver", ""))
	if rerun {
		mustApply(t, r, onNode(KindRerunAgent, "n0"))
	}
	return r
}

// pairState: a solver's answer fed back to a finalizer whose rerun is cut off; then the
// given further actions.
func pairState(t *testing.T, more ...Action) *Runtime {
	sess := newFake()
	sess.script["n0"] = []executor.Result{answer("Answer: 42")}
	cut := executor.Result{Output: "Let me think about", Status: "failed", FailureKind: "truncated", Usage: defaultUsage}
	sess.script["n1"] = []executor.Result{answer("Answer: 41"), cut}
	r := newTestRuntime(qaTask, sess, defaultOptions())
	for _, a := range append([]Action{addAgent("n0", "solver", ""), addAgent("n1", "finalizer", ""),
		addEdge("n0", "n1", ProtocolFeedback), onNode(KindRerunAgent, "n1")}, more...) {
		mustApply(t, r, a)
	}
	return r
}

func TestFeatures(t *testing.T) {
	const cap = 98304.0
	cases := []struct {
		name  string
		build func(t *testing.T) *Runtime
		want  [30]float64
	}{
		{"empty episode", func(*testing.T) *Runtime { return newTestRuntime(qaTask, newFake(), defaultOptions()) }, [30]float64{}},
		{"four-node team after a revise edge", teamState, [30]float64{
			0: 4.0 / 5, 1: 2.0 / 12, 2: 4.0 / 6, 3: 2.0 / 8, 4: 8.0 / 9,
			6:  1,        // last action ADD_EDGE
			10: 2.0 / 4,  // n0 searched, n3 ran python
			11: 1.0 / 2,  // one of n3's two python runs was clean
			12: 1, 13: 1, // revise edge, n3's output changed
			15: 3.0 / 4, // the planner's plan is not an answer
			16: 1,
			17: 1.0 / 3, // paris = paris ≠ lyon
			18: 1, 19: 1,
			20: 2.0 / 3, // both "paris" answers appear in the search result, "lyon" does not
			25: 1,       // the last tool call failed
			26: 9000 / cap, 27: 2.0 / 50, 28: 12000.0 / 600000, 29: 8 / cap,
		}},
		{"the same team one action earlier: a bind that left the output unchanged", func(t *testing.T) *Runtime { return teamStateUpTo(t, 7) }, [30]float64{
			0: 4.0 / 5, 1: 1.0 / 12, 2: 4.0 / 6, 3: 2.0 / 8, 4: 7.0 / 8,
			7:  1,       // last action BIND_SKILL
			10: 1.0 / 4, // n3's latest execution used no tool
			12: 1,       // a repair whose output did not change
			15: 3.0 / 4, 16: 1, 17: 1.0 / 3, 20: 2.0 / 3,
			24: 1, // the latest tool call (n0's search, in an earlier execution) succeeded
			26: 7500 / cap, 27: 2.0 / 50, 28: 10000.0 / 600000, 29: 7 / cap,
		}},
		{"a feedback edge delivers without executing", func(t *testing.T) *Runtime { return teamStateUpTo(t, 5) }, [30]float64{
			0: 4.0 / 5, 1: 1.0 / 12, 2: 4.0 / 6, 3: 1.0 / 8, 4: 5.0 / 6, 6: 1, 10: 1.0 / 4,
			15: 3.0 / 4, 17: 1.0 / 3,
			19: 1, // the edge's message snapshot counts as delivered
			20: 2.0 / 3, 24: 1,
			26: 6000 / cap, 27: 2.0 / 50, 28: 8000.0 / 600000, 29: 6 / cap,
		}},
		{"environment node cut at its limit", func(t *testing.T) *Runtime { return environmentState(t, false) }, [30]float64{
			0: 0.5, 2: 1.0 / 5, 4: 0.5, 5: 1,
			14: 1,         // failed / truncated
			21: 10.0 / 50, // 10 of 2×25 steps
			25: 1,         // last environment call: parse_error
			26: 5800 / cap, 27: 10.0 / 50, 28: 30000.0 / 600000, 29: 11 / cap,
		}},
		{"environment finished by a rerun", func(t *testing.T) *Runtime { return environmentState(t, true) }, [30]float64{
			0: 0.5, 2: 1.0 / 5, 4: 2.0 / 3, 9: 1, 12: 1, 13: 1, 18: 1,
			21: 30.0 / 50, 22: 1.0 / 2, 23: 1, 24: 1,
			26: 11600 / cap, 27: 30.0 / 50, 28: 60000.0 / 600000, 29: 32 / cap,
		}},
		{"rerun with a message, truncated", func(t *testing.T) *Runtime { return pairState(t) }, [30]float64{
			0: 2.0 / 3, 1: 1.0 / 2, 2: 2.0 / 6, 4: 4.0 / 5, 9: 1, 12: 1, 13: 1, 14: 1,
			15: 1.0 / 2, 18: 1, 19: 1,
			26: 450 / cap, 28: 3000.0 / 600000, 29: 3 / cap,
		}},
		{"then SET_OUTPUT", func(t *testing.T) *Runtime { return pairState(t, onNode(KindSetOutput, "n0")) }, [30]float64{
			0: 2.0 / 3, 1: 1.0 / 2, 2: 2.0 / 6, 4: 5.0 / 6, 8: 1, 15: 1.0 / 2, 16: 1,
			26: 450 / cap, 28: 3000.0 / 600000, 29: 3 / cap,
		}},
		{"then DROP", func(t *testing.T) *Runtime {
			return pairState(t, onNode(KindSetOutput, "n0"), onNode(KindDropAgent, "n1"))
		}, [30]float64{
			0: 0.5, 2: 1.0 / 6, 4: 6.0 / 7, 15: 1, 16: 1,
			26: 450 / cap, 28: 3000.0 / 600000, 29: 3 / cap,
		}},
	}
	for _, c := range cases {
		got := c.build(t).Features()
		for i := range got {
			if math.Abs(float64(got[i])-c.want[i]) > 1e-6 {
				t.Errorf("%s: feature %d %s = %v, want %v", c.name, i, FeatureNames[i], got[i], c.want[i])
			}
		}
	}
}

func TestFeatureNamesAndOneHot(t *testing.T) {
	if FeatureNames[0] != "node_count_saturated" || FeatureNames[20] != "answer_supported_by_tools" || FeatureNames[29] != "model_budget_used" {
		t.Error("feature order differs from evosteer-public-features@5")
	}
	families := []string{"hotpotqa", "nq_open", "medqa", "aime_2026", "mbpp_plus", "alfworld"}
	if got := TaskTypeOneHot(families, "aime_2026"); !slices.Equal(got, []float32{0, 0, 0, 1, 0, 0}) {
		t.Errorf("one-hot %v", got)
	}
	if got := TaskTypeOneHot(families, "webshop"); !slices.Equal(got, make([]float32, 6)) {
		t.Errorf("unknown task type one-hot %v", got)
	}
}

func TestAnswerSupportedBySearch(t *testing.T) {
	cases := []struct {
		answer, text string
		want         bool
	}{
		{"Answer: Paris", "paris is big", true},
		{"Answer: Paris", "parisian food", false}, // whole words only
		{"Answer: Paris", "le_paris", false},      // _ is a word character
		{"Answer: none", "none of these", false},  // not an answer
		{"Answer: ab", "ab", false},               // shorter than 3
		{"Answer: " + strings.Repeat("x", 121), strings.Repeat("x", 121), false},
		{"\\boxed{Straße}", "die strasse", true}, // casefolded
		{"Answer: New York", "in new york.", true},
	}
	for _, c := range cases {
		if got := supported(textrules.NormalizedAnswer(c.answer), c.text); got != c.want {
			t.Errorf("supported(%q in %q) = %v, want %v", c.answer, c.text, got, c.want)
		}
	}
}
