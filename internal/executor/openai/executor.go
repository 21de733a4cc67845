package openai

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/executor/search"
	"github.com/evosteer/evosteer-go/internal/sandbox"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/internal/textrules"
)

// Config configures the executor backend.
type Config struct {
	Temperature        float64 // sampling temperature of every call
	SendSeed           bool    // send a per-call seed derived from the node execution seed
	ContextWindow      int64   // the served model's context; max_tokens never asks past it
	TurnOutputTokens   int64   // generation limit of a tool turn (reference 4096)
	FinalOutputReserve int64   // output tokens kept for the final reply of a tool node (1024)
	ResultChars        int     // a tool result is cut to this many characters (2000)
	SearchTopK         int     // passages a search returns
	PassageChars       int     // a passage is cut to this many characters
	SearchReserve      time.Duration
	// MeasureWall charges each call's and tool's measured wall time to the budget, as the
	// reference does; false charges none, so that a run's files do not depend on the server's
	// latency (executor.openai.fixed_wall_clock).
	MeasureWall bool
}

// Executor runs agents on a Chat Completions server. It is safe for concurrent use: every
// episode shares its client (and so the concurrency limit), sandbox and search service.
type Executor struct {
	cfg     Config
	client  *Client
	sandbox *sandbox.Sandbox
	remote  search.Searcher // the retrieval service; nil searches the task's own passages
	graders *tasks.Graders
}

var _ executor.Executor = (*Executor)(nil)

// New returns the executor. sb runs python tools and code graders; remote may be nil.
func New(cfg Config, client *Client, sb *sandbox.Sandbox, remote search.Searcher) (*Executor, error) {
	if cfg.TurnOutputTokens < minTurnOutput || cfg.FinalOutputReserve < 1 || cfg.ResultChars < 1 || cfg.SearchTopK < 1 || cfg.PassageChars < 1 {
		return nil, fmt.Errorf("openai executor: tool settings out of range: %+v", cfg)
	}
	return &Executor{cfg: cfg, client: client, sandbox: sb, remote: remote, graders: tasks.NewGraders(sb)}, nil
}

// CodeRuns is how many code grades ran the sandbox; an output graded again after a decision
// that did not change it is answered from the graders' kept grades.
func (e *Executor) CodeRuns() int64 { return e.graders.CodeRuns() }

// Begin opens an episode. Families scored by an environment harness (ALFWorld, WebShop,
// SWE-bench Verified) have none here and are refused, naming the family.
func (e *Executor) Begin(ctx context.Context, t tasks.Task, _ uint64) (executor.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := e.graders.Check(t); err != nil {
		return nil, fmt.Errorf("openai executor: %w", err)
	}
	fam, _ := tasks.FamilyOf(t.Family)
	return &Session{e: e, task: t, code: fam.Grading == tasks.KindCode}, nil
}

// Session is one episode on one task; it serves one episode at a time.
type Session struct {
	e     *Executor
	task  tasks.Task
	code  bool // a code task: answers are function definitions
	once  sync.Once
	local search.Searcher // the task's passages, indexed on first use
}

var _ executor.Session = (*Session)(nil)

// functionDef is what a code answer must contain (evosteer_features._FUNCTION_DEF).
var functionDef = regexp.MustCompile(`\b(?:async\s+)?def\s+[A-Za-z_]\w*\s*\(`)

// answerPresent is the reference's answer_present, code=True for code tasks.
func (s *Session) answerPresent(output string) bool {
	if s.code {
		return functionDef.MatchString(output)
	}
	return textrules.AnswerPresent(output)
}

