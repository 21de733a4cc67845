package executor

import (
	"context"

	"github.com/evosteer/evosteer-go/internal/tasks"
)

// Envelope is a role's model_maximum: the most one execution of the role may use. The runtime
// reserves the whole envelope before an execution and settles the actual usage after it.
type Envelope struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	ModelCalls   int64 `json:"model_calls"`
	ToolCalls    int64 `json:"tool_calls"`
	WallMS       int64 `json:"wall_time_milliseconds"`
}

// Role is a role as adapted to one family (METHOD.md §2.4).
type Role struct {
	ID          string   `json:"role_id"`
	Instruction string   `json:"instruction"`
	Tools       []string `json:"tools"` // subset of python, search
	Envelope    Envelope `json:"model_maximum"`
	NonOutput   bool     `json:"-"` // planner: never the output node unless nothing else can be
}

// Skill is a bound skill as the executor sees it: its id and its rendered text (METHOD.md §2.5).
type Skill struct {
	ID   string
	Text string
}

// Message is what an edge delivers to its target at the target's execution.
type Message struct {
	SourceID            string `json:"source_id"`
	TargetID            string `json:"target_id"`
	Protocol            string `json:"protocol"` // feedback | revise
	SourceOutputVersion int    `json:"source_output_version"`
	Body                string `json:"body"`
}

// Request is one agent execution.
type Request struct {
	NodeID     string
	ExecIndex  int    // 0-based count of executions in the episode before this one
	Seed       uint64 // the node execution seed: seed.Derive(episode seed, exec index, node id)
	Role       Role
	Skills     []Skill   // bound skills, sorted by id
	Messages   []Message // inbound messages, sorted by source id
	PrevOutput *string   // the node's previous output, nil on its first execution
	Prompt     string    // the assembled prompt (METHOD.md §2.5)
	// Bare marks the executor alone, outside the architecture (the direct baseline): the role's
	// instruction is left out of the prompt.
	Bare bool
}

// Usage is what an execution consumed; the runtime charges it to the episode budget.
type Usage struct {
	TokensIn   int64 `json:"tokens_in"`
	TokensOut  int64 `json:"tokens_out"`
	ModelCalls int64 `json:"model_calls"`
	ToolCalls  int64 `json:"tool_calls"`
	WallMS     int64 `json:"wall_ms"`
	Estimated  bool  `json:"estimated,omitempty"` // usage was estimated, not reported
}

// ToolCall is one tool use inside an execution.
type ToolCall struct {
	Tool   string `json:"tool"`   // python | search | environment
	Status string `json:"status"` // success | failed | timeout | tool_error
	Result string `json:"result"` // the text returned to the agent (search passages, stdout)
}

// Environment is the state of an interactive family's environment after an execution.
type Environment struct {
	Enabled        bool
	StepsCompleted int
	MaxPhases      int
	StepsPerPhase  int
	PhaseIndex     int
	Done           bool
}

// Result is the outcome of one execution.
type Result struct {
	Output        string
	AnswerPresent bool   // the execution reports a final answer in Output
	Status        string // success | failed
	FailureKind   string // "" or timeout, truncated, parse_error, tool_error, infrastructure-failure, ...
	Usage         Usage
	Tools         []ToolCall
	Environment   Environment
}

// Executor starts episodes on tasks. Implementations: the simulated world (internal/sim) and an
// OpenAI-compatible chat endpoint.
type Executor interface {
	// Begin opens one episode of a task. The seed makes every draw of the episode reproducible;
	// the two arms of a paired comparison share it.
	Begin(ctx context.Context, task tasks.Task, seed uint64) (Session, error)
}

// Session is one episode's connection to the executor: interactive families keep their
// environment state here.
type Session interface {
	Execute(ctx context.Context, req Request) (Result, error)
	// Grade scores the output node's text when the episode stops: a reward in [0, 1].
	Grade(ctx context.Context, output string) (float64, error)
	// EnvironmentDone reports whether an interactive environment has finished (always false
	// for text families); gated families may STOP only then or when nothing else is legal.
	EnvironmentDone() bool
}
