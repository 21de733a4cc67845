package orchestra

import (
	"slices"
	"strings"

	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/textrules"
)

// FeatureVersion names the feature schema below; stored features are only comparable
// within one version.
const FeatureVersion = "evosteer-public-features@5"

// FeatureNames are the 30 execution features in vector order (METHOD.md §3.1).
var FeatureNames = [30]string{
	"node_count_saturated",
	"edge_density",
	"role_diversity",
	"bound_skill_fraction",
	"action_count_saturated",
	"last_add_agent",
	"last_add_edge",
	"last_bind_skill",
	"last_set_output",
	"last_rerun_agent",
	"tool_used_fraction",
	"python_clean_fraction",
	"repair_attempted",
	"repair_output_changed",
	"last_execution_failed",
	"answered_fraction",
	"selected_output",
	"answer_agreement",
	"last_output_changed",
	"communication_delivered",
	"answer_supported_by_tools",
	"environment_step_fraction",
	"environment_phase_fraction",
	"environment_terminal",
	"environment_call_succeeded",
	"environment_call_failed",
	"total_token_budget_used",
	"tool_budget_used",
	"time_budget_used",
	"model_budget_used",
}

// Indices of the features the diagnosis reads.
const (
	idxPythonClean              = 11
	idxLastExecutionFailed      = 14
	idxAnswerAgreement          = 17
	idxLastOutputChanged        = 18
	idxAnswerSupported          = 20
	idxEnvironmentTerminal      = 23
	idxEnvironmentCallSucceeded = 24
	idxEnvironmentCallFailed    = 25
)

// failureStatuses are tool, environment and observation statuses that count as failures;
// a node outcome also fails when it was truncated.
var failureStatuses = []string{"parse_error", "schema_invalid", "tool_error", "timeout", "infrastructure-failure", "failed"}

func nodeFailed(res *executor.Result) bool {
	return res != nil && (res.Status == "failed" || res.FailureKind == "truncated" || slices.Contains(failureStatuses, res.FailureKind))
}

// ratio is clamp(a/b, 0, 1), and 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return min(1, max(0, a/b))
}

