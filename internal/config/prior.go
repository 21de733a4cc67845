package config

// ReferencePrior weighs named indicator features of (state, action); the reference policy rho
// scores a legal action by the sum of the weights of the indicators it fires, the role the
// controller prompt plays for the paper's reference LLM. internal/policy defines each indicator.
type ReferencePrior struct {
	AddAgent                       float64 `yaml:"add_agent" json:"add_agent"`
	AddSolverToEmptyTeam           float64 `yaml:"add_solver_to_empty_team" json:"add_solver_to_empty_team"`
	AddAgentWithSkill              float64 `yaml:"add_agent_with_skill" json:"add_agent_with_skill"`
	AddVerifierWhenAnswersDisagree float64 `yaml:"add_verifier_when_answers_disagree" json:"add_verifier_when_answers_disagree"`
	AddAgentAfterAnsweredOutput    float64 `yaml:"add_agent_after_answered_output" json:"add_agent_after_answered_output"`
	AddEdge                        float64 `yaml:"add_edge" json:"add_edge"`
	AddEdgeAnswerToVerifier        float64 `yaml:"add_edge_answer_to_verifier" json:"add_edge_answer_to_verifier"`
	BindSkill                      float64 `yaml:"bind_skill" json:"bind_skill"`
	SetOutputAnswered              float64 `yaml:"set_output_answered" json:"set_output_answered"`
	SetOutputLargestGroup          float64 `yaml:"set_output_largest_group" json:"set_output_largest_group"`
	SetOutputUnanswered            float64 `yaml:"set_output_unanswered" json:"set_output_unanswered"`
	RerunAgent                     float64 `yaml:"rerun_agent" json:"rerun_agent"`
	RerunFailed                    float64 `yaml:"rerun_failed" json:"rerun_failed"`
	DropAgent                      float64 `yaml:"drop_agent" json:"drop_agent"`
	DropFailed                     float64 `yaml:"drop_failed" json:"drop_failed"`
	Stop                           float64 `yaml:"stop" json:"stop"`
	StopOutputAnswered             float64 `yaml:"stop_output_answered" json:"stop_output_answered"`
	StopOutputAgrees               float64 `yaml:"stop_output_agrees" json:"stop_output_agrees"`

	// What a prompted LLM orchestrator knows of the task type and of verification.
	AddToolAgentToEmptyTeam   float64 `yaml:"add_tool_agent_to_empty_team" json:"add_tool_agent_to_empty_team"`
	AddVerifierToCheckOutput  float64 `yaml:"add_verifier_to_check_output" json:"add_verifier_to_check_output"`
	AddReviseAnswerToVerifier float64 `yaml:"add_revise_answer_to_verifier" json:"add_revise_answer_to_verifier"`
	SetOutputCheckedVerifier  float64 `yaml:"set_output_checked_verifier" json:"set_output_checked_verifier"`
	StopWithUncheckedVerifier float64 `yaml:"stop_with_unchecked_verifier" json:"stop_with_unchecked_verifier"`
	// What it knows of interactive tasks: the agent acting in a running environment acts on.
	RerunOutputWhileEnvironmentRuns float64 `yaml:"rerun_output_while_environment_runs" json:"rerun_output_while_environment_runs"`
}
