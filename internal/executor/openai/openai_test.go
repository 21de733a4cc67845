package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/sandbox"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

const secret = "sk-test-0123456789abcdef"

// fakeServer speaks Chat Completions; reply decides each answer from the request and the
// 1-based request number.
type fakeServer struct {
	*httptest.Server
	calls    atomic.Int64
	inFlight atomic.Int64
	maxSeen  atomic.Int64
	mu       sync.Mutex
	requests []wireRequest
	auth     []string
}

type reply struct {
	status int
	body   string
	delay  time.Duration
}

func completion(text, finish string, usage bool) string {
	v := map[string]any{"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text},
		"finish_reason": finish}}}
	if usage {
		v["usage"] = map[string]any{"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func newFake(t testing.TB, answer func(n int64, req wireRequest) reply) *fakeServer {
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cur := f.inFlight.Add(1)
		defer f.inFlight.Add(-1)
		for {
			m := f.maxSeen.Load()
			if cur <= m || f.maxSeen.CompareAndSwap(m, cur) {
				break
			}
		}
		var req wireRequest
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", http.StatusNotFound)
			return
		}
		n := f.calls.Add(1)
		f.mu.Lock()
		f.requests = append(f.requests, req)
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.mu.Unlock()
		rep := answer(n, req)
		if rep.delay > 0 {
			select {
			case <-time.After(rep.delay):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		w.Write([]byte(rep.body))
	}))
	t.Cleanup(f.Close)
	return f
}

func testClient(t testing.TB, url string, log *bytes.Buffer) *Client {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if log != nil {
		logger = slog.New(slog.NewTextHandler(log, nil))
	}
	c, err := NewClient(ClientConfig{BaseURL: url + "/v1", Model: "m", APIKey: secret, MaxConcurrency: 64,
		Timeout: 2 * time.Second, Outage: 400 * time.Millisecond, BackoffInitial: 20 * time.Millisecond,
		BackoffMax: 100 * time.Millisecond, DisableThinking: true, BaseURLSetting: "executor.openai.base_url", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func chat(c *Client) (ChatResponse, error) {
	return c.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: "user", Content: "What is 6*7?"}}, MaxTokens: 50, Temperature: 0.3})
}

func TestChatSendsTheRequestAndReadsUsage(t *testing.T) {
	f := newFake(t, func(int64, wireRequest) reply { return reply{200, completion("Answer: 42", "stop", true), 0} })
	c := testClient(t, f.URL, nil)
	seed := int64(7)
	resp, err := c.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: "user", Content: "q"}}, MaxTokens: 50,
		Temperature: 0.3, Seed: &seed, Stop: []string{"</python>"}})
	if err != nil || resp.Text != "Answer: 42" || resp.Usage != (Usage{PromptTokens: 100, CompletionTokens: 7}) || resp.Truncated() {
		t.Fatalf("%+v %v", resp, err)
	}
	req := f.requests[0]
	if req.Model != "m" || req.MaxTokens != 50 || req.Temperature != 0.3 || *req.Seed != 7 || req.Stop[0] != "</python>" ||
		!req.ChatTemplateKwargs["enable_thinking"] == false || f.auth[0] != "Bearer "+secret {
		t.Fatalf("request %+v auth %q", req, f.auth[0])
	}
}

func TestServerErrorsAreRetriedUntilSuccess(t *testing.T) {
	f := newFake(t, func(n int64, _ wireRequest) reply {
		if n <= 2 {
			return reply{500, `{"error": {"message": "engine busy"}}`, 0}
		}
		return reply{200, completion("ok", "stop", true), 0}
	})
	var log bytes.Buffer
	resp, err := chat(testClient(t, f.URL, &log))
	if err != nil || resp.Text != "ok" || f.calls.Load() != 3 || strings.Count(log.String(), "retrying") != 2 || !strings.Contains(log.String(), "engine busy") {
		t.Fatalf("%+v %v calls %d log %s", resp, err, f.calls.Load(), log.String())
	}
}

// TestMaxAttemptsEndsTheCall: a client with MaxAttempts gives up after that many failed attempts,
// inside the outage tolerance, and says so.
func TestMaxAttemptsEndsTheCall(t *testing.T) {
	f := newFake(t, func(int64, wireRequest) reply { return reply{503, "down for maintenance", 0} })
	c := testClient(t, f.URL, nil)
	c.cfg.MaxAttempts = 2
	_, err := chat(c)
	if err == nil || !strings.Contains(err.Error(), "after 2 attempts (outage tolerance 400ms, attempts 2)") || f.calls.Load() != 2 {
		t.Fatalf("%v after %d calls", err, f.calls.Load())
	}
}

