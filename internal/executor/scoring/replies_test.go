package scoring_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor/openai"
	"github.com/evosteer/evosteer-go/internal/executor/scoring"
	"github.com/evosteer/evosteer-go/internal/executor/scoring/fakeengine"
)

// bigVLLM answers /v1/completions as vLLM does with prompt_logprobs 0, an entry for every
// position of every sequence in vLLM's shape (about 75 bytes each), the log-prob of sequence i at
// position j vllmBigLogProb(i, j); it counts the requests and the bytes of its last reply.
type bigVLLM struct {
	requests atomic.Int64
	replied  atomic.Int64
}

func vllmBigLogProb(i, j int) float64 { return -float64((31*i+j)%997)/100 - 0.0123456789 }

func (b *bigVLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.requests.Add(1)
	var req struct {
		Prompt [][]int `json:"prompt"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var out bytes.Buffer
	out.WriteString(`{"id":"cmpl-big","object":"text_completion","model":"fake-qwen","choices":[`)
	for i, seq := range req.Prompt {
		if i > 0 {
			out.WriteByte(',')
		}
		fmt.Fprintf(&out, `{"index":%d,"text":"a","logprobs":null,"finish_reason":"length","stop_reason":null,"prompt_logprobs":[null`, i)
		for j := 1; j < len(seq); j++ {
			fmt.Fprintf(&out, `,{"%d":{"logprob":%s,"rank":%d,"decoded_token":"tok%d"}}`,
				seq[j], strconv.FormatFloat(vllmBigLogProb(i, j), 'g', -1, 64), 1+j%151936, seq[j]%1000)
		}
		out.WriteString(`]}`)
	}
	out.WriteString(`],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	b.replied.Store(int64(out.Len()))
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out.Bytes())
}

// bigDecision is a decision of 9 candidates of 4 tokens after a 20,000-token prompt.
func bigDecision() (prompt []int, conts [][]int) {
	prompt = make([]int, 20000)
	for i := range prompt {
		prompt[i] = 5 + i%256
	}
	conts = make([][]int, 9)
	for i := range conts {
		conts[i] = []int{40 + i, 41, 42, 2}
	}
	return prompt, conts
}

// A decision of 9 candidates × 20,000 prompt tokens: vLLM's honest reply is over 8 MiB (the
// client's fixed cap) and is parsed, every continuation token's number exact.
func TestVLLMHonestReplyOver8MiBIsParsed(t *testing.T) {
	fake := &bigVLLM{}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	v := vllmClient(t, srv.URL, vllmModel.Name)
	prompt, conts := bigDecision()
	got, err := v.Continuations(context.Background(), prompt, conts)
	if err != nil {
		t.Fatalf("%d-byte reply (%.1f MiB): %v", fake.replied.Load(), float64(fake.replied.Load())/(1<<20), err)
	}
	if n := fake.replied.Load(); n <= openai.MaxReplyBytes {
		t.Fatalf("the reply is %d bytes, not over %d: the test proves nothing", n, openai.MaxReplyBytes)
	}
	t.Logf("parsed a %.1f MiB reply", float64(fake.replied.Load())/(1<<20))
	for i, c := range conts {
		want := make([]float64, len(c))
		for j := range c {
			want[j] = vllmBigLogProb(i, len(prompt)+j)
		}
		if !slices.Equal(got[i], want) {
			t.Fatalf("continuation %d: %v, want %v", i, got[i], want)
		}
	}
}

// endless answers a 200 whose body never ends: prompt_logprobs entries until the client hangs up.
func endless(requests *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, _ = fmt.Fprint(w, `{"choices":[{"index":0,"prompt_logprobs":[null`)
		chunk := []byte(strings.Repeat(`,{"7":{"logprob":-1.25,"rank":3,"decoded_token":"x"}}`, 1000))
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
}

// A reply longer than the request's bound, an endless one, is refused as malformed, at once and
// without a retry, naming the request and the bound: the floor of 8 MiB for a small request, the
// positions' bound for a large one.
func TestVLLMReplyOverItsBoundIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name         string
		prompt, cont int
		want         string
	}{
		{"small request", 4, 2, "larger than 8 MiB, this request's bound: 9 sequences, 54 prompt positions × 256 bytes + 1 MiB, raised to the floor of 8 MiB"},
		{"large request", 5000, 2, "larger than 12.0 MiB (12573184 bytes), this request's bound: 9 sequences, 45018 prompt positions × 256 bytes + 1 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int64
			srv := httptest.NewServer(endless(&requests))
			t.Cleanup(srv.Close)
			v := vllmClient(t, srv.URL, vllmModel.Name)
			prompt := make([]int, tc.prompt)
			for i := range prompt {
				prompt[i] = 7
			}
			conts := make([][]int, 9)
			for i := range conts {
				conts[i] = make([]int, tc.cont)
			}
			_, err := v.Continuations(context.Background(), prompt, conts)
			if err == nil {
				t.Fatal("an endless reply was accepted")
			}
			t.Log(err)
			if !errors.Is(err, openai.ErrMalformed) || !strings.Contains(err.Error(), "vllm completions: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want a malformed reply of vllm completions saying %q", err, tc.want)
			}
			if n := requests.Load(); n != 1 {
				t.Errorf("%d requests: an oversized reply is not retried", n)
			}
		})
	}
}

