package episode

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor/openai"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/sandbox"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

// mixedServer is a Chat Completions server for a step of HotpotQA, AIME and MBPP+ episodes: its
// reply is a function of the request alone (a <python> call on the first turn of some roles
// that have the tool, an MBPP+ solution that the grader runs in the sandbox, or an answer), and
// its delay a function of the request and the latency seed, uniform in [lo, hi]. It records each
// job's chain of delays (the "[job N]" in the request). The programs it writes sleep for run
// when they start, as a program busy for a while (the MBPP+ plus tests) runs for a while.
type mixedServer struct {
	*httptest.Server
	inFlight, calls, pythonCalls atomic.Int64
	mu                           sync.Mutex
	chain                        map[int]time.Duration
	first, last                  map[int]time.Time // per job, its first request's arrival and last reply
	total                        time.Duration
}

func newMixedServer(t testing.TB, lo, hi, run time.Duration, latencySeed uint64) *mixedServer {
	s := &mixedServer{chain: map[int]time.Duration{}, first: map[int]time.Time{}, last: map[int]time.Time{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, messages, ok := readChat(w, r)
		if !ok {
			return
		}
		s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		s.calls.Add(1)
		text := strings.Join(messages, "\n") + "\n"
		delay, h := seededDelay(body, lo, hi, latencySeed)
		job := jobOf(text)
		s.mu.Lock()
		s.chain[job] += delay
		s.total += delay
		if _, ok := s.first[job]; !ok {
			s.first[job] = time.Now()
		}
		s.mu.Unlock()
		time.Sleep(delay)
		defer func() {
			s.mu.Lock()
			s.last[job] = time.Now()
			s.mu.Unlock()
		}()
		var reply string
		switch {
		case strings.Contains(text, "<python>") && !strings.Contains(text, "<result>\n") && h[1]%2 == 0:
			s.pythonCalls.Add(1)
			reply = fmt.Sprintf("Let me compute.\n<python>\nimport time\ntime.sleep(%.3f)\nprint(sum(i * i for i in range(20000)))\n</python>", run.Seconds())
		case strings.Contains(text, "add two integers"):
			reply = fmt.Sprintf("```python\nimport time\ntime.sleep(%.3f)  # job %d\n\ndef add_two(a, b):\n    return a + b\n```", run.Seconds(), job)
		case strings.Contains(text, "competition math"):
			reply = "The answer follows.\nAnswer: 42"
		default:
			reply = "The answer follows.\nAnswer: Paris"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":20}}`,
			reply, len(body)/4)
	}))
	t.Cleanup(s.Close)
	return s
}