func TestOutageToleranceEndsTheCall(t *testing.T) {
	f := newFake(t, func(int64, wireRequest) reply { return reply{503, "down for maintenance", 0} })
	began := time.Now()
	_, err := chat(testClient(t, f.URL, nil))
	if err == nil || !strings.Contains(err.Error(), "outage tolerance 400ms") || !strings.Contains(err.Error(), "HTTP 503: down for maintenance") {
		t.Fatalf("%v", err)
	}
	if d := time.Since(began); d < 400*time.Millisecond || d > 5*time.Second || f.calls.Load() < 3 {
		t.Fatalf("gave up after %v and %d calls", d, f.calls.Load())
	}
}

func TestSlowResponsesTimeOutAndAreRetried(t *testing.T) {
	f := newFake(t, func(n int64, _ wireRequest) reply {
		if n == 1 {
			return reply{200, completion("late", "stop", true), 5 * time.Second}
		}
		return reply{200, completion("on time", "stop", true), 0}
	})
	c := testClient(t, f.URL, nil)
	c.cfg.Timeout = 150 * time.Millisecond
	resp, err := chat(c)
	if err != nil || resp.Text != "on time" || f.calls.Load() != 2 {
		t.Fatalf("%+v %v", resp, err)
	}
	g := newFake(t, func(int64, wireRequest) reply { return reply{200, completion("late", "stop", true), 5 * time.Second} })
	c = testClient(t, g.URL, nil)
	c.cfg.Timeout = 100 * time.Millisecond
	if _, err := chat(c); err == nil || !strings.Contains(err.Error(), "deadline exceeded") || !strings.Contains(err.Error(), "outage tolerance") {
		t.Fatalf("%v", err)
	}
}

func TestClientErrorsFailFastWithTheServerMessage(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		want   string
	}{
		{401, `{"error": {"message": "Incorrect API key provided: ` + secret + `", "type": "invalid_request_error"}}`, "HTTP 401: Incorrect API key provided: [redacted]"},
		{400, `{"object": "error", "message": "This model's maximum context length is 32768 tokens", "code": 400}`, "HTTP 400: This model's maximum context length is 32768 tokens"},
		{404, `no such route`, "HTTP 404: no such route"},
	} {
		f := newFake(t, func(int64, wireRequest) reply { return reply{c.status, c.body, 0} })
		var log bytes.Buffer
		began := time.Now()
		_, err := chat(testClient(t, f.URL, &log))
		if err == nil || !strings.Contains(err.Error(), c.want) || f.calls.Load() != 1 || time.Since(began) > time.Second {
			t.Fatalf("%d: %v (calls %d)", c.status, err, f.calls.Load())
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(log.String(), secret) {
			t.Fatalf("the key leaked: %v %s", err, log.String())
		}
	}
}

// keyFragment returns a fragment of the key of 8 bytes found in s, or "".
func keyFragment(s string) string {
	for j := 0; j+8 <= len(secret); j++ {
		if strings.Contains(s, secret[j:j+8]) {
			return secret[j : j+8]
		}
	}
	return ""
}

// A server that echoes the key at every offset of its error body, across the 500-character cut
// of error messages and the 200-character cut of malformed replies: no part of the key of 8
// bytes or more reaches the error (what episodes.unhealthy_reason stores) or the log.
func TestEchoedKeyNeverLeaksInPart(t *testing.T) {
	kinds := []struct {
		name string
		max  int
		body func(pad string) reply
	}{
		{"5xx text", errorBodyChars, func(pad string) reply { return reply{500, pad + secret + " is refused", 0} }},
		{"4xx json", errorBodyChars, func(pad string) reply {
			b, _ := json.Marshal(map[string]any{"error": map[string]string{"message": pad + secret}})
			return reply{401, string(b), 0}
		}},
		{"malformed 200", malformedBodyChars, func(pad string) reply { return reply{200, "<html>" + pad + secret + "</html>", 0} }},
		{"200 without a choice", malformedBodyChars, func(pad string) reply {
			return reply{200, `{"choices": [], "note": "` + pad + secret + `"}`, 0}
		}},
	}
	for _, k := range kinds {
		var pad atomic.Int64
		f := newFake(t, func(int64, wireRequest) reply { return k.body(strings.Repeat("x", int(pad.Load()))) })
		var log bytes.Buffer
		c := testClient(t, f.URL, &log)
		c.cfg.Outage = 0 // one attempt per offset
		for off := 0; off <= k.max+len(secret); off++ {
			pad.Store(int64(off))
			_, err := chat(c)
			if err == nil {
				t.Fatalf("%s offset %d: no error", k.name, off)
			}
			if frag := keyFragment(err.Error() + log.String()); frag != "" {
				t.Fatalf("%s offset %d: %q of the key in %q", k.name, off, frag, err.Error())
			}
		}
	}
	// A retried failure is logged: the log is redacted the same way.
	f := newFake(t, func(n int64, _ wireRequest) reply {
		if n == 1 {
			return reply{503, strings.Repeat("x", errorBodyChars-10) + secret, 0}
		}
		return reply{200, completion("ok", "stop", true), 0}
	})
	var log bytes.Buffer
	if _, err := chat(testClient(t, f.URL, &log)); err != nil || !strings.Contains(log.String(), "retrying") {
		t.Fatalf("%v %s", err, log.String())
	}
	if frag := keyFragment(log.String()); frag != "" {
		t.Fatalf("%q of the key in the log %s", frag, log.String())
	}
}

