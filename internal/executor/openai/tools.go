package openai

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/evosteer/evosteer-go/internal/cpuslot"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/executor/search"
	"github.com/evosteer/evosteer-go/internal/sandbox"
	"github.com/evosteer/evosteer-go/internal/textrules"
)

// The tool loop of METHOD.md §2.5 (the release's tool_text_executor.py): each reply may end with
// one <python> or <search> call, which runs and comes back as a <result> block; the reply without
// a call is the final output; when calls or budget run out, a forced final turn asks for the
// result. The role's envelope is the loop's own budget.

const (
	minTurnOutput  = 256 // a tool turn needs at least this many output tokens
	wrapperTokens  = 256 // prompt tokens of the wrapping around the work so far
	closingMarker  = "\n\nPerform your role using "
	cutOff         = "[cut off; continue]"
	elidedResult   = "[result omitted to fit the input limit]"
	searchQueryMax = 300
	finalTurn      = "No tool calls are left. Reply now with your final result. Only this reply is " +
		"passed on, so it must be complete: include everything the task asks for " +
		"(the complete code or the final answer)."
	finalWithoutTurns = "No tool calls are available for this reply. Reply now with your final result; " +
		"it must be complete: include everything the task asks for."
)

var (
	stopStrings = []string{"</python>", "</search>"}
	callRe      = regexp.MustCompile(`(?s)<python>(.*?)</python>|<search>(.*?)</search>`)
	tagRe       = regexp.MustCompile(`</?(?:python|search|result)>`)
	resultRe    = regexp.MustCompile(`(?s)<result>.*?(?:</result>|$)`)
	fencedRe    = regexp.MustCompile("(?si)\\A\\s*```[ \\t]*(?:python3?|py)?[ \\t]*\\n(.*?)\\n?[ \\t]*```\\s*\\z")
	openTagRe   = regexp.MustCompile(`<(python|search)>`)
)

// toolBlock tells the agent how to call its tools.
func toolBlock(tools []string, calls int64, pythonSeconds int, topK int, local bool) string {
	lines := []string{"Tools: you may end a reply with ONE tool call. It is run, its result is shown to " +
		"you as <result>...</result>, and you continue."}
	if slices.Contains(tools, "python") {
		lines = append(lines, fmt.Sprintf("<python>\ncode\n</python> runs the code in a fresh Python process (no network, "+
			"nothing kept between calls, %d s limit) and returns what it prints.", pythonSeconds))
	}
	if slices.Contains(tools, "search") {
		where := "searches Wikipedia"
		if local {
			where = "searches the passages given with the task"
		}
		lines = append(lines, fmt.Sprintf("<search>query</search> %s and returns the top %d passages.", where, topK))
	}
	plural := "s"
	if calls == 1 {
		plural = ""
	}
	lines = append(lines, fmt.Sprintf("You can make at most %d tool call%s. Code in ``` fences is never run. "+
		"Do not write <result> yourself.", calls, plural),
		"Your final reply is the reply without a tool call; only it is passed on, so it must be complete.")
	return strings.Join(lines, "\n")
}

// withToolBlock inserts the block before the prompt's closing instruction.
func withToolBlock(prompt, block string) (string, error) {
	i := strings.LastIndex(prompt, closingMarker)
	if i < 0 {
		return "", errors.New("the node prompt lost its closing instruction")
	}
	return prompt[:i] + "\n\n" + block + prompt[i:], nil
}

type toolCall struct {
	tool, argument string
	start, end     int
}

// firstCall is the first complete tool call of a reply; only it is run.
func firstCall(text string) (toolCall, bool) {
	m := callRe.FindStringSubmatchIndex(text)
	if m == nil {
		return toolCall{}, false
	}
	if m[2] >= 0 {
		return toolCall{"python", pythonSource(text[m[2]:m[3]]), m[0], m[1]}, true
	}
	return toolCall{"search", searchQuery(text[m[4]:m[5]]), m[0], m[1]}, true
}

