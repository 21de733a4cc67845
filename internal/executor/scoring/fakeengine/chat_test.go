package fakeengine_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/executor/openai"
	"github.com/evosteer/evosteer-go/internal/executor/scoring"
	"github.com/evosteer/evosteer-go/internal/executor/scoring/fakeengine"
)

// lockedBuffer is a log writer the test can read while servers write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) lines(t *testing.T) []fakeengine.LogLine {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []fakeengine.LogLine
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		var l fakeengine.LogLine
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// servers are the fake engine in both dialects, each logging to its own buffer.
func servers(t *testing.T, m fakeengine.Model) map[string]struct {
	url string
	log *lockedBuffer
} {
	out := map[string]struct {
		url string
		log *lockedBuffer
	}{}
	for _, dialect := range []string{"sglang", "vllm"} {
		buf := &lockedBuffer{}
		var h http.Handler
		if dialect == "sglang" {
			h = fakeengine.NewSGLang(m, fakeengine.SGLangOptions{Log: fakeengine.NewRequestLog(buf)})
		} else {
			h = fakeengine.NewVLLM(m, fakeengine.VLLMOptions{Log: fakeengine.NewRequestLog(buf)})
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		out[dialect] = struct {
			url string
			log *lockedBuffer
		}{srv.URL, buf}
	}
	return out
}

func client(t *testing.T, url, model string) *openai.Client {
	t.Helper()
	c, err := openai.NewClient(openai.ClientConfig{BaseURL: url, Model: model, MaxConcurrency: 4, Timeout: 10 * time.Second,
		Outage: time.Second, BackoffInitial: time.Millisecond, BackoffMax: 10 * time.Millisecond, MaxAttempts: 2,
		BaseURLSetting: "test.base_url", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const medqa = "Role: Answer the task.\n\nTask:\nAnswer the following medical question by choosing one option.\n" +
	"Question: Which vitamin deficiency causes scurvy?\nOptions:\nA. Vitamin A\nB. Vitamin B12\nC. Vitamin C\nD. Vitamin D\n" +
	"End your reply with 'Answer: <letter>'.\n\nPerform your role using the task. Return your result."

func TestChatCompletionsThroughTheClient(t *testing.T) {
	m := fakeengine.Model{Name: "fake/qwen"}
	for dialect, s := range servers(t, m) {
		t.Run(dialect, func(t *testing.T) {
			c := client(t, s.url+"/v1", m.Name)
			ctx := context.Background()
			seed := int64(7)
			req := openai.ChatRequest{Messages: []openai.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: medqa}},
				MaxTokens: 64, Temperature: 0.3, Seed: &seed}
			first, err := c.Chat(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			letter, ok := strings.CutPrefix(first.Text, "Answer: ")
			if !ok || !slices.Contains([]string{"A", "B", "C", "D"}, letter) || first.FinishReason != "stop" {
				t.Fatalf("reply %q, finish %q: want Answer: <one of A-D>, stop", first.Text, first.FinishReason)
			}
			want := openai.Usage{PromptTokens: int64(len(m.Tokenize("Be brief." + medqa))), CompletionTokens: int64(len(m.Tokenize(first.Text)))}
			if first.Usage != want {
				t.Fatalf("usage %+v, want %+v (the model's tokens of the contents and of the reply)", first.Usage, want)
			}
			again, err := c.Chat(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if again != first {
				t.Fatalf("the same request answered %+v, then %+v", first, again)
			}
			// The answer depends on the seed: over a few seeds more than one option comes up.
			seen := map[string]bool{}
			for s := range int64(16) {
				req.Seed = &s
				r, err := c.Chat(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				seen[r.Text] = true
			}
			if len(seen) < 2 {
				t.Fatalf("16 seeds gave the one reply %v", seen)
			}
			req.MaxTokens = 3
			cut, err := c.Chat(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if !cut.Truncated() || cut.Text != "Ans" || cut.Usage.CompletionTokens != 3 {
				t.Fatalf("max_tokens 3: %+v, want the reply cut to 3 tokens with finish_reason length", cut)
			}

			_, err = client(t, s.url+"/v1", "other/model").Chat(ctx, req)
			var he *openai.HTTPError
			if !errors.As(err, &he) || he.Status != http.StatusNotFound || !strings.Contains(he.Message, "The model `other/model` does not exist.") {
				t.Fatalf("another model: %v, want HTTP 404 naming the model", err)
			}
			lines := s.log.lines(t)
			if len(lines) != 19 || slices.ContainsFunc(lines, func(l fakeengine.LogLine) bool {
				return l.Kind != "chat" || l.Dialect != "" || l.BilledIn <= 0 || l.BilledOut <= 0
			}) {
				t.Fatalf("log %+v, want 19 chat lines with their bill (the refused request is not logged)", lines)
			}
			if l := lines[len(lines)-1]; int64(l.BilledIn) != cut.Usage.PromptTokens || l.BilledOut != 3 {
				t.Fatalf("the cut reply's line %+v, its usage %+v", l, cut.Usage)
			}
		})
	}
}

func TestChatCandidates(t *testing.T) {
	for _, c := range []struct {
		name, user string
		want       []string
	}{
		{"options", medqa, []string{"A", "B", "C", "D"}},
		{"integers", "Task:\nSolve the following competition math problem. The answer is an integer from 0 to 999. " +
			"Put the final answer in \\boxed{}.\nFind the least of 12, 7 and 30.\n\nPerform your role using the task.",
			[]string{"12", "7", "30"}},
		{"one-line math", "Find the integer 4 + 5.", []string{"4", "5"}},
		{"words", "Role: Find it.\n\nTask:\nAnswer the question. Give a short answer only.\nQuestion: Is Jupiter larger than Mars?" +
			"\n\nInput from agent n1 (text):\nAnswer: Venus\n\nPerform your role using the task and the inputs from other agents.",
			[]string{"Jupiter", "Mars", "yes", "no"}},
		{"nothing", "hello", []string{"yes", "no"}},
	} {
		if got := fakeengine.ChatCandidates(c.user); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestRequestLogNamesThePromptsScored checks that each scoring request is logged once per
// prompt with the sha256 of the text the scorer had tokenised (scoring.ChatTemplate's
// PromptSHA256, the prompts table's prompt_sha256), in both dialects, under concurrent requests.
func TestRequestLogNamesThePromptsScored(t *testing.T) {
	m := fakeengine.Model{Name: "fake/qwen"}
	ctx := context.Background()
	// Candidates sharing their first tokens: vLLM's sequences carry no prompt boundary.
	candidates := []string{`{"op":"answer"}`, `{"op":"ask"}`, `{"op":"stop"}`}
	for dialect, s := range servers(t, m) {
		t.Run(dialect, func(t *testing.T) {
			c := client(t, s.url, m.Name)
			var engine scoring.Engine = scoring.NewSGLang(c)
			if dialect == "vllm" {
				var err error
				if engine, err = scoring.NewVLLM(c); err != nil {
					t.Fatal(err)
				}
			}
			if err := engine.Preflight(ctx); err != nil {
				t.Fatal(err)
			}
			scorer, err := scoring.NewScorer(ctx, engine, scoring.Qwen3, 64)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for i := range 16 {
				user := fmt.Sprintf("decision %d of an episode", i%8) // each prompt twice, maybe from the cache
				wg.Go(func() {
					scored, err := scorer.Score(ctx, "system", user, candidates)
					if err != nil {
						errs <- err
						return
					}
					if scored.Requests == 1 {
						mu.Lock()
						want[scoring.Qwen3.PromptSHA256("system", user)+fmt.Sprint(" ", scored.PromptTokens)]++
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			got := map[string]int{}
			lines := s.log.lines(t)
			for i, l := range lines {
				if i == 0 { // the preflight's one-item request
					if l.Kind != "score" || l.Dialect != dialect || l.Items != 1 {
						t.Fatalf("first line %+v, want the preflight's 1-item scoring request", l)
					}
					continue
				}
				if l.Kind != "score" || l.Dialect != dialect || l.Items != len(candidates) {
					t.Fatalf("line %d: %+v, want a %s scoring request of %d items", i, l, dialect, len(candidates))
				}
				got[l.PromptSHA256+fmt.Sprint(" ", l.PromptTokens)]++
			}
			if !maps.Equal(got, want) {
				t.Fatalf("logged prompts %v, want those of the decisions that sent a request %v", got, want)
			}
		})
	}
}

func TestDecodeInvertsTokenize(t *testing.T) {
	m := fakeengine.Model{}
	for _, s := range []string{"", "plain", "<|im_start|>user\nhé<|im_end|>\n<think>\n\n</think>\n\n", "<|im_end", "\x00\xff"} {
		if got := m.Decode(m.Tokenize(s)); got != s {
			t.Errorf("Decode(Tokenize(%q)) = %q", s, got)
		}
	}
}