func TestMalformedResponsesFailFast(t *testing.T) {
	for _, body := range []string{`{"choices": [`, `<html>proxy error</html>`, `{"choices": []}`} {
		f := newFake(t, func(int64, wireRequest) reply { return reply{200, body, 0} })
		if _, err := chat(testClient(t, f.URL, nil)); !errors.Is(err, ErrMalformed) && !strings.Contains(fmt.Sprint(err), "malformed") || f.calls.Load() != 1 {
			t.Fatalf("%q: %v", body, err)
		}
	}
}

func TestMissingUsageIsEstimatedAndMarked(t *testing.T) {
	f := newFake(t, func(int64, wireRequest) reply {
		return reply{200, completion(strings.Repeat("x", 40), "length", false), 0}
	})
	resp, err := chat(testClient(t, f.URL, nil))
	if err != nil || !resp.Usage.Estimated || resp.Usage.CompletionTokens != 10 || resp.Usage.PromptTokens != 7 || !resp.Truncated() {
		t.Fatalf("%+v %v", resp, err)
	}
}

// TestConcurrencyIsBoundedAndReached: 256 callers at once never put more than the limit of 64
// in flight, and do reach it: every reply waits until 64 are in flight (or 20 s have passed,
// which only a client that cannot reach the limit makes happen).
func TestConcurrencyIsBoundedAndReached(t *testing.T) {
	full := make(chan struct{})
	var once sync.Once
	var f *fakeServer
	f = newFake(t, func(int64, wireRequest) reply {
		if f.inFlight.Load() >= 64 {
			once.Do(func() { close(full) })
		}
		select {
		case <-full:
		case <-time.After(20 * time.Second):
		}
		return reply{200, completion("ok", "stop", true), 0}
	})
	c := testClient(t, f.URL, nil)
	var wg sync.WaitGroup
	for i := 0; i < 256; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := chat(c); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if m := f.maxSeen.Load(); m != 64 {
		t.Fatalf("max in flight %d, want exactly the limit 64", m)
	}
}

func TestAPIKeyFromEnv(t *testing.T) {
	t.Setenv("EVOSTEER_TEST_KEY", secret)
	if k, err := APIKeyFromEnv("EVOSTEER_TEST_KEY"); err != nil || k != secret {
		t.Fatal(k, err)
	}
	if _, err := APIKeyFromEnv("EVOSTEER_TEST_UNSET_KEY"); err == nil || !strings.Contains(err.Error(), "EVOSTEER_TEST_UNSET_KEY") {
		t.Fatal(err)
	}
	if k, err := APIKeyFromEnv(""); k != "" || err != nil {
		t.Fatal(k, err)
	}
}

// testPython is the sandbox interpreter of the tests (see the sandbox package).
func testSandbox(t testing.TB) *sandbox.Sandbox {
	py := os.Getenv("EVOSTEER_SANDBOX_PYTHON")
	if py == "" {
		py = "python3"
	}
	sb, err := sandbox.New(sandbox.Config{Interpreter: py, Concurrency: 2, Limits: sandbox.Limits{CPU: 10 * time.Second,
		Wall: 15 * time.Second, Memory: 4 << 30, FileSize: 8 << 20, OpenFiles: 64, Processes: 64}})
	if err != nil {
		t.Skipf("no python for the sandbox: %v", err)
	}
	return sb
}