func indicator(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// answerNodes are the live nodes (string order) that state an answer: their latest result
// reports one (without a result: the output is non-blank) and the text test agrees.
func (r *Runtime) answerNodes() []*Node {
	var out []*Node
	for _, id := range r.nodeIDs() {
		if n := r.nodes[id]; n.StatesAnswer() {
			out = append(out, n)
		}
	}
	return out
}

// StatesAnswer reports whether the node's latest execution reported an answer (without a
// result: its output is non-blank) and its text states one (METHOD.md §3.1's "answers").
func (n *Node) StatesAnswer() bool {
	reported := strings.TrimSpace(n.Output) != ""
	if n.Result != nil {
		reported = n.Result.AnswerPresent
	}
	return reported && n.hasAnswer
}

// Failed reports whether the node's latest execution failed (feature 14's failure set).
func (n *Node) Failed() bool { return nodeFailed(n.Result) }

// toolCalls are the calls of the live nodes' latest results with the given tool.
func (r *Runtime) toolCalls(tool string) []executor.ToolCall {
	var calls []executor.ToolCall
	for _, id := range r.nodeIDs() {
		if res := r.nodes[id].Result; res != nil {
			for _, c := range res.Tools {
				if c.Tool == tool {
					calls = append(calls, c)
				}
			}
		}
	}
	return calls
}

// searchText is every search result of the live nodes' latest results, casefolded with
// whitespace collapsed, one per line: what an answer is looked up in.
func (r *Runtime) searchText() string {
	var parts []string
	for _, id := range r.nodeIDs() {
		parts = append(parts, r.nodes[id].searched...)
	}
	return strings.Join(parts, "\n")
}

// supported reports whether an answer's key is checkable and found as a whole word in text.
func supported(key, text string) bool {
	return textrules.Checkable(key) && textrules.ContainsWord(text, key)
}

// Features is the execution feature vector f(s) of the current state (METHOD.md §3.1).
func (r *Runtime) Features() [30]float32 {
	var out [30]float32
	for i, v := range r.features() {
		out[i] = float32(v)
	}
	return out
}

// features computes the vector in float64, as the reference does; the controller prompt
// shows these values.
func (r *Runtime) features() [30]float64 {
	nodes := float64(len(r.nodes))
	hist := float64(len(r.history))
	var last Event
	if len(r.history) > 0 {
		last = r.history[len(r.history)-1]
	}
	kind := last.Action.Kind

	roles, skills, toolUsers := map[string]bool{}, 0, 0
	for _, n := range r.nodes {
		roles[n.Role] = true
		skills += len(n.Skills)
		if n.Result != nil && slices.ContainsFunc(n.Result.Tools, func(c executor.ToolCall) bool { return c.Tool != "environment" }) {
			toolUsers++
		}
	}
	python := r.toolCalls("python")
	clean := 0
	for _, c := range python {
		if c.Status == "success" {
			clean++
		}
	}

	answers := r.answerNodes()
	keys := make([]string, len(answers))
	found, text := 0, r.searchText()
	for i, n := range answers {
		keys[i] = n.AnswerKey()
		if supported(keys[i], text) {
			found++
		}
	}
	agreeing := 0
	for i := range keys {
		for j := range i {
			if keys[i] != "" && keys[i] == keys[j] {
				agreeing++
			}
		}
	}
	pairs := len(keys) * (len(keys) - 1) / 2

	repaired := kind == KindRerunAgent || kind == KindBindSkill || (kind == KindAddEdge && last.Action.Protocol == ProtocolRevise)
	var lastResult *executor.Result
	if k := len(last.Executions); k > 0 {
		lastResult = &last.Executions[k-1].Result
	}
	failed := nodeFailed(lastResult) || last.InfrastructureFailure

	env := r.env
	var stepFrac, phaseFrac float64
	if env.Enabled {
		stepFrac = ratio(float64(env.StepsCompleted), float64(env.MaxPhases*env.StepsPerPhase))
		phaseFrac = ratio(float64(env.PhaseIndex), float64(env.MaxPhases))
	}
	used, caps := r.ledger.Settled(), r.ledger.Cap()

	return [30]float64{
		ratio(nodes, nodes+1),
		ratio(float64(len(r.edges)), nodes*(nodes-1)),
		ratio(float64(len(roles)), float64(len(r.roles))),
		ratio(float64(skills), nodes*float64(max(1, len(r.menu)))),
		ratio(hist, hist+1),
		indicator(kind == KindAddAgent),
		indicator(kind == KindAddEdge),
		indicator(kind == KindBindSkill),
		indicator(kind == KindSetOutput),
		indicator(kind == KindRerunAgent),
		ratio(float64(toolUsers), nodes),
		ratio(float64(clean), float64(len(python))),
		indicator(repaired),
		indicator(repaired && last.OutputChanged),
		indicator(failed),
		ratio(float64(len(answers)), nodes),
		indicator(r.output != ""),
		ratio(float64(agreeing), float64(pairs)),
		indicator(last.OutputChanged),
		indicator(last.delivered()),
		ratio(float64(found), float64(len(answers))),
		stepFrac,
		phaseFrac,
		indicator(env.Done),
		indicator(r.lastTool == "success"),
		indicator(slices.Contains(failureStatuses, r.lastTool)),
		ratio(float64(used.Tokens()), float64(r.ledger.TotalTokenCap())),
		ratio(float64(used.ToolCalls), float64(caps.ToolCalls)),
		ratio(float64(used.WallMS), float64(caps.WallMS)),
		ratio(float64(used.ModelCalls), float64(caps.ModelCalls)),
	}
}

// TaskTypeOneHot is the task-type one-hot over the configured IID families (in config
// order); an unknown task type is all zeros.
func TaskTypeOneHot(families []string, taskType string) []float32 {
	out := make([]float32, len(families))
	if i := slices.Index(families, taskType); i >= 0 {
		out[i] = 1
	}
	return out
}