// pythonSource unwraps a fenced program and removes its common indentation.
func pythonSource(raw string) string {
	if m := fencedRe.FindStringSubmatch(raw); m != nil {
		raw = m[1]
	}
	return strings.TrimSpace(dedent(strings.Trim(raw, "\r\n")))
}

// dedent is textwrap.dedent: the common leading whitespace of the nonblank lines is removed and
// blank lines are emptied.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	prefix, first := "", true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ws := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			prefix, first = ws, false
			continue
		}
		for !strings.HasPrefix(ws, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			lines[i] = ""
		} else {
			lines[i] = strings.TrimPrefix(l, prefix)
		}
	}
	return strings.Join(lines, "\n")
}

// searchQuery collapses whitespace and keeps the first 300 characters.
func searchQuery(raw string) string {
	q := []rune(strings.Join(strings.Fields(raw), " "))
	return string(q[:min(len(q), searchQueryMax)])
}

// normalizeFinal turns leftover tool tags of a final reply into text: python calls become
// fenced code, search calls and result blocks go.
func normalizeFinal(text string) string {
	if !tagRe.MatchString(text) {
		return text
	}
	v := callRe.ReplaceAllStringFunc(text, func(m string) string {
		if c, _ := firstCall(m); c.tool == "python" {
			return "```python\n" + c.argument + "\n```"
		}
		return ""
	})
	v = resultRe.ReplaceAllString(v, "")
	return strings.TrimSpace(tagRe.ReplaceAllString(v, ""))
}

// headTail keeps a third of limit from the head and the rest from the tail of a long text.
func headTail(text string, limit int) string {
	n := utf8.RuneCountInString(text)
	if n <= limit {
		return text
	}
	marker := func(k int) string { return fmt.Sprintf("\n[... %d characters omitted ...]\n", k) }
	keep := max(0, limit-utf8.RuneCountInString(marker(n)))
	head := keep / 3
	rs := []rune(text)
	return string(rs[:head]) + marker(n-keep) + string(rs[n-(keep-head):])
}

// restoreStop puts back the closing tag a server dropped when it stopped at it.
func restoreStop(resp ChatResponse) string {
	text := resp.Text
	if resp.FinishReason != "stop" {
		return text
	}
	if slices.Contains(stopStrings, resp.StopReason) {
		return text + resp.StopReason
	}
	if opens := openTagRe.FindAllStringSubmatchIndex(text, -1); len(opens) > 0 {
		last := opens[len(opens)-1]
		tag := text[last[2]:last[3]]
		if !strings.Contains(text[last[1]:], "</"+tag+">") {
			return text + "</" + tag + ">"
		}
	}
	return text
}

// turn is one model reply of the loop and the result of its call (nil: cut off, no call).
type turn struct {
	reply  string
	result *string
}

func (t turn) render(elide bool) string {
	if t.result == nil {
		return t.reply + "\n" + cutOff
	}
	r := *t.result
	if elide {
		r = elidedResult
	}
	return t.reply + "\n<result>\n" + r + "\n</result>"
}

// work is the prompt of a later turn: the base prompt, the work so far and a closing line.
func work(base string, turns []turn, closing string, elideBefore int) string {
	if len(turns) == 0 {
		return base + "\n\n" + closing
	}
	parts := []string{base, "Your work so far:"}
	for i, t := range turns {
		parts = append(parts, t.render(i < elideBefore))
	}
	return strings.Join(append(parts, closing), "\n\n")
}

// spent is the node's own ledger against its role envelope.
type spent struct {
	in, out, calls, tools, wall int64
	estimated                   bool
}

func (u *spent) charge(resp ChatResponse, ms int64) {
	u.in += resp.Usage.PromptTokens
	u.out += resp.Usage.CompletionTokens
	u.calls++
	u.wall += ms
	u.estimated = u.estimated || resp.Usage.Estimated
}

// toolReserve is the wall time a call of the tool may take, in milliseconds.
func (s *Session) toolReserve(tool string) int64 {
	if tool == "python" {
		return s.e.sandbox.Limits().Wall.Milliseconds() + 5000
	}
	return s.e.cfg.SearchReserve.Milliseconds()
}

