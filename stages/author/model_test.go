package author

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/schema"
)

const testKey = "sk-test-0123456789"

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
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost || json.Unmarshal(body, &req) != nil {
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
		"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": content}}},
		"usage":   map[string]any{"prompt_tokens": 1234, "completion_tokens": 56},
	})
}

func modelConfig(t *testing.T, url string) *config.Config {
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Author.Backend, cfg.Author.BaseURL, cfg.Author.Model = "openai", url+"/v1/", "author-model"
	cfg.Author.APIKeyEnv = "EVOSTEER_TEST_AUTHOR_KEY"
	t.Setenv(cfg.Author.APIKeyEnv, testKey)
	return cfg
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
	if req.Model != "author-model" || req.Temperature != 0.3 || req.MaxTokens != 4096 || len(req.Messages) != 1 || req.Messages[0].Role != "user" {
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

// 5xx is retried once, 4xx fails at once, a reply without usage is an error; the key never
// appears in an error, even when the server echoes it.
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
		{"5xx twice", func(w http.ResponseWriter, _ chatRequest, _ int) { http.Error(w, "down", http.StatusBadGateway) }, 2, "502"},
		{"4xx echoing the key", func(w http.ResponseWriter, _ chatRequest, _ int) {
			http.Error(w, "bad key Bearer "+testKey, http.StatusBadRequest)
		}, 1, "[redacted]"},
		{"no usage", func(w http.ResponseWriter, _ chatRequest, _ int) {
			fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"null"}}]}`)
		}, 1, "no usage"},
		{"no choices", func(w http.ResponseWriter, _ chatRequest, _ int) { fmt.Fprint(w, `{"choices":[],"usage":{}}`) }, 1, "no choices"},
		{"bad output", func(w http.ResponseWriter, _ chatRequest, _ int) { reply(w, "I think you should check units.") }, 1, "not valid JSON"},
	} {
		s := newServer(t, c.answer)
		a, _ := New(modelConfig(t, s.URL))
		p, err := a.Propose(context.Background(), testWindow())
		if s.calls != c.calls {
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

// A server echoing the key at every offset around the 300-byte cut of its error body leaves no
// fragment of the key of 8 bytes or more in the error.
func TestModelAuthorKeyAcrossTheCut(t *testing.T) {
	var pad atomic.Int64
	s := newServer(t, func(w http.ResponseWriter, _ chatRequest, _ int) {
		http.Error(w, strings.Repeat("x", int(pad.Load()))+testKey, http.StatusBadGateway)
	})
	a, _ := New(modelConfig(t, s.URL))
	for off := range 300 + len(testKey) + 1 {
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
	cfg := modelConfig(t, s.URL)
	r := newRun(t, func(c *config.Config) {
		c.Author.Backend, c.Author.BaseURL, c.Author.Model, c.Author.APIKeyEnv = "openai", cfg.Author.BaseURL, cfg.Author.Model, cfg.Author.APIKeyEnv
	})
	a, err := New(r.Config)
	if err != nil {
		t.Fatal(err)
	}
	stepThrough(t, r, 2, a)
	rows := proposals(t, r, 2)
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
