package schema

// Executions has one row per agent execution (written by rollout, for
// offline inspection and the cost accounting of sql/costs.sql).
var Executions = declare("executions", 2,
	field("episode_id", utf8),
	field("t", i32),          // decision after which it ran
	field("exec_index", i32), // order within the decision
	field("node_id", utf8),
	field("role", utf8),
	field("skills", listOf(utf8)), // skill ids attached to the node
	field("prompt", utf8),         // text, or a hash with --redact
	field("output", utf8),
	nullable("answer", utf8),       // extracted answer, if any
	field("status", utf8),          // ok | failed ...
	nullable("failure_kind", utf8), // set when status is not ok
	field("answer_present", boolean),
	field("tokens_in", i64),
	field("tokens_out", i64),
	field("model_calls", i64),
	field("tool_calls", i64),
	field("wall_ms", i64),
	field("tool_statuses", listOf(utf8)), // one status per tool call
	field("usage_estimated", boolean),    // the client estimated tokens_in/out: the server reported no usage for at least one of its model calls
).with(
	atLeast(0, "t", "exec_index", "tokens_in", "tokens_out", "model_calls", "tool_calls", "wall_ms"),
)

// ExecutionRow is a row of the executions table.
type ExecutionRow struct {
	EpisodeID     string   `arrow:"episode_id"`
	T             int32    `arrow:"t"`
	ExecIndex     int32    `arrow:"exec_index"`
	NodeID        string   `arrow:"node_id"`
	Role          string   `arrow:"role"`
	Skills        []string `arrow:"skills"`
	Prompt        string   `arrow:"prompt"`
	Output        string   `arrow:"output"`
	Answer        *string  `arrow:"answer"`
	Status        string   `arrow:"status"`
	FailureKind   *string  `arrow:"failure_kind"`
	AnswerPresent bool     `arrow:"answer_present"`
	TokensIn      int64    `arrow:"tokens_in"`
	TokensOut     int64    `arrow:"tokens_out"`
	ModelCalls    int64    `arrow:"model_calls"`
	ToolCalls     int64    `arrow:"tool_calls"`
	WallMS        int64    `arrow:"wall_ms"`
	ToolStatuses  []string `arrow:"tool_statuses"`
	// UsageEstimated is executor.Usage.Estimated: the counts are the client's estimate
	// (about four characters a token), not the server's.
	UsageEstimated bool `arrow:"usage_estimated"`
}