func (s *Session) runTools(ctx context.Context, req executor.Request, tools []string) (executor.Result, error) {
	env := req.Role.Envelope
	cfg := s.e.cfg
	pythonSeconds := 0
	if s.e.sandbox != nil {
		pythonSeconds = int(s.e.sandbox.Limits().Wall.Seconds())
	}
	allowed := min(env.ToolCalls, env.ModelCalls-1)
	base, err := withToolBlock(req.Prompt, toolBlock(tools, allowed, pythonSeconds, cfg.SearchTopK, s.e.remote == nil))
	if err != nil {
		return executor.Result{}, fmt.Errorf("node %s: %w", req.NodeID, err)
	}
	reserve := int64(0)
	for _, t := range tools {
		reserve = max(reserve, s.toolReserve(t))
	}
	var (
		used     spent
		turns    []turn
		calls    []executor.ToolCall
		programs []string
		slowest  int64
		output   *string
		failure  string
		n        int
	)
	fail := func(err error) (executor.Result, error) {
		return executor.Result{}, fmt.Errorf("node %s: %w", req.NodeID, err)
	}
	for {
		callsLeft := min(env.ToolCalls-used.tools, env.ModelCalls-used.calls-1)
		if callsLeft < 1 {
			break
		}
		prompt := base
		if len(turns) > 0 {
			prompt = work(base, turns, fmt.Sprintf("Continue. Tool calls left: %d.", callsLeft), 0)
		}
		tokens := textrules.Tokens(prompt)
		maxNew := min(cfg.TurnOutputTokens, env.OutputTokens-used.out-cfg.FinalOutputReserve)
		if cfg.ContextWindow > 0 {
			maxNew = min(maxNew, cfg.ContextWindow-tokens)
		}
		if maxNew < minTurnOutput || 2*tokens+maxNew+int64(cfg.ResultChars)+wrapperTokens > env.InputTokens-used.in ||
			used.wall+2*slowest+reserve > env.WallMS {
			break
		}
		n++
		resp, ms, err := s.generate(ctx, prompt, maxNew, req.Seed, n, stopStrings, env.WallMS-used.wall)
		if err != nil {
			return fail(err)
		}
		used.charge(resp, ms)
		slowest = max(slowest, ms)
		text := restoreStop(resp)
		call, ok := firstCall(text)
		if !ok {
			if !resp.Truncated() {
				out := normalizeFinal(text)
				output = &out
				break
			}
			turns = append(turns, turn{reply: text})
			continue
		}
		reply := resultRe.ReplaceAllString(text[:call.start], "") + text[call.start:call.end]
		if !slices.Contains(tools, call.tool) {
			r := fmt.Sprintf("The %s tool is not available to this role.", call.tool)
			turns = append(turns, turn{reply, &r})
			continue
		}
		if env.ToolCalls-used.tools < 1 || env.WallMS-used.wall < s.toolReserve(call.tool) {
			r := "Not run: no time is left for tool calls."
			turns = append(turns, turn{reply, &r})
			break
		}
		tc, err := s.runTool(ctx, call)
		if err != nil {
			return fail(err)
		}
		used.tools++
		used.wall += min(tc.ms, s.toolReserve(call.tool))
		calls = append(calls, tc.call)
		if call.tool == "python" && tc.call.Status == sandbox.StatusSuccess {
			programs = append(programs, call.argument)
		}
		r := headTail(tc.call.Result, cfg.ResultChars)
		turns = append(turns, turn{reply, &r})
	}
	truncated := false
	if output == nil {
		if n > 0 && env.WallMS-used.wall < slowest {
			out := ""
			if len(turns) > 0 {
				out = normalizeFinal(turns[len(turns)-1].reply)
			}
			output, failure = &out, "timeout"
		} else {
			prompt, err := s.finalPrompt(base, turns, env.InputTokens-used.in, env.OutputTokens-used.out)
			if err != nil {
				return fail(err)
			}
			n++
			resp, ms, err := s.generate(ctx, prompt, env.OutputTokens-used.out, req.Seed, n, nil, env.WallMS-used.wall)
			if err != nil {
				return fail(err)
			}
			used.charge(resp, ms)
			out := normalizeFinal(resp.Text)
			output, truncated = &out, resp.Truncated()
		}
	}
	if s.code && len(programs) > 0 {
		program, err := s.e.graders.TestedProgram(ctx, s.task, *output, programs)
		if err != nil {
			return fail(err)
		}
		if program != "" {
			block := "```python\n" + strings.TrimSpace(program) + "\n```"
			if strings.TrimSpace(*output) != "" {
				block = strings.TrimRight(*output, " \t\r\n") + "\n\n" + block
			}
			output = &block
		}
	}
	res := executor.Result{Output: *output, Tools: calls, Usage: executor.Usage{TokensIn: used.in, TokensOut: used.out,
		ModelCalls: used.calls, ToolCalls: used.tools, WallMS: used.wall, Estimated: used.estimated}}
	s.finish(&res, truncated, failure)
	return res, nil
}

