package episode

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/executor/openai"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/sandbox"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

// chatStack is a Chat Completions server for real-stack tests: every reply is a function of the
// request alone (an option letter picked by its hash), and its delay a function of the request
// and the stack's latency seed, uniform in [lo, hi], so two seeds answer in different orders.
// It records what a job (the "[job N]" in its prompt) waited on the server.
type chatStack struct {
	*httptest.Server
	lo, hi                time.Duration
	latencySeed           uint64
	inFlight, most, calls atomic.Int64
	mu                    sync.Mutex
	chain                 map[int]time.Duration // per job, the server's delays summed
	total                 time.Duration
}

var jobMark = regexp.MustCompile(`\[job (\d+)\]`)

// jobOf is the job number a request's text marks ("[job N]"), or -1.
func jobOf(text string) int {
	job := -1
	if m := jobMark.FindStringSubmatch(text); m != nil {
		job, _ = strconv.Atoi(m[1])
	}
	return job
}

// readChat reads a chat completion request: its body and its messages' contents; anything else
// is answered 404 and false.
func readChat(w http.ResponseWriter, r *http.Request) ([]byte, []string, bool) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	if r.URL.Path != "/v1/chat/completions" || json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		http.Error(w, "not a chat completion", http.StatusNotFound)
		return nil, nil, false
	}
	messages := make([]string, len(req.Messages))
	for i, m := range req.Messages {
		messages[i] = m.Content
	}
	return body, messages, true
}

// seededDelay is a request's latency, in [lo, hi) by its body's hash and the seed (so it does not
// depend on the order requests arrive in), and the hash.
func seededDelay(body []byte, lo, hi time.Duration, latencySeed uint64) (time.Duration, [sha256.Size]byte) {
	h := sha256.Sum256(body)
	u := float64(binary.LittleEndian.Uint64(h[8:])^seed.Derive(latencySeed, "latency")) / math.MaxUint64
	return lo + time.Duration(u*float64(hi-lo)), h
}

func newChatStack(t testing.TB, lo, hi time.Duration, latencySeed uint64) *chatStack {
	s := &chatStack{lo: lo, hi: hi, latencySeed: latencySeed, chain: map[int]time.Duration{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, messages, ok := readChat(w, r)
		if !ok {
			return
		}
		n := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
		}
		s.calls.Add(1)
		delay, h := seededDelay(body, lo, hi, latencySeed)
		job := jobOf(messages[len(messages)-1])
		s.mu.Lock()
		s.chain[job] += delay
		s.total += delay
		s.mu.Unlock()
		time.Sleep(delay)
		reply := fmt.Sprintf("The answer follows.\nAnswer: %c", "ABCD"[h[0]%4])
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":9}}`,
			reply, len(body)/4)
	}))
	t.Cleanup(s.Close)
	return s
}

// countingExecutor counts the executions in progress: an episode inside Execute is waiting on
// the server (or on a slot of it).
type countingExecutor struct {
	executor.Executor
	executing atomic.Int64
}

type countingSession struct {
	executor.Session
	n *atomic.Int64
}

func (c *countingExecutor) Begin(ctx context.Context, t tasks.Task, s uint64) (executor.Session, error) {
	sess, err := c.Executor.Begin(ctx, t, s)
	if err != nil {
		return nil, err
	}
	return countingSession{sess, &c.executing}, nil
}

func (s countingSession) Execute(ctx context.Context, req executor.Request) (executor.Result, error) {
	s.n.Add(1)
	defer s.n.Add(-1)
	return s.Session.Execute(ctx, req)
}

// chainScript adds agents until the team has size of them, sets the output and stops: an
// episode of size executions, as a multi-agent team makes.
type chainScript struct{ size int }

func (c chainScript) LogProbs(d *policy.Decision) ([]float64, error) {
	pick := -1
	for _, want := range []string{orchestra.KindAddAgent, orchestra.KindSetOutput, orchestra.KindStop} {
		for i, a := range d.Legal {
			if pick < 0 && a.Kind == want && a.SkillID == "" && (want != orchestra.KindAddAgent || d.RT.NumNodes() < c.size) &&
				(want != orchestra.KindSetOutput || d.RT.OutputNode() == "") {
				pick = i
			}
		}
	}
	if pick < 0 {
		pick = 0
	}
	logp := make([]float64, len(d.Legal))
	for i := range logp {
		if i != pick {
			logp[i] = math.Inf(-1)
		}
	}
	return logp, nil
}

