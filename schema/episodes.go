package schema

// Episodes has one row per trajectory (written by rollout).
var Episodes = declare("episodes", 2,
	field("episode_id", utf8),            // "{step}/{task_id}/{source}/{i}"
	field("task_id", utf8),               // task record id
	field("family", utf8),                // task family (skills are per family)
	field("task_type", utf8),             // qa | mc | math | code ...
	field("split", utf8),                 // train | test
	field("source", utf8),                // current | natural_reference | paired_treatment | paired_control
	nullable("pair_id", utf8),            // set for paired rollouts only
	nullable("comparison_id", utf8),      // skill-admission comparison, paired rollouts only
	nullable("candidate_skill_id", utf8), // skill under test, paired rollouts only
	field("seed", u64),                   // per-episode RNG seed
	field("T", i32),                      // number of decisions, STOP included
	field("reward", f64),                 // in [0,1]
	field("stopped", boolean),            // ended by STOP rather than by a budget
	field("healthy", boolean),            // false: excluded from learning
	nullable("unhealthy_reason", utf8),   // why healthy is false
	nullable("output_node", utf8),        // node whose output was graded
	field("output_text", utf8),           // graded output
	field("tokens_in", i64),              // the episode budget's settled use: agents' + controller's
	field("tokens_out", i64),
	field("model_calls", i64),
	field("tool_calls", i64),
	field("wall_ms", i64),
	field("executor_tokens_in", i64),      // the agents' part of tokens_in (their reported usage, capped at each reservation)
	field("executor_tokens_out", i64),     // the agents' part of tokens_out
	field("executor_calls", i64),          // the agents' part of model_calls
	field("controller_tokens_in", i64),    // the controller decisions' part of tokens_in: their prompts
	field("controller_tokens_out", i64),   // the controller decisions' part of tokens_out: their actions
	field("controller_calls", i64),        // controller decisions charged (sampled, more than one legal action)
	field("controller_count", utf8),       // how controller tokens were counted: estimated | served
	field("controller_requests", i64),     // scoring requests sent to a served reference (0 for the prior)
	field("controller_tokens_sent", i64),  // token ids those requests carried
	field("policy_version", i64),          // checkpoint step of the behaviour policy
	field("menu_id", utf8),                // skill menu the policy saw
	field("value_version", i64),           // checkpoint step of the value head
	field("terminal_structure_key", utf8), // exact structure of the final graph
	field("terminal_coarse_key", utf8),    // coarse structure of the final graph
).with(
	oneOf("split", "train", "test"),
	oneOf("source", "current", "natural_reference", "paired_treatment", "paired_control"),
	oneOf("controller_count", ControllerCountEstimated, ControllerCountServed),
	within(0, 1, "reward"),
	atLeast(0, "T", "tokens_in", "tokens_out", "model_calls", "tool_calls", "wall_ms", "policy_version", "value_version",
		"executor_tokens_in", "executor_tokens_out", "executor_calls", "controller_tokens_in", "controller_tokens_out",
		"controller_calls", "controller_requests", "controller_tokens_sent"),
)

// How an episode's controller tokens were counted (episodes.controller_count): estimated, the
// prompt-only backends' simulated charge (about four characters a token of the user message
// and of the action's JSON, as the prior reads no prompt); served, the served reference's own
// tokens of the rendered chat prompt and of the action's path with its end of turn.
const (
	ControllerCountEstimated = "estimated"
	ControllerCountServed    = "served"
)

// EpisodeRow is a row of the episodes table.
type EpisodeRow struct {
	EpisodeID            string  `arrow:"episode_id"`
	TaskID               string  `arrow:"task_id"`
	Family               string  `arrow:"family"`
	TaskType             string  `arrow:"task_type"`
	Split                string  `arrow:"split"`
	Source               string  `arrow:"source"`
	PairID               *string `arrow:"pair_id"`
	ComparisonID         *string `arrow:"comparison_id"`
	CandidateSkillID     *string `arrow:"candidate_skill_id"`
	Seed                 uint64  `arrow:"seed"`
	T                    int32   `arrow:"T"`
	Reward               float64 `arrow:"reward"`
	Stopped              bool    `arrow:"stopped"`
	Healthy              bool    `arrow:"healthy"`
	UnhealthyReason      *string `arrow:"unhealthy_reason"`
	OutputNode           *string `arrow:"output_node"`
	OutputText           string  `arrow:"output_text"`
	TokensIn             int64   `arrow:"tokens_in"`
	TokensOut            int64   `arrow:"tokens_out"`
	ModelCalls           int64   `arrow:"model_calls"`
	ToolCalls            int64   `arrow:"tool_calls"`
	WallMS               int64   `arrow:"wall_ms"`
	ExecutorTokensIn     int64   `arrow:"executor_tokens_in"`
	ExecutorTokensOut    int64   `arrow:"executor_tokens_out"`
	ExecutorCalls        int64   `arrow:"executor_calls"`
	ControllerTokensIn   int64   `arrow:"controller_tokens_in"`
	ControllerTokensOut  int64   `arrow:"controller_tokens_out"`
	ControllerCalls      int64   `arrow:"controller_calls"`
	ControllerCount      string  `arrow:"controller_count"`
	ControllerRequests   int64   `arrow:"controller_requests"`
	ControllerTokensSent int64   `arrow:"controller_tokens_sent"`
	PolicyVersion        int64   `arrow:"policy_version"`
	MenuID               string  `arrow:"menu_id"`
	ValueVersion         int64   `arrow:"value_version"`
	TerminalStructureKey string  `arrow:"terminal_structure_key"`
	TerminalCoarseKey    string  `arrow:"terminal_coarse_key"`
}