// finalPrompt is the forced final turn's prompt: the work so far with older results elided,
// then with older turns dropped, until it fits what the envelope has left.
func (s *Session) finalPrompt(base string, turns []turn, inputLeft, outputLeft int64) (string, error) {
	want := min(outputLeft, s.e.cfg.FinalOutputReserve)
	var options []string
	if len(turns) == 0 {
		options = append(options, work(base, nil, finalWithoutTurns, 0))
	}
	for elide := range len(turns) {
		options = append(options, work(base, turns, finalTurn, elide))
	}
	for drop := 1; drop <= len(turns); drop++ {
		kept := turns[drop:]
		options = append(options, work(base, kept, finalTurn, max(0, len(kept)-1)))
	}
	for _, p := range options {
		tokens := textrules.Tokens(p)
		if tokens <= inputLeft && (s.e.cfg.ContextWindow == 0 || tokens+want <= s.e.cfg.ContextWindow) {
			return p, nil
		}
	}
	return "", errors.New("the final tool-node prompt cannot fit the role's remaining envelope")
}

type toolRun struct {
	call executor.ToolCall
	ms   int64
}

// runTool runs one call. Tool failures are results the agent sees; only a search service whose
// circuit breaker is open is an error, which ends the episode.
func (s *Session) runTool(ctx context.Context, c toolCall) (toolRun, error) {
	if c.tool == "python" {
		// The episode's CPU slot is given back while the program waits for its turn and runs
		// (the sandbox bounds the programs at once: tools.python.concurrency, memory_total_mb).
		resume := cpuslot.Wait(ctx)
		res := s.e.sandbox.Run(ctx, c.argument)
		resume()
		return toolRun{executor.ToolCall{Tool: "python", Status: res.Status, Result: res.Text(s.e.sandbox.Limits().Wall)}, s.wall(res.Wall)}, nil
	}
	errCall := func(msg string) toolRun {
		return toolRun{call: executor.ToolCall{Tool: "search", Status: sandbox.StatusToolError, Result: "Search error: " + msg}}
	}
	if c.argument == "" {
		return errCall("the query is empty."), nil
	}
	sr := s.searcher()
	if sr == nil {
		return errCall("no retrieval service is configured and the task ships no passages; no results."), nil
	}
	began := time.Now()
	hits, err := sr.Search(ctx, c.argument)
	ms := s.wall(time.Since(began))
	var qe *search.QueryError
	switch {
	case errors.Is(err, search.ErrBreakerOpen):
		return toolRun{}, err
	case errors.As(err, &qe):
		r := errCall(qe.Error())
		r.ms = ms
		return r, nil
	case err != nil:
		r := errCall("the search service did not answer; no results.")
		r.ms = ms
		return r, nil
	}
	return toolRun{executor.ToolCall{Tool: "search", Status: sandbox.StatusSuccess,
		Result: search.Format(hits, s.e.cfg.PassageChars, s.e.cfg.ResultChars)}, ms}, nil
}