// realStackJobs is n episodes of distinct tasks, each marked with its job number, on the openai
// executor of stack with cap requests in flight and workers CPU slots: the even ones the
// network's, the odd ones teams of six agents.
func realStackJobs(t testing.TB, stack *chatStack, n, cap, workers int) (*config.Config, []Job, *countingExecutor) {
	cfg, _, _ := untrained(t)
	cfg.Rollout.Workers = workers
	client, err := openai.NewClient(openai.ClientConfig{BaseURL: stack.URL + "/v1", Model: "m", MaxConcurrency: cap, Timeout: time.Minute,
		Outage: time.Minute, BackoffInitial: time.Second, BackoffMax: time.Second, BaseURLSetting: "executor.openai.base_url",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	exec, err := openai.New(openai.Config{Temperature: 0.3, SendSeed: true, ContextWindow: 32768, TurnOutputTokens: 4096,
		FinalOutputReserve: 1024, ResultChars: 2000, SearchTopK: 3, PassageChars: 600, SearchReserve: time.Minute}, client, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	jobs := make([]Job, n)
	for i := range jobs {
		task := tasks.Task{ID: fmt.Sprintf("hotpotqa/stack-%d", i), Family: "hotpotqa", TaskType: "hotpotqa", Split: "train",
			Prompt: fmt.Sprintf("Answer the question using the passages. Give a short answer only.\nQuestion: [job %d] In which city was the painter of the Blue Door born?\n"+
				"Passages:\n[Blue Door] The Blue Door is a 1901 painting by Anna Marchetti.\n[Anna Marchetti] Anna Marchetti (1870-1931) was an Italian painter born in Paris.", i),
			Answers: []string{"Paris"}}
		jobs[i] = Job{Task: task, Source: "current", ID: task.ID + "/current/0", Seed: seed.Derive(7, task.ID), Theta: true}
		if i%2 == 1 {
			jobs[i].Script = chainScript{size: 6}
		}
	}
	return cfg, jobs, &countingExecutor{Executor: exec}
}

// TestRealStackIsIndependentOfLatencyOrder: episodes on a server whose replies arrive in two
// different random orders write the same episodes, decisions and executions (the wall time is
// not charged: executor.openai.wall_clock fixed), and with 2 CPU slots more than 2 requests are
// in flight at once: an episode waiting on the server holds no slot.
func TestRealStackIsIndependentOfLatencyOrder(t *testing.T) {
	var runs [2][]Played
	for i := range runs {
		stack := newChatStack(t, 2*time.Millisecond, 25*time.Millisecond, uint64(i+1))
		cfg, jobs, exec := realStackJobs(t, stack, 24, 8, 2)
		_, l, eng := untrained(t)
		played, err := Play(context.Background(), cfg, exec, l, eng, jobs, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range played {
			if !p.Episode.Healthy || len(p.Executions) == 0 {
				t.Fatalf("episode %s: healthy %v, %d executions", p.Episode.EpisodeID, p.Episode.Healthy, len(p.Executions))
			}
		}
		if stack.most.Load() <= 2 {
			t.Errorf("latency seed %d: at most %d requests in flight with 2 CPU slots: waiting episodes hold their slots", i+1, stack.most.Load())
		}
		runs[i] = played
	}
	if !reflect.DeepEqual(runs[0], runs[1]) {
		t.Fatal("the episodes differ between two latency orders")
	}
}

// BenchmarkRealStackInFlight plays 128 episodes (16 under -short) against a server answering in
// 0.5–2 s, as a loaded real server does (1–5 ms), with a cap of 64 (8)
// requests in flight and 2 CPU slots. It reports the mean requests in flight, as a share of the
// cap, while at least cap episodes were waiting on the server, and the wall time over its lower
// bound: the larger of the longest episode's own chain of server delays and the total delay
// over the cap.
func BenchmarkRealStackInFlight(b *testing.B) {
	n, cap, lo, hi := 128, 64, 500*time.Millisecond, 2*time.Second
	if testing.Short() {
		n, cap, lo, hi = 16, 8, time.Millisecond, 5*time.Millisecond
	}
	var share, ratio, longestS, totalS, calls float64
	for i := range b.N {
		stack := newChatStack(b, lo, hi, uint64(i+1))
		cfg, jobs, exec := realStackJobs(b, stack, n, cap, 2)
		_, l, eng := untrained(b)
		var sum, samples atomic.Int64
		stop := sampling(func() {
			if exec.executing.Load() >= int64(cap) {
				sum.Add(stack.inFlight.Load())
				samples.Add(1)
			}
		})
		began := time.Now()
		if _, err := Play(context.Background(), cfg, exec, l, eng, jobs, nil); err != nil {
			b.Fatal(err)
		}
		wall := time.Since(began)
		stop()
		var longest time.Duration
		for _, d := range stack.chain {
			longest = max(longest, d)
		}
		bound := max(longest, stack.total/time.Duration(cap))
		ratio = wall.Seconds() / bound.Seconds()
		longestS, totalS, calls = longest.Seconds(), (stack.total / time.Duration(cap)).Seconds(), float64(stack.calls.Load())
		if samples.Load() > 0 {
			share = float64(sum.Load()) / float64(samples.Load()) / float64(cap)
		}
	}
	b.ReportMetric(share, "in-flight/cap-while-cap-waiting")
	b.ReportMetric(ratio, "wall/lower-bound")
	b.ReportMetric(longestS, "longest-chain-s")
	b.ReportMetric(totalS, "total-delay/cap-s")
	b.ReportMetric(calls, "calls")
}

// TestAnMBPPEpisodeRunsTheSandboxOncePerOutput: a team whose agents all write the same solution
// grades its output after every decision and at STOP, yet runs the sandbox once per distinct
// output text: 1 here, across both episodes of the task.
func TestAnMBPPEpisodeRunsTheSandboxOncePerOutput(t *testing.T) {
	cfg, l, eng := untrained(t)
	if py := os.Getenv("EVOSTEER_SANDBOX_PYTHON"); py != "" {
		cfg.Tools.Python.Interpreter = py
	}
	sb, err := openai.NewSandbox(cfg.Tools.Python)
	if err != nil {
		t.Skipf("no python interpreter for the sandbox: %v", err)
	}
	if res := sb.Run(context.Background(), "import numpy"); res.Status != sandbox.StatusSuccess {
		t.Skip("skipped: the MBPP+ hidden tests import numpy, which the sandbox's interpreter lacks")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":20}}`,
			"```python\ndef add_two(a, b):\n    return a + b\n```")
	}))
	defer srv.Close()
	client, err := openai.NewClient(openai.ClientConfig{BaseURL: srv.URL + "/v1", Model: "m", MaxConcurrency: 8, Timeout: time.Minute,
		BackoffInitial: time.Second, BackoffMax: time.Second, BaseURLSetting: "executor.openai.base_url"})
	if err != nil {
		t.Fatal(err)
	}
	exec, err := openai.New(openai.Config{Temperature: 0.3, ContextWindow: 32768, TurnOutputTokens: 4096, FinalOutputReserve: 1024,
		ResultChars: 2000, SearchTopK: 3, PassageChars: 600, SearchReserve: time.Minute}, client, sb, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := tasks.ReadJSONL("../tasks/testdata/tasks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var task tasks.Task
	for _, x := range ts {
		if x.ID == "mbpp_plus/f6" {
			task = x
		}
	}
	jobs := []Job{{Task: task, Source: "current", ID: "team", Seed: 3, Script: chainScript{size: 3}},
		{Task: task, Source: "current", ID: "network", Seed: 4, Theta: true}}
	played, err := Play(context.Background(), cfg, exec, l, eng, jobs, nil)
	if err != nil {
		t.Fatal(err)
	}
	graded := 0
	for _, p := range played {
		if !p.Episode.Healthy || p.Episode.Reward != 1 {
			t.Fatalf("%s: healthy %v, reward %v", p.Episode.EpisodeID, p.Episode.Healthy, p.Episode.Reward)
		}
		for _, d := range p.Decisions {
			if d.OutputScore != nil {
				graded++
			}
		}
	}
	if exec.CodeRuns() != 1 || graded < 4 {
		t.Fatalf("%d output grades ran the sandbox %d times, want once (one distinct output)", graded, exec.CodeRuns())
	}
}

// sampling calls sample every millisecond, from a goroutine of its own, until the stop it returns
// is called; stop waits for the last call to end.
func sampling(sample func()) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	return func() { close(quit); <-done }
}
