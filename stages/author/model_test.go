package author

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/redact"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/schema"
)

const testKey = "sk-test-0123456789"

// chatRequest is what the test server reads of a request.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Temperature float64 `json:"temperature"`
	MaxTokens   int     `json:"max_tokens"`
	Seed        *int64  `json:"seed"`
	// ChatTemplateKwargs is the thinking switch (disable_thinking).
	ChatTemplateKwargs map[string]bool            `json:"chat_template_kwargs"`
	raw                map[string]json.RawMessage // every top-level field as sent
}

// server answers chat completions with answer(request) and counts calls.
type server struct {
	*httptest.Server
	mu    sync.Mutex
	calls int
	reqs  []chatRequest
}

func newServer(t *testing.T, answer func(w http.ResponseWriter, req chatRequest, call int)) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req chatRequest
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost || json.Unmarshal(body, &req) != nil || json.Unmarshal(body, &req.raw) != nil {
			http.Error(w, "bad request "+r.URL.Path, http.StatusBadRequest)
			return
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
			http.Error(w, "unauthorised: got "+got, http.StatusUnauthorized)
			return
		}
		s.mu.Lock()
		s.calls++
		call := s.calls
		s.reqs = append(s.reqs, req)
		s.mu.Unlock()
		answer(w, req, call)
	}))
	t.Cleanup(s.Close)
	return s
}

func reply(w http.ResponseWriter, content string) {
	json.NewEncoder(w).Encode(map[string]any{
		"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": 1234, "completion_tokens": 56},
	})
}

// keyFragment returns a run of testKey of redact.MinFragment bytes found in s, or "".
func keyFragment(s string) string {
	for j := 0; j+redact.MinFragment <= len(testKey); j++ {
		if strings.Contains(s, testKey[j:j+redact.MinFragment]) {
			return testKey[j : j+redact.MinFragment]
		}
	}
	return ""
}

func modelConfig(t *testing.T, url string) *config.Config {
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Author.Backend, cfg.Author.BaseURL, cfg.Author.Model = "openai", url+"/v1/", "author-model"
	cfg.Author.APIKeyEnv = "EVOSTEER_TEST_AUTHOR_KEY"
	// Retries pause milliseconds, and a server failing for a second has outlasted the outage.
	cfg.Author.BackoffSeconds, cfg.Author.BackoffMaxSeconds, cfg.Author.OutageSeconds = 0.001, 0.01, 1
	t.Setenv(cfg.Author.APIKeyEnv, testKey)
	return cfg
}

// authorAgainst runs the openai author against the server at url through steps 1 and 2 of a new
// run, one window at a time (author.max_concurrency 1: the server's n-th call is the n-th
// window's, retries included), and returns the run and step 2's proposals.
func authorAgainst(t *testing.T, url string) (*rundir.Folder, []schema.ProposalRow) {
	t.Helper()
	return authorAgainstWith(t, url, func(c *config.Config) { c.Author.MaxConcurrency = 1 })
}

// authorAgainstWith is authorAgainst with the configuration edited by edit after the model
// author's settings are in, and no train tasks for the families untrained names.
func authorAgainstWith(t *testing.T, url string, edit func(*config.Config), untrained ...string) (*rundir.Folder, []schema.ProposalRow) {
	t.Helper()
	cfg := modelConfig(t, url)
	r := newRunTasks(t, func(c *config.Config) {
		start, families := c.Author.StartStep, c.Author.StartFamilies
		c.Author = cfg.Author
		c.Author.StartStep, c.Author.StartFamilies = start, families
		if edit != nil {
			edit(c)
		}
	}, untrained...)
	a, err := New(r.Config)
	if err != nil {
		t.Fatal(err)
	}
	stepThrough(t, r, 2, a)
	return r, proposals(t, r, 2)
}