// mixedStep is n episodes, a third each of HotpotQA, AIME and MBPP+ tasks (the fixtures, each
// job its own task marked with its number), on the openai executor built from the default
// configuration (executor.openai.max_concurrency, rollout.workers and tools.python as released)
// against srv, with the sandbox's interpreter EVOSTEER_SANDBOX_PYTHON; the even jobs the
// network's, the odd ones teams of two to five agents. It skips without an interpreter that has
// numpy (the MBPP+ hidden tests import it).
func mixedStep(t testing.TB, srv *mixedServer, n int) (*config.Config, []Job, *openai.Executor) {
	cfg, _, _ := untrained(t)
	if py := os.Getenv("EVOSTEER_SANDBOX_PYTHON"); py != "" {
		cfg.Tools.Python.Interpreter = py
	}
	cfg.Executor.OpenAI.BaseURL, cfg.Executor.OpenAI.APIKeyEnv, cfg.Executor.OpenAI.Model = srv.URL+"/v1", "", "m"
	exec, err := openai.FromConfig(cfg)
	if err != nil {
		t.Skipf("no sandbox or executor: %v", err)
	}
	sb, err := openai.NewSandbox(cfg.Tools.Python)
	if err != nil || sb.Run(context.Background(), "import numpy").Status != sandbox.StatusSuccess {
		t.Skip("skipped: the MBPP+ hidden tests import numpy, which the sandbox's interpreter lacks")
	}
	fixtures, err := tasks.ReadJSONL("../tasks/testdata/tasks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]tasks.Task{}
	for _, x := range fixtures {
		byID[x.ID] = x
	}
	kinds := []string{"hotpotqa/f1", "aime_2026/f5", "mbpp_plus/f6"}
	jobs := make([]Job, n)
	for i := range jobs {
		task := byID[kinds[i%3]]
		task.ID = fmt.Sprintf("%s-job-%d", task.ID, i)
		task.Prompt = fmt.Sprintf("[job %d] %s", i, task.Prompt)
		jobs[i] = Job{Task: task, Source: "current", ID: task.ID + "/current/0", Seed: seed.Derive(11, task.ID), Theta: true}
		if i%2 == 1 {
			jobs[i].Script = roleScript{size: 2 + (i/2)%4, offset: i / 2}
		}
	}
	return cfg, jobs, exec
}

// roleScript is chainScript with each agent of another role (verifier and tool_user have the
// python tool), chosen by the agent's index plus offset, the team linked into a chain.
type roleScript struct{ size, offset int }

func (c roleScript) LogProbs(d *policy.Decision) ([]float64, error) {
	var adds []int
	for i, a := range d.Legal {
		if a.Kind == orchestra.KindAddAgent && a.SkillID == "" {
			adds = append(adds, i)
		}
	}
	if len(adds) == 0 || d.RT.NumNodes() >= c.size {
		return chainScript{size: c.size}.LogProbs(d)
	}
	pick := adds[(d.RT.NumNodes()+c.offset)%len(adds)]
	logp := make([]float64, len(d.Legal))
	for i := range logp {
		if i != pick {
			logp[i] = math.Inf(-1)
		}
	}
	return logp, nil
}

// BenchmarkMixedStepAtDefaults plays a step of 116 HotpotQA, AIME and MBPP+ episodes (12 under
// -short) at the default settings against a server answering in 0.5–2 s (1–5 ms under -short),
// the MBPP+ outputs graded and some agents' python calls run in the sandbox; each program also
// sleeps EVOSTEER_BENCH_SANDBOX_MS (default 0: only the interpreter's start and the graders'
// numpy import), a program that runs for a while. It reports the
// wall time over its lower bound (the larger of the longest episode's chain of server delays
// and the total delay over executor.openai.max_concurrency), the seconds during which fewer than
// cap/8 requests were in flight while at least cap episodes were open, and the CPU-seconds used.
func BenchmarkMixedStepAtDefaults(b *testing.B) {
	n, lo, hi := 116, 500*time.Millisecond, 2*time.Second
	if testing.Short() {
		n, lo, hi = 12, time.Millisecond, 5*time.Millisecond
	}
	var run time.Duration
	if ms, err := strconv.Atoi(os.Getenv("EVOSTEER_BENCH_SANDBOX_MS")); err == nil {
		run = time.Duration(ms) * time.Millisecond
	}
	var longestWallS, startS, lastStartS, lastChainS, lastEndS float64
	var ratio, longestS, totalS, calls, pythonCalls, codeRuns, lowS, cpuS, wallS float64
	for i := range b.N {
		srv := newMixedServer(b, lo, hi, run, uint64(i+1))
		cfg, jobs, exec := mixedStep(b, srv, n)
		_, l, eng := untrained(b)
		cap := cfg.Executor.OpenAI.MaxConcurrency
		var done atomic.Int64
		var low atomic.Int64 // ms sampled with few requests in flight and many episodes open
		stop := sampling(func() {
			if int64(n)-done.Load() >= int64(cap) && srv.inFlight.Load() < int64(max(1, cap/8)) {
				low.Add(1)
			}
		})
		cpu0 := processCPU()
		began := time.Now()
		played, err := Play(context.Background(), cfg, exec, l, eng, jobs, func(d, _ int) { done.Store(int64(d)) })
		if err != nil {
			b.Fatal(err)
		}
		wall := time.Since(began)
		cpuS = (processCPU() - cpu0).Seconds()
		stop()
		for _, p := range played {
			if !p.Episode.Healthy {
				b.Fatalf("episode %s unhealthy: %s", p.Episode.EpisodeID, *p.Episode.UnhealthyReason)
			}
		}
		var longest time.Duration
		longestJob := 0
		for j, d := range srv.chain {
			if d > longest {
				longest, longestJob = d, j
			}
		}
		longestWallS = srv.last[longestJob].Sub(srv.first[longestJob]).Seconds()
		startS = srv.first[longestJob].Sub(began).Seconds()
		lastJob := longestJob
		for j, at := range srv.last {
			if at.After(srv.last[lastJob]) {
				lastJob = j
			}
		}
		lastStartS, lastChainS, lastEndS = srv.first[lastJob].Sub(began).Seconds(), srv.chain[lastJob].Seconds(), srv.last[lastJob].Sub(began).Seconds()
		bound := max(longest, srv.total/time.Duration(cap))
		ratio, wallS = wall.Seconds()/bound.Seconds(), wall.Seconds()
		longestS, totalS = longest.Seconds(), (srv.total / time.Duration(cap)).Seconds()
		calls, pythonCalls, codeRuns = float64(srv.calls.Load()), float64(srv.pythonCalls.Load()), float64(exec.CodeRuns())
		lowS = float64(low.Load()) / 1000
	}
	b.ReportMetric(ratio, "wall/lower-bound")
	b.ReportMetric(wallS, "wall-s")
	b.ReportMetric(longestS, "longest-chain-s")
	b.ReportMetric(longestWallS, "longest-episode-wall-s")
	b.ReportMetric(startS, "longest-episode-start-s")
	b.ReportMetric(lastStartS, "last-episode-start-s")
	b.ReportMetric(lastChainS, "last-episode-chain-s")
	b.ReportMetric(lastEndS, "last-reply-s")
	b.ReportMetric(totalS, "total-delay/cap-s")
	b.ReportMetric(calls, "calls")
	b.ReportMetric(pythonCalls, "python-calls")
	b.ReportMetric(codeRuns, "code-grades")
	b.ReportMetric(lowS, "low-in-flight-s")
	b.ReportMetric(cpuS, "cpu-s")
}

// processCPU is the user and system time this process and its ended children (the sandbox's
// programs) have used.
func processCPU() time.Duration {
	var sum time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			sum += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return sum
}