// Execute runs one agent: one call for a role without tools, the tool loop otherwise. A
// server that stays down past the outage tolerance, or refuses a request, is an error: the
// runtime then ends the episode as unhealthy with the reason.
func (s *Session) Execute(ctx context.Context, req executor.Request) (executor.Result, error) {
	tools := s.usableTools(req.Role.Tools)
	env := req.Role.Envelope
	if len(tools) > 0 && min(env.ToolCalls, env.ModelCalls-1) >= 1 {
		return s.runTools(ctx, req, tools)
	}
	resp, ms, err := s.generate(ctx, req.Prompt, req.Role.Envelope.OutputTokens, req.Seed, 1, nil, env.WallMS)
	if err != nil {
		return executor.Result{}, fmt.Errorf("node %s: %w", req.NodeID, err)
	}
	res := executor.Result{Output: resp.Text, Usage: executor.Usage{TokensIn: resp.Usage.PromptTokens,
		TokensOut: resp.Usage.CompletionTokens, ModelCalls: 1, WallMS: ms, Estimated: resp.Usage.Estimated}}
	s.finish(&res, resp.Truncated(), "")
	return res, nil
}

// finish sets status, failure kind and answer presence; failure is "" or "timeout".
func (s *Session) finish(res *executor.Result, truncated bool, failure string) {
	switch {
	case failure != "":
		res.Status, res.FailureKind = "failed", failure
	case truncated:
		res.Status, res.FailureKind = "failed", "truncated"
	default:
		res.Status, res.AnswerPresent = "success", s.answerPresent(res.Output)
	}
}

// usableTools are the role's tools this executor has a backend for.
func (s *Session) usableTools(tools []string) []string {
	var out []string
	for _, t := range tools {
		if t == "search" || t == "python" && s.e.sandbox != nil {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// generate makes one model call with the prompt as a single user turn; max_tokens is capped
// so prompt and reply fit the context window. It returns the wall time charged, capped at
// wallCap milliseconds.
func (s *Session) generate(ctx context.Context, prompt string, maxTokens int64, nodeSeed uint64, turn int, stop []string, wallCap int64) (ChatResponse, int64, error) {
	if w := s.e.cfg.ContextWindow; w > 0 {
		maxTokens = min(maxTokens, w-textrules.Tokens(prompt))
	}
	if maxTokens < 1 {
		return ChatResponse{}, 0, errors.New("the prompt leaves no room for a reply in the context window")
	}
	req := ChatRequest{Messages: []Message{{Role: "user", Content: prompt}}, MaxTokens: maxTokens,
		Temperature: s.e.cfg.Temperature, Stop: stop}
	if s.e.cfg.SendSeed {
		v := callSeed(nodeSeed, turn)
		req.Seed = &v
	}
	began := time.Now()
	resp, err := s.e.client.Chat(ctx, req)
	return resp, min(s.wall(time.Since(began)), wallCap), err
}

// wall is the wall time d charged to the budget: d, or none with MeasureWall off.
func (s *Session) wall(d time.Duration) int64 {
	if !s.e.cfg.MeasureWall {
		return 0
	}
	return d.Milliseconds()
}

// callSeed is the seed of one call: the node execution seed on the first turn, a hash of it
// and the turn after; 31 bits, which every server takes (llama.cpp reads a uint32).
func callSeed(nodeSeed uint64, turn int) int64 {
	if turn > 1 {
		nodeSeed = seed.Derive(nodeSeed, "turn", strconv.Itoa(turn))
	}
	return RequestSeed(nodeSeed)
}

// Grade scores the output node's text with the task's grader.
func (s *Session) Grade(ctx context.Context, output string) (float64, error) {
	sc, err := s.e.graders.Grade(ctx, s.task, output)
	if err != nil {
		return 0, err
	}
	return sc.Reward, nil
}

// EnvironmentDone is false: text families have no environment.
func (s *Session) EnvironmentDone() bool { return false }

// searcher is the retrieval service, else the task's passages, else nil.
func (s *Session) searcher() search.Searcher {
	if s.e.remote != nil {
		return s.e.remote
	}
	s.once.Do(func() {
		if ps := search.ParsePassages(s.task.Prompt); len(ps) > 0 {
			s.local = search.NewLocal(ps, s.e.cfg.SearchTopK)
		}
	})
	return s.local
}