func testWindow() Window {
	out := "n0"
	return Window{Step: 9, Family: "medqa", Seed: 42,
		Library: []skills.Skill{{Status: skills.Retired, Record: skills.Record{Name: "Old idea", Trigger: "Use when old."}}},
		Stats:   FamilyStats{Rollouts: 4, DistinctTasks: 2, Successes: 1, MixedTasks: 1, MeanScore: 0.25},
		Examples: []Example{{Episode: schema.EpisodeRow{EpisodeID: "9/medqa/0001/current/0", Reward: 0, Stopped: true, OutputNode: &out, OutputText: "Answer: B"},
			Task: "Which drug? A. x B. y", Actions: []string{`{"kind":"STOP"}`},
			Nodes: []Node{{ID: "n0", Role: "solver", Skills: []string{}, Status: "failed", FailureKind: "truncated", Output: "Answer: B"}}}},
	}
}

// The request: one user message holding the instruction, "DATA" and the canonical data; the
// configured model, temperature and token limit; the key only in the Authorization header.
func TestModelAuthorRequest(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, _ chatRequest, _ int) { reply(w, "```json\n"+goodReply+"\n```") })
	a, err := New(modelConfig(t, s.URL))
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Propose(context.Background(), testWindow())
	if err != nil {
		t.Fatal(err)
	}
	if p.Record == nil || p.Record.Name != "Eliminate options" || p.TokensIn != 1234 || p.TokensOut != 56 || !strings.Contains(p.Raw, "```json") {
		t.Errorf("proposal %+v", p)
	}
	req := s.reqs[0]
	if req.Model != "author-model" || req.Temperature != 0.3 || req.MaxTokens != 4096 || req.Seed == nil || *req.Seed != 42 || len(req.Messages) != 1 || req.Messages[0].Role != "user" {
		t.Errorf("request %+v", req)
	}
	text := req.Messages[0].Content
	head, data, ok := strings.Cut(text, "\n\nDATA\n")
	if !ok || head != instruction {
		t.Fatalf("prompt layout:\n%.300s", text)
	}
	var d struct {
		Family  string `json:"family"`
		Library []struct {
			Status, Name, Trigger string
		} `json:"library_skills"`
		Stats    map[string]float64 `json:"family_statistics"`
		Examples []map[string]any   `json:"examples"`
	}
	if err := json.Unmarshal([]byte(data), &d); err != nil {
		t.Fatal(err)
	}
	if d.Family != "medqa" || len(d.Library) != 1 || d.Library[0].Status != "retired" || d.Stats["success_rate"] != 0.25 ||
		d.Stats["final_node_hit_output_token_limit"] != 1 || len(d.Examples) != 1 || d.Examples[0]["example"] != "e1" || d.Examples[0]["outcome"] != "failure" {
		t.Errorf("data %+v", d)
	}
	if strings.Contains(text, testKey) {
		t.Error("the key is in the prompt")
	}
}