// sizeWriter counts the bytes of the replies it writes.
type sizeWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w sizeWriter) Write(b []byte) (int, error) {
	w.n.Add(int64(len(b)))
	return w.ResponseWriter.Write(b)
}

// SGLang's reply to the same decision (9 candidates × 20,000 prompt tokens) holds input log-probs
// from logprob_start_len only, the candidates' few tokens: a few KiB, far below the 8 MiB cap.
func TestSGLangReplyDoesNotGrowWithThePrompt(t *testing.T) {
	m := fakeengine.Model{Name: "fake/qwen"}
	fake := fakeengine.NewSGLang(m, fakeengine.SGLangOptions{})
	var size atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		size.Store(0)
		fake.ServeHTTP(sizeWriter{w, &size}, r)
	}))
	t.Cleanup(srv.Close)
	e := scoring.NewSGLang(testClient(t, srv.URL, m.Name))
	prompt, conts := bigDecision()
	got, err := e.Continuations(context.Background(), prompt, conts)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range conts {
		if want := m.Continuation(prompt, c); !slices.Equal(got[i], want) {
			t.Fatalf("continuation %d: %v, want %v", i, got[i], want)
		}
	}
	t.Logf("the /generate reply: %d bytes", size.Load())
	if size.Load() > 64<<10 {
		t.Fatalf("the /generate reply is %d bytes: it grows with the prompt", size.Load())
	}
}

// A server without GET /get_model_info (404) passes the preflight when /v1/models lists the
// configured model and /generate returns input log-probs; it fails, in one line saying both,
// when /v1/models does not list it.
func TestSGLangPreflightWithoutModelInfo(t *testing.T) {
	m := fakeengine.Model{Name: "fake/qwen"}
	opts := fakeengine.SGLangOptions{NoModelInfo: true}
	e, _, _ := newFakeSGLang(t, m, opts, m.Name)
	if err := e.Preflight(context.Background()); err != nil {
		t.Fatalf("a server with /v1/models and no /get_model_info: %v", err)
	}
	e, _, url := newFakeSGLang(t, m, opts, "other/model")
	err := e.Preflight(context.Background())
	want := "sglang preflight " + url + `: GET /get_model_info answered 404, and /v1/models lists ["fake/qwen"], not the configured model "other/model"`
	if err == nil || err.Error() != want {
		t.Fatalf("Preflight error\n%v\nwant\n%s", err, want)
	}
	e, _, _ = newFakeSGLang(t, m, fakeengine.SGLangOptions{NoModelInfo: true, Fault: fakeengine.SGLangNoLogprobs}, m.Name)
	if err := e.Preflight(context.Background()); err == nil || !strings.Contains(err.Error(), "a 1-token scoring request") {
		t.Fatalf("no /get_model_info and no input log-probs: %v", err)
	}
}

// Goroutines asking at once for the same texts the scorer has not seen (a rollout's episodes at
// their first decision) send one tokenize request per distinct text, counted on the server.
func TestScorerSharesConcurrentTokenizeMisses(t *testing.T) {
	m := fakeengine.Model{Name: "fake/qwen"}
	e, fake, _ := newFakeSGLang(t, m, fakeengine.SGLangOptions{TokenizeDelay: 30 * time.Millisecond}, m.Name)
	s, err := scoring.NewScorer(context.Background(), e, scoring.Qwen3, 64)
	if err != nil {
		t.Fatal(err)
	}
	actions := []string{`{"kind":"STOP"}`, `{"kind":"ADD_AGENT","role":"solver"}`, `{"kind":"ADD_AGENT","role":"critic"}`, `{"kind":"RERUN"}`}
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			order := slices.Clone(actions)
			if g%2 == 1 {
				slices.Reverse(order)
			}
			if _, err := s.Count(context.Background(), "system", "user", order); err != nil {
				errs <- err
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, text := range fake.Tokenized() {
		counts[text]++
	}
	for text, n := range counts {
		if n != 1 {
			t.Errorf("%d tokenize requests for %q, want 1", n, text)
		}
	}
	if want := 1 + 1 + len(actions); len(fake.Tokenized()) != want { // the end of turn, the prompt, the actions
		t.Errorf("%d tokenize requests, want %d: %v", len(fake.Tokenized()), want, counts)
	}
}

// The rollout's preflight against a port where nothing listens ends at its deadline and keeps the
// cause: "connection refused", not only "context deadline exceeded".
func TestPreflightKeepsTheCause(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	for _, dialect := range []string{"sglang", "vllm"} {
		t.Run(dialect, func(t *testing.T) {
			sr := &config.ServedReference{Dialect: dialect, BaseURL: url, Model: "m", Template: "qwen3", MaxConcurrency: 1,
				TimeoutSeconds: 5, OutageSeconds: 600, CacheDecisions: 8}
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			_, err := scoring.FromConfig(ctx, sr)
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			for _, w := range []string{url, "context deadline exceeded", "connection refused"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%v is not context.DeadlineExceeded", err)
			}
		})
	}
}
