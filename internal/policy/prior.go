package policy

import (
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/orchestra"
)

// indicator is one named feature of (state, action) of the reference prior.
type indicator struct {
	name   string // the key under reference_prior in pipeline.yaml
	weight func(w *config.ReferencePrior) float64
	fires  func(f *facts, a orchestra.Action) bool
}

func kind(k string) func(*facts, orchestra.Action) bool {
	return func(_ *facts, a orchestra.Action) bool { return a.Kind == k }
}

// indicators define the reference prior; their weights are under reference_prior.
var indicators = []indicator{
	{"add_agent", func(w *config.ReferencePrior) float64 { return w.AddAgent }, kind(orchestra.KindAddAgent)},
	{"add_solver_to_empty_team", func(w *config.ReferencePrior) float64 { return w.AddSolverToEmptyTeam },
		func(f *facts, a orchestra.Action) bool {
			return a.Kind == orchestra.KindAddAgent && a.RoleID == "solver" && a.SkillID == "" && len(f.nodes) == 0
		}},
	{"add_agent_with_skill", func(w *config.ReferencePrior) float64 { return w.AddAgentWithSkill },
		func(_ *facts, a orchestra.Action) bool { return a.Kind == orchestra.KindAddAgent && a.SkillID != "" }},
	{"add_verifier_when_answers_disagree", func(w *config.ReferencePrior) float64 { return w.AddVerifierWhenAnswersDisagree },
		func(f *facts, a orchestra.Action) bool {
			return a.Kind == orchestra.KindAddAgent && a.RoleID == "verifier" && f.disagree()
		}},
	{"add_agent_after_answered_output", func(w *config.ReferencePrior) float64 { return w.AddAgentAfterAnsweredOutput },
		func(f *facts, a orchestra.Action) bool {
			return a.Kind == orchestra.KindAddAgent && f.answers(f.output)
		}},
	{"add_edge", func(w *config.ReferencePrior) float64 { return w.AddEdge }, kind(orchestra.KindAddEdge)},
	{"add_edge_answer_to_verifier", func(w *config.ReferencePrior) float64 { return w.AddEdgeAnswerToVerifier },
		func(f *facts, a orchestra.Action) bool {
			return a.Kind == orchestra.KindAddEdge && f.answered(a.SourceID) && f.nodes[a.TargetID].Role == "verifier"
		}},
	{"bind_skill", func(w *config.ReferencePrior) float64 { return w.BindSkill }, kind(orchestra.KindBindSkill)},
	{"set_output_answered", func(w *config.ReferencePrior) float64 { return w.SetOutputAnswered },
		func(f *facts, a orchestra.Action) bool {
			return a.Kind == orchestra.KindSetOutput && f.answers(a.NodeID)
		}},
	{"set_output_largest_group", func(w *config.ReferencePrior) float64 { return w.SetOutputLargestGroup },
		func(f *facts, a orchestra.Action) bool {
			return a.Kind == orchestra.KindSetOutput && f.inLargestGroup(a.NodeID)
		}},
	{"set_output_unanswered", func(w *config.ReferencePrior) float64 { return w.SetOutputUnanswered },
		func(f *facts, a orchestra.Action) bool {
			return a.Kind == orchestra.KindSetOutput && !f.answers(a.NodeID)
		}},
	{"rerun_agent", func(w *config.ReferencePrior) float64 { return w.RerunAgent }, kind(orchestra.KindRerunAgent)},
	{"rerun_failed", func(w *config.ReferencePrior) float64 { return w.RerunFailed },
		func(f *facts, a orchestra.Action) bool {
			return a.Kind == orchestra.KindRerunAgent && f.failed(a.NodeID)
		}},
	{"drop_agent", func(w *config.ReferencePrior) float64 { return w.DropAgent }, kind(orchestra.KindDropAgent)},
	{"drop_failed", func(w *config.ReferencePrior) float64 { return w.DropFailed },
		func(f *facts, a orchestra.Action) bool {
			return a.Kind == orchestra.KindDropAgent && f.failed(a.NodeID)
		}},
	{"stop", func(w *config.ReferencePrior) float64 { return w.Stop }, kind(orchestra.KindStop)},
	{"stop_output_answered", func(w *config.ReferencePrior) float64 { return w.StopOutputAnswered },
		func(f *facts, a orchestra.Action) bool { return a.Kind == orchestra.KindStop && f.answers(f.output) }},
	{"stop_output_agrees", func(w *config.ReferencePrior) float64 { return w.StopOutputAgrees },
		func(f *facts, a orchestra.Action) bool {
			return a.Kind == orchestra.KindStop && f.inLargestGroup(f.output)
		}},
	{"add_tool_agent_to_empty_team", func(w *config.ReferencePrior) float64 { return w.AddToolAgentToEmptyTeam },
		func(f *facts, a orchestra.Action) bool {
			return a.Kind == orchestra.KindAddAgent && a.SkillID == "" && len(f.nodes) == 0 && f.toolRoles[a.RoleID]
		}},
	{"add_verifier_to_check_output", func(w *config.ReferencePrior) float64 { return w.AddVerifierToCheckOutput },
		func(f *facts, a orchestra.Action) bool {
			return a.Kind == orchestra.KindAddAgent && a.RoleID == "verifier" && f.answers(f.output) && f.verifiers == 0
		}},
	{"add_revise_answer_to_verifier", func(w *config.ReferencePrior) float64 { return w.AddReviseAnswerToVerifier },
		func(f *facts, a orchestra.Action) bool {
			return a.Kind == orchestra.KindAddEdge && a.Protocol == orchestra.ProtocolRevise && f.answers(a.SourceID) &&
				f.nodes[a.TargetID].Role == "verifier" && !f.checked[a.TargetID]
		}},
	{"set_output_checked_verifier", func(w *config.ReferencePrior) float64 { return w.SetOutputCheckedVerifier },
		func(f *facts, a orchestra.Action) bool {
			return a.Kind == orchestra.KindSetOutput && f.checked[a.NodeID] && f.answers(a.NodeID)
		}},
	{"stop_with_unchecked_verifier", func(w *config.ReferencePrior) float64 { return w.StopWithUncheckedVerifier },
		func(f *facts, a orchestra.Action) bool {
			// Under deferred execution every node runs at STOP, so STOP is never held back.
			return a.Kind == orchestra.KindStop && !f.deferred && f.verifiers > len(f.checked)
		}},
	{"rerun_output_while_environment_runs", func(w *config.ReferencePrior) float64 { return w.RerunOutputWhileEnvironmentRuns },
		func(f *facts, a orchestra.Action) bool {
			return a.Kind == orchestra.KindRerunAgent && a.NodeID == f.output && f.envRunning
		}},
}

// Prior is the reference prior: logits are weighted sums of indicator features, normalised
// over the legal set.
type Prior struct{ w config.ReferencePrior }

// NewPrior builds the prior from its weights.
func NewPrior(w config.ReferencePrior) *Prior { return &Prior{w: w} }

// Logits scores each legal action (before normalisation).
func (p *Prior) Logits(d *Decision) []float64 {
	f := newFacts(d.RT)
	out := make([]float64, len(d.Legal))
	for i, a := range d.Legal {
		for _, ind := range indicators {
			if ind.fires(f, a) {
				out[i] += ind.weight(&p.w)
			}
		}
	}
	return out
}

// LogProbs implements Policy.
func (p *Prior) LogProbs(d *Decision) ([]float64, error) { return LogSoftmax(p.Logits(d)), nil }

// Fired names the indicators an action fires, for inspection and tests.
func (p *Prior) Fired(d *Decision, a orchestra.Action) []string {
	f := newFacts(d.RT)
	var names []string
	for _, ind := range indicators {
		if ind.fires(f, a) {
			names = append(names, ind.name)
		}
	}
	return names
}