// The executor client's retry rules: 5xx, 429, 408 and dropped connections are retried with
// backoff until the outage tolerance (author.outage_seconds, here 1 s) is spent; other 4xx fail
// at once, as do a reply without usage or over 8 MiB; the key never appears in an error, even
// when the server echoes it. calls -1 is "more than two".
func TestModelAuthorErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer func(w http.ResponseWriter, req chatRequest, call int)
		calls  int
		err    string
	}{
		{"retry then ok", func(w http.ResponseWriter, _ chatRequest, call int) {
			if call == 1 {
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			reply(w, goodReply)
		}, 2, ""},
		{"5xx until the outage tolerance", func(w http.ResponseWriter, _ chatRequest, _ int) { http.Error(w, "down", http.StatusBadGateway) }, -1, "outage tolerance 1s"},
		{"429 then ok", func(w http.ResponseWriter, _ chatRequest, call int) {
			if call == 1 {
				http.Error(w, "slow down", http.StatusTooManyRequests)
				return
			}
			reply(w, goodReply)
		}, 2, ""},
		{"408 then ok", func(w http.ResponseWriter, _ chatRequest, call int) {
			if call == 1 {
				http.Error(w, "timeout", http.StatusRequestTimeout)
				return
			}
			reply(w, goodReply)
		}, 2, ""},
		{"dropped connection then ok", func(w http.ResponseWriter, _ chatRequest, call int) {
			if call == 1 {
				conn, _, _ := w.(http.Hijacker).Hijack()
				conn.Close()
				return
			}
			reply(w, goodReply)
		}, 2, ""},
		{"400 not retried", func(w http.ResponseWriter, _ chatRequest, _ int) {
			http.Error(w, "context too long", http.StatusBadRequest)
		}, 1, "HTTP 400: context too long"},
		{"404 not retried", func(w http.ResponseWriter, _ chatRequest, _ int) { http.Error(w, "no such model", http.StatusNotFound) }, 1, "HTTP 404"},
		{"4xx echoing the key", func(w http.ResponseWriter, _ chatRequest, _ int) {
			http.Error(w, "bad key Bearer "+testKey, http.StatusBadRequest)
		}, 1, "[redacted]"},
		{"no usage", func(w http.ResponseWriter, _ chatRequest, _ int) {
			fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"null"},"finish_reason":"stop"}]}`)
		}, 1, "no usage"},
		{"no choices", func(w http.ResponseWriter, _ chatRequest, _ int) { fmt.Fprint(w, `{"choices":[],"usage":{}}`) }, 1, "no choice"},
		{"over 8 MiB", func(w http.ResponseWriter, _ chatRequest, _ int) { reply(w, strings.Repeat("x", 8<<20)) }, 1, "larger than 8 MiB"},
		{"bad output", func(w http.ResponseWriter, _ chatRequest, _ int) { reply(w, "I think you should check units.") }, 1, "not valid JSON"},
	} {
		s := newServer(t, c.answer)
		a, _ := New(modelConfig(t, s.URL))
		p, err := a.Propose(context.Background(), testWindow())
		if s.calls != c.calls && (c.calls != -1 || s.calls <= 2) {
			t.Errorf("%s: %d calls, want %d", c.name, s.calls, c.calls)
		}
		switch {
		case c.err == "" && (err != nil || p.Record == nil):
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want %q", c.name, err, c.err)
		case err != nil && strings.Contains(err.Error(), testKey):
			t.Errorf("%s: the key is in the error: %v", c.name, err)
		}
	}
}

// A server echoing the key at every offset around the 500-byte cut of its error body leaves no
// fragment of the key of 8 bytes or more in the error.
func TestModelAuthorKeyAcrossTheCut(t *testing.T) {
	var pad atomic.Int64
	s := newServer(t, func(w http.ResponseWriter, _ chatRequest, _ int) {
		http.Error(w, strings.Repeat("x", int(pad.Load()))+testKey, http.StatusBadRequest)
	})
	a, _ := New(modelConfig(t, s.URL))
	for off := 400; off <= 500+len(testKey); off++ {
		pad.Store(int64(off))
		_, err := a.Propose(context.Background(), testWindow())
		if err == nil {
			t.Fatalf("offset %d: no error", off)
		}
		for j := 0; j+8 <= len(testKey); j++ {
			if strings.Contains(err.Error(), testKey[j:j+8]) {
				t.Fatalf("offset %d: %q of the key in %v", off, testKey[j:j+8], err)
			}
		}
	}
}

// Long texts are cut, and the cut halved, until the prompt fits in 64,000 bytes.
func TestPromptFits(t *testing.T) {
	w := testWindow()
	big := strings.Repeat("long reasoning ", 2000)
	for i := range 12 {
		x := w.Examples[0]
		x.Episode.OutputText, x.Task = big, fmt.Sprintf("task %d %s", i, big)
		x.Nodes = []Node{{ID: "n0", Output: big}, {ID: "n1", Output: big}, {ID: "n2", Output: big}}
		w.Examples = append(w.Examples, x)
	}
	p, err := buildPrompt(w)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) > maxPromptBytes || !strings.Contains(p, "characters omitted]") || len(p) < maxPromptBytes/4 {
		t.Errorf("prompt of %d bytes", len(p))
	}
	w.Examples[0].Task = strings.Repeat("x", 200000) // cut like the others: still fits
	if _, err := buildPrompt(w); err != nil {
		t.Error(err)
	}
}

// The model author through the stage: the first window's reply quotes a shown task prompt
// (answer leakage: author_error, raw reply kept), the second is null (no_proposal), the third
// a valid skill (candidate); usage is logged; the key is in no output file.
func TestStageModelAuthor(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, req chatRequest, call int) {
		switch call {
		case 1:
			_, data, _ := strings.Cut(req.Messages[0].Content, "\nDATA\n")
			var d struct {
				Examples []struct{ Task string } `json:"examples"`
			}
			json.Unmarshal([]byte(data), &d)
			// Quote the first example's task across plan steps, each within the size limits.
			var plan []string
			for _, word := range strings.Fields(d.Examples[0].Task) {
				if k := len(plan) - 1; k >= 0 && len(plan[k])+len(word) < 200 {
					plan[k] += " " + word
				} else {
					plan = append(plan, word)
				}
			}
			leak, _ := json.Marshal(map[string]any{"name": "Quote", "description": "d", "trigger": "Use when t.", "plan": plan, "pitfall": "p", "constraint": "c"})
			reply(w, string(leak))
		case 2:
			reply(w, "null")
		default:
			reply(w, goodReply)
		}
	})
	r, rows := authorAgainst(t, s.URL)
	if len(rows) != 3 {
		t.Fatalf("%d windows", len(rows))
	}
	if rows[0].Status != StatusError || rows[0].Reason == nil || !strings.Contains(*rows[0].Reason, "answer leakage") || rows[0].RawOutput == nil || rows[0].SkillID == nil {
		t.Errorf("leaking window %+v", rows[0])
	}
	if rows[1].Status != StatusNone || rows[1].SkillID != nil || *rows[1].RawOutput != "null" {
		t.Errorf("null window %+v", rows[1])
	}
	if rows[2].Status != StatusProposed || rows[2].Backend != "openai" || rows[2].TokensIn != 1234 || *rows[2].Name != "Eliminate options" {
		t.Errorf("accepted window %+v", rows[2])
	}
	// Examples carried actions and nodes from the decisions and executions files.
	if !strings.Contains(s.reqs[2].Messages[0].Content, `"actions":["{\"kind\":\"ADD_AGENT\",\"role\":\"solver\"}","{\"kind\":\"STOP\"}"]`) ||
		!strings.Contains(s.reqs[2].Messages[0].Content, `"node":"n0"`) {
		t.Errorf("examples lack actions or nodes:\n%.2000s", s.reqs[2].Messages[0].Content)
	}
	lib, err := skills.LoadLibrary(r, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(lib.Skills()) != 1 || lib.Skills()[0].Family != rows[2].Family {
		t.Errorf("library %+v", lib.Skills())
	}
	files, _ := filepath.Glob(filepath.Join(r.StageDir(2, layout.Author), "*"))
	for _, f := range files {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), testKey) {
			t.Errorf("%s holds the API key", f)
		}
	}
}

// TestModelAuthorEchoedKeyIsNeverStored: a server that echoes the Authorization header, inside
// a skill it proposes, inside a reply that is no skill, in an error body and in a 5xx that is
// retried, leaves no fragment of the key in the proposals, the library, the printed summary or
// the log.
func TestModelAuthorEchoedKeyIsNeverStored(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, _ chatRequest, call int) {
		switch call {
		case 1:
			reply(w, strings.Replace(goodReply, "rule out.", "rule out, as Bearer "+testKey+" says.", 1))
		case 2:
			reply(w, "I cannot help; your key is "+testKey[:12]+" and "+testKey[6:])
		case 3:
			http.Error(w, "overloaded for "+testKey, http.StatusServiceUnavailable)
		case 4:
			http.Error(w, `{"error": {"message": "key `+testKey+` is not allowed"}}`, http.StatusForbidden)
		default:
			reply(w, "null")
		}
	})
	var logged strings.Builder
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	r, rows := authorAgainst(t, s.URL)
	if len(rows) != 3 || rows[0].Status != StatusProposed || rows[0].Description == nil || !strings.Contains(*rows[0].Description, redact.Marker) ||
		rows[1].Status != StatusError || rows[1].RawOutput == nil || rows[2].Status != StatusError || rows[2].Reason == nil ||
		!strings.Contains(*rows[2].Reason, "HTTP 403") || !strings.Contains(logged.String(), "retrying") {
		t.Fatalf("windows %s", mustJSON(t, rows))
	}
	lib, err := skills.LoadLibrary(r, 3)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Summarize(context.Background(), r, 2)
	if err != nil {
		t.Fatal(err)
	}
	var printed strings.Builder
	if err := sum.Write(&printed); err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"proposals.arrow": mustJSON(t, rows), "skills.arrow": mustJSON(t, lib.Skills()),
		"the summary": printed.String(), "the log": logged.String()} {
		if frag := keyFragment(text); frag != "" {
			t.Errorf("%s holds %q of the key:\n%s", what, frag, text)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestModelAuthorRefusesRedirects: a redirect is never followed (the prompt and the key would go
// to a server nobody configured, whose skill would be kept); the error names the Location and
// the call is not retried.
func TestModelAuthorRefusesRedirects(t *testing.T) {
	var hits atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		reply(w, goodReply)
	}))
	t.Cleanup(elsewhere.Close)
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
		s := newServer(t, func(w http.ResponseWriter, _ chatRequest, _ int) {
			w.Header().Set("Location", elsewhere.URL+"/v1/chat/completions")
			w.WriteHeader(code)
		})
		a, err := New(modelConfig(t, s.URL))
		if err != nil {
			t.Fatal(err)
		}
		p, err := a.Propose(context.Background(), testWindow())
		if err == nil || !strings.Contains(err.Error(), elsewhere.URL) || !strings.Contains(err.Error(), "author.base_url") || p.Record != nil || s.calls != 1 {
			t.Errorf("HTTP %d: %v, %+v after %d calls", code, err, p, s.calls)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("the redirect target was reached %d times", hits.Load())
	}
}

// TestModelAuthorImpossibleUsageIsAFailedProposal: a token count outside [0, 2^40] is a
// malformed reply: that window is an author_error, no count reaches the proposals, and the
// stage goes on to the next window.
func TestModelAuthorImpossibleUsageIsAFailedProposal(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, _ chatRequest, call int) {
		usage := map[int]string{1: `"prompt_tokens": -5, "completion_tokens": 56`, 2: `"prompt_tokens": 10, "completion_tokens": 2199023255553`}[call]
		if usage == "" {
			reply(w, goodReply)
			return
		}
		fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":"null"},"finish_reason":"stop"}],"usage":{%s}}`, usage)
	})
	_, rows := authorAgainst(t, s.URL)
	if len(rows) != 3 {
		t.Fatalf("%d windows", len(rows))
	}
	for i, field := range []string{"usage.prompt_tokens is -5", "usage.completion_tokens is 2199023255553"} {
		if row := rows[i]; row.Status != StatusError || row.Reason == nil || !strings.Contains(*row.Reason, field) || row.TokensIn != 0 || row.TokensOut != 0 {
			t.Errorf("window %d: %s", i+1, mustJSON(t, row))
		}
	}
	if rows[2].Status != StatusProposed {
		t.Errorf("window 3: %s", mustJSON(t, rows[2]))
	}
}

// An author server that omits finish_reason (some OpenAI-compatible servers do) gives a proposal
// like any other: the content is the reply.
func TestModelAuthorReplyWithoutFinishReason(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, _ chatRequest, _ int) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": goodReply}}},
			"usage":   map[string]any{"prompt_tokens": 1234, "completion_tokens": 56},
		})
	})
	a, err := New(modelConfig(t, s.URL))
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Propose(context.Background(), testWindow())
	if err != nil {
		t.Fatal(err)
	}
	if p.Record == nil || p.Record.Name != "Eliminate options" || p.TokensIn != 1234 || p.TokensOut != 56 {
		t.Errorf("proposal %+v", p)
	}
}