var testConfig = Config{Temperature: 0.3, SendSeed: true, ContextWindow: 32768, TurnOutputTokens: 4096, FinalOutputReserve: 1024,
	ResultChars: 2000, SearchTopK: 3, PassageChars: 600, SearchReserve: 35 * time.Second, MeasureWall: true}

func fixture(t testing.TB, id string) tasks.Task {
	ts, err := tasks.ReadJSONL("../../tasks/testdata/tasks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ts {
		if x.ID == id {
			return x
		}
	}
	t.Fatalf("no fixture %s", id)
	return tasks.Task{}
}

func newExecutor(t testing.TB, url string, sb *sandbox.Sandbox) *Executor {
	e, err := New(testConfig, testClient(t, url, nil), sb, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func role(t testing.TB, task tasks.Task, id string) executor.Role {
	for _, r := range orchestra.RolesFor(task.Family, task.TaskType) {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no role %s", id)
	return executor.Role{}
}

func TestBeginRefusesEnvironmentFamilies(t *testing.T) {
	e := newExecutor(t, "http://127.0.0.1:1", nil)
	for _, id := range []string{"alfworld/valid_unseen/000003", "webshop/test-1", "swe_bench_verified/test-example__example-1"} {
		task := fixture(t, id)
		if _, err := e.Begin(context.Background(), task, 1); err == nil || !strings.Contains(err.Error(), task.Family+" tasks are scored by their own environment harness") {
			t.Errorf("%s: %v", id, err)
		}
	}
}

// runEpisode plays ADD_AGENT(solver) then STOP through the orchestration runtime.
func runEpisode(t *testing.T, e *Executor, task tasks.Task) (*orchestra.Runtime, error) {
	sess, err := e.Begin(context.Background(), task, 42)
	if err != nil {
		t.Fatal(err)
	}
	rt := orchestra.New(task, sess, 42, orchestra.Options{Budget: defaultBudget(), Interleaved: true, Repair: true})
	for _, kind := range []string{orchestra.KindAddAgent, orchestra.KindSetOutput, orchestra.KindStop} {
		var a orchestra.Action
		for _, l := range rt.Legal() {
			if l.Kind == kind && (kind != orchestra.KindAddAgent || l.RoleID == "solver" && l.SkillID == "") {
				a = l
			}
		}
		if a.Kind == "" {
			t.Fatalf("no legal %s among %v", kind, rt.Legal())
		}
		if _, err := rt.Apply(context.Background(), a); err != nil {
			return rt, err
		}
	}
	return rt, nil
}

func TestEpisodeThroughTheRuntimeHealthyAndUnhealthy(t *testing.T) {
	task := fixture(t, "medqa/f4")
	ok := newFake(t, func(int64, wireRequest) reply {
		return reply{200, completion("Vitamin C prevents scurvy.\nAnswer: C", "stop", true), 0}
	})
	rt, err := runEpisode(t, newExecutor(t, ok.URL, nil), task)
	if err != nil || rt.Poisoned() || rt.Reward() != 1 {
		t.Fatalf("healthy episode: %v poisoned %t reward %v", err, rt.Poisoned(), rt.Reward())
	}
	if used := rt.Ledger().Settled(); used.InputTokens < 100 || used.OutputTokens < 7 {
		t.Fatalf("usage not charged: %+v", used)
	}
	down := newFake(t, func(int64, wireRequest) reply { return reply{502, "bad gateway", 0} })
	rt, err = runEpisode(t, newExecutor(t, down.URL, nil), task)
	if err == nil || !rt.Poisoned() || !strings.Contains(err.Error(), "outage tolerance") {
		t.Fatalf("unhealthy episode: %v poisoned %t", err, rt.Poisoned())
	}
}

func TestPlainExecutionTruncationAndSeed(t *testing.T) {
	task := fixture(t, "hotpotqa/f1")
	f := newFake(t, func(n int64, _ wireRequest) reply {
		if n == 1 {
			return reply{200, completion("Answer: Paris", "stop", true), 0}
		}
		return reply{200, completion("Let me think about this at great", "length", true), 0}
	})
	sess, _ := newExecutor(t, f.URL, nil).Begin(context.Background(), task, 1)
	req := executor.Request{NodeID: "n0", Seed: 1<<40 + 5, Role: role(t, task, "solver"), Prompt: "Role: x\n\nTask:\ny\n\nPerform your role using the task. Return your result."}
	res, err := sess.Execute(context.Background(), req)
	if err != nil || res.Status != "success" || !res.AnswerPresent || res.Usage.ModelCalls != 1 || res.Usage.TokensIn != 100 {
		t.Fatalf("%+v %v", res, err)
	}
	if got := *f.requests[0].Seed; got != 5 || f.requests[0].MaxTokens != req.Role.Envelope.OutputTokens {
		t.Fatalf("seed %d max_tokens %d", got, f.requests[0].MaxTokens)
	}
	res, err = sess.Execute(context.Background(), req)
	if err != nil || res.Status != "failed" || res.FailureKind != "truncated" || res.AnswerPresent {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestToolLoopRunsPythonAndFeedsTheResultBack(t *testing.T) {
	sb := testSandbox(t)
	task := fixture(t, "aime_2026/f5")
	f := newFake(t, func(n int64, req wireRequest) reply {
		switch n {
		case 1: // the server stops at </python> and drops it, as OpenAI servers do
			return reply{200, completion("Let me compute.\n<python>\nprint(6 * 7)\n", "stop", true), 0}
		default:
			return reply{200, completion("The product is \\boxed{42}.", "stop", true), 0}
		}
	})
	sess, _ := newExecutor(t, f.URL, sb).Begin(context.Background(), task, 1)
	r := role(t, task, "tool_user")
	prompt := "Role: " + r.Instruction + "\n\nTask:\n" + task.Prompt + "\n\nPerform your role using the task. Return your result."
	res, err := sess.Execute(context.Background(), executor.Request{NodeID: "n0", Seed: 9, Role: r, Prompt: prompt})
	if err != nil || res.Output != "The product is \\boxed{42}." || res.Status != "success" || len(res.Tools) != 1 ||
		res.Tools[0].Status != "success" || res.Tools[0].Result != "42\n" || res.Usage.ModelCalls != 2 || res.Usage.ToolCalls != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	first, second := f.requests[0].Messages[0].Content, f.requests[1].Messages[0].Content
	if !strings.Contains(first, "Tools: you may end a reply with ONE tool call.") || !strings.Contains(first, "15 s limit") ||
		strings.Index(first, "Tools:") > strings.Index(first, "Perform your role") || f.requests[0].Stop[0] != "</python>" {
		t.Fatalf("first prompt:\n%s", first)
	}
	if !strings.Contains(second, "Your work so far:\n\nLet me compute.\n<python>\nprint(6 * 7)\n</python>\n<result>\n42\n\n</result>\n\nContinue. Tool calls left: 3.") {
		t.Fatalf("second prompt:\n%s", second)
	}
	if *f.requests[1].Seed == *f.requests[0].Seed {
		t.Fatal("the second turn reused the first turn's seed")
	}
}

func TestSearchOverShippedPassagesAndForcedFinalTurn(t *testing.T) {
	task := fixture(t, "hotpotqa/f1")
	f := newFake(t, func(n int64, req wireRequest) reply {
		if req.Stop != nil { // every tool turn searches; calls run out
			return reply{200, completion("<search>Anna Marchetti born</search>", "stop", true), 0}
		}
		return reply{200, completion("Answer: Paris", "stop", true), 0}
	})
	sess, _ := newExecutor(t, f.URL, nil).Begin(context.Background(), task, 1)
	r := role(t, task, "researcher")
	prompt := "Role: " + r.Instruction + "\n\nTask:\n" + task.Prompt + "\n\nPerform your role using the task. Return your result."
	res, err := sess.Execute(context.Background(), executor.Request{NodeID: "n0", Seed: 3, Role: r, Prompt: prompt})
	if err != nil || res.Output != "Answer: Paris" || len(res.Tools) != 3 || res.Usage.ModelCalls != 4 {
		t.Fatalf("%+v %v", res, err)
	}
	if !strings.HasPrefix(res.Tools[0].Result, "Doc 1(Title: \"Anna Marchetti\") Anna Marchetti (1870-1931) was an Italian painter born in Paris.") {
		t.Fatalf("search result %q", res.Tools[0].Result)
	}
	last := f.requests[len(f.requests)-1].Messages[0].Content
	if !strings.HasSuffix(last, "No tool calls are left. Reply now with your final result. Only this reply is passed on, so it must be complete: include everything the task asks for (the complete code or the final answer).") {
		t.Fatalf("final prompt ends %q", last[len(last)-200:])
	}
}

func TestToolTextHelpers(t *testing.T) {
	if got := normalizeFinal("Here:\n<python>\n    x = 1\n    print(x)\n</python>\n<result>\n1\n</result>\n<search>q</search> done"); got != "Here:\n```python\nx = 1\nprint(x)\n```\n\n done" {
		t.Fatalf("%q", got)
	}
	if c, ok := firstCall("a <search>  two\n words </search> <python>x</python>"); !ok || c.tool != "search" || c.argument != "two words" {
		t.Fatalf("%+v", c)
	}
	if c, _ := firstCall("<python>```python\nprint(1)\n```</python>"); c.argument != "print(1)" {
		t.Fatalf("%q", c.argument)
	}
	if got := headTail(strings.Repeat("a", 50)+strings.Repeat("b", 50), 60); got != strings.Repeat("a", 8)+"\n[... 74 characters omitted ...]\n"+strings.Repeat("b", 18) {
		t.Fatalf("%q", got)
	}
	if got := restoreStop(ChatResponse{Text: "<search>q", FinishReason: "stop"}); got != "<search>q</search>" {
		t.Fatalf("%q", got)
	}
	if got := restoreStop(ChatResponse{Text: "x <python>y", FinishReason: "stop", StopReason: "</python>"}); got != "x <python>y</python>" {
		t.Fatalf("%q", got)
	}
	if got := restoreStop(ChatResponse{Text: "<python>y", FinishReason: "length"}); got != "<python>y" {
		t.Fatalf("%q", got)
	}
}

func defaultBudget() config.Budget {
	c, err := config.Default()
	if err != nil {
		panic(err)
	}
	return c.Budget
}

// TestEchoedKeyInASuccessIsRedacted: a 200 reply that echoes the Authorization header keeps no
// fragment of the key in the text the executor stores.
func TestEchoedKeyInASuccessIsRedacted(t *testing.T) {
	f := newFake(t, func(_ int64, _ wireRequest) reply {
		return reply{200, completion("your key is Bearer "+secret+"\nAnswer: 42", "stop", true), 0}
	})
	resp, err := chat(testClient(t, f.URL, nil))
	if err != nil {
		t.Fatal(err)
	}
	if frag := keyFragment(resp.Text); frag != "" || !strings.Contains(resp.Text, "[redacted]") || !strings.HasSuffix(resp.Text, "Answer: 42") {
		t.Fatalf("%q of the key in %q", frag, resp.Text)
	}
}

// TestRedirectsAreRefused: a redirect, to another host or another port, is never followed (the
// prompt and the key would go to a server nobody configured); the error names the Location and
// the call is not retried.
func TestRedirectsAreRefused(t *testing.T) {
	var hits atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(completion("Answer: 42", "stop", true)))
	}))
	t.Cleanup(elsewhere.Close)
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusFound, http.StatusMovedPermanently} {
		var calls atomic.Int64
		redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			http.Redirect(w, r, elsewhere.URL+"/v1/chat/completions", code)
		}))
		t.Cleanup(redirector.Close)
		_, err := chat(testClient(t, redirector.URL, nil))
		if !errors.Is(err, ErrRedirect) || !strings.Contains(err.Error(), elsewhere.URL) || calls.Load() != 1 {
			t.Errorf("HTTP %d: %v after %d calls", code, err, calls.Load())
		}
	}
	if hits.Load() != 0 {
		t.Errorf("the redirect target was reached %d times", hits.Load())
	}
}

// TestOversizedRepliesAndImpossibleUsageAreRefused: a reply over MaxReplyBytes fails at once with
// its size named, and token counts outside [0, 2^40] never reach a run.
func TestOversizedRepliesAndImpossibleUsageAreRefused(t *testing.T) {
	huge := completion(strings.Repeat("x", MaxReplyBytes), "stop", true)
	f := newFake(t, func(int64, wireRequest) reply { return reply{200, huge, 0} })
	if _, err := chat(testClient(t, f.URL, nil)); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "larger than 8 MiB") || f.calls.Load() != 1 {
		t.Errorf("a %d-byte reply: %v after %d calls", len(huge), err, f.calls.Load())
	}
	for _, usage := range []string{`{"prompt_tokens": -999999999999, "completion_tokens": 7}`, `{"prompt_tokens": 5, "completion_tokens": 9999999999999999}`} {
		body := `{"choices": [{"message": {"content": "Answer: 4"}, "finish_reason": "stop"}], "usage": ` + usage + `}`
		f := newFake(t, func(int64, wireRequest) reply { return reply{200, body, 0} })
		if _, err := chat(testClient(t, f.URL, nil)); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "outside [0,") {
			t.Errorf("usage %s: %v", usage, err)
		}
	}
}
