package scoring_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/executor/scoring"
	"github.com/evosteer/evosteer-go/internal/executor/scoring/fakeengine"
)

// BenchmarkScorer scores decisions of fresh prompts through the fake SGLang server over loopback
// HTTP and reports decisions/s, scoring requests and the tokens sent per decision (prompt plus
// candidate paths). -short runs a tiny size, so the benchmark cannot rot.
func BenchmarkScorer(b *testing.B) {
	ctx := context.Background()
	m := fakeengine.Model{Name: "fake/qwen"}
	fake := fakeengine.NewSGLang(m, fakeengine.SGLangOptions{})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	s, err := scoring.NewScorer(ctx, scoring.NewSGLang(testClient(b, srv.URL, m.Name)), scoring.Qwen3, 1024)
	if err != nil {
		b.Fatal(err)
	}
	userBytes := 2000
	if testing.Short() {
		userBytes = 100
	}
	r := rand.New(rand.NewPCG(5, 6))
	actions := randomActions(r)
	filler := make([]byte, userBytes)
	for i := range filler {
		filler[i] = 'a' + byte(i%26)
	}
	sent := 0
	b.ResetTimer()
	for i := range b.N {
		got, err := s.Score(ctx, "system", fmt.Sprintf(`{"decision":%d,"state":%q}`, i, filler), actions)
		if err != nil {
			b.Fatal(err)
		}
		sent += got.TokensSent
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	b.ReportMetric(float64(fake.Generates())/float64(b.N), "requests/decision")
	b.ReportMetric(float64(sent)/float64(b.N), "tokens-sent/decision")
}

// canned answers each path with the reply the server behind it gave the path's first request,
// reading and discarding every later request's body: a scoring request then costs the server
// next to nothing, and the process's CPU is the client's (encoding the request, sending it,
// reading and decoding the reply).
type canned struct {
	next    http.Handler
	mu      sync.Mutex
	replies map[string][]byte
}

func (c *canned) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	raw, ok := c.replies[r.URL.Path]
	c.mu.Unlock()
	if ok {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(raw))) // as vLLM's and SGLang's servers send it
		_, _ = w.Write(raw)
		return
	}
	rec := httptest.NewRecorder()
	c.next.ServeHTTP(rec, r)
	if rec.Code == http.StatusOK {
		c.mu.Lock()
		c.replies[r.URL.Path] = rec.Body.Bytes()
		c.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// scoredDecision is the benchmarks' decision: 16 candidates of 8–15 tokens (a controller
// action's JSON and its end of turn) after a 7,000-token prompt, about 112,000 token ids sent
// (-short: 3 candidates after 50 tokens).
func scoredDecision(r *rand.Rand) (prompt []int, conts [][]int) {
	n, k := 7000, 16
	if testing.Short() {
		n, k = 50, 3
	}
	prompt = make([]int, n)
	for i := range prompt {
		prompt[i] = r.IntN(fakeengine.VocabSize)
	}
	conts = make([][]int, k)
	for i := range conts {
		conts[i] = make([]int, 8+r.IntN(8))
		for j := range conts[i] {
			conts[i][j] = r.IntN(fakeengine.VocabSize)
		}
	}
	return prompt, conts
}

// BenchmarkContinuations sends one decision's scoring request (scoredDecision) per op to a
// server answering with a canned reply of the right shape (SGLang's fake engine; bigVLLM's
// prompt_logprobs, about 75 bytes a position), and reports the process's CPU per decision
// (user + system, the test server's small share included: an upper bound on the client's).
func BenchmarkContinuations(b *testing.B) {
	m := fakeengine.Model{Name: "fake/qwen"}
	for _, tc := range []struct {
		name   string
		server http.Handler
		engine func(url string) scoring.Engine
	}{
		{"sglang", fakeengine.NewSGLang(m, fakeengine.SGLangOptions{}), func(url string) scoring.Engine {
			return scoring.NewSGLang(testClient(b, url, m.Name))
		}},
		{"vllm", &bigVLLM{}, func(url string) scoring.Engine { return vllmClient(b, url, m.Name) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			srv := httptest.NewServer(&canned{next: tc.server, replies: map[string][]byte{}})
			defer srv.Close()
			e := tc.engine(srv.URL)
			prompt, conts := scoredDecision(rand.New(rand.NewPCG(7, 8)))
			if _, err := e.Continuations(ctx, prompt, conts); err != nil { // records the reply
				b.Fatal(err)
			}
			ids := 0
			for _, c := range conts {
				ids += len(prompt) + len(c)
			}
			cpu0 := cpuTime()
			b.ResetTimer()
			for range b.N {
				if _, err := e.Continuations(ctx, prompt, conts); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/decision")
			b.ReportMetric(float64(ids), "ids/decision")
		})
	}
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
