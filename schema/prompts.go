package schema

// Prompts has one row per decision whose ρ a served reference scored (served_reference set, more
// than one legal action), written by rollout next to the decisions: the controller prompt as it
// was sent, so a batch can be re-scored (rescore's drift check) and audited offline. The prompt
// the server scored is the chat template's rendering of the system prompt system_prompt_id names
// and user_message (scoring.ChatTemplate.Prompt); prompt_sha256 is the sha256 of that rendered
// text's UTF-8 bytes, prompt_tokens the server's token count of it.
var Prompts = declare("prompts", 2,
	field("episode_id", utf8),
	field("t", i32),                 // decision index, as in decisions
	field("system_prompt_id", utf8), // e.g. evosteer-go-controller@1 (orchestra.ControllerSystemPromptID)
	field("template", utf8),         // the chat template (served_reference.template)
	field("model", utf8),            // the served model's name (served_reference.model)
	field("prompt_sha256", utf8),    // hex sha256 of the rendered chat prompt text
	field("prompt_tokens", i32),     // the rendered prompt's length in the server's tokens
	field("requests", i32),          // scoring requests sent for this decision: 1, or 0 when the scorer's cache answered
	field("tokens_sent", i64),       // token ids that request carried (prompt + path, for each legal action)
	field("user_message", utf8),     // the controller prompt (the user message)
).with(
	atLeast(0, "t", "requests", "tokens_sent"),
	atLeast(1, "prompt_tokens"),
)

// PromptRow is a row of the prompts table.
type PromptRow struct {
	EpisodeID      string `arrow:"episode_id"`
	T              int32  `arrow:"t"`
	SystemPromptID string `arrow:"system_prompt_id"`
	Template       string `arrow:"template"`
	Model          string `arrow:"model"`
	PromptSHA256   string `arrow:"prompt_sha256"`
	PromptTokens   int32  `arrow:"prompt_tokens"`
	Requests       int32  `arrow:"requests"`
	TokensSent     int64  `arrow:"tokens_sent"`
	UserMessage    string `arrow:"user_message"`
}
