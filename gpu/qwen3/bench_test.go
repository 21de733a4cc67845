package qwen3

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomlx/compute/dtypes"
)

// The benchmarks' model: under -short (make test) the tiny test model; otherwise a ~42M-parameter
// one of the real architecture (hidden 512, 8 layers, 8 heads, 4 KV heads, head_dim 64,
// intermediate 1536, vocabulary 32768, tied embeddings), and where a python3 imports torch, the
// same weights (written with WriteFolder) timed by testdata/torch_bench.py in the same run, with
// torch's threads set to the Go runtime's GOMAXPROCS: the benchmarks then report their speed as a
// ratio to torch's, x-torch (>1: faster than torch). Nothing is asserted about times.
//
//	go test -run '^$' -bench . -benchtime 1x ./gpu/qwen3/
//
// Debian's python3-torch does its matrix products in libblas.so.3, netlib's reference BLAS unless
// an optimised one is installed as the alternative: ~2 GFLOP/s on these cores against OpenBLAS's
// ~75, so the torch half then takes many minutes and x-torch flatters Go. For a fair baseline put
// OpenBLAS's libblas.so.3 first, e.g. LD_LIBRARY_PATH=…/openblas-pthread (libopenblas0-pthread,
// unpacked with dpkg -x where it is not installed); the log names the BLAS torch loaded.
// QWEN3_BENCH_TORCH=off skips torch (for profiles of the Go side).
var bench struct {
	once  sync.Once
	cfg   Config
	w     Weights
	m     *Model
	err   error
	torch *torchTimes // nil: under -short, or no python3 imports torch
}

func benchConfig() Config {
	cfg := tinyConfig()
	if !testing.Short() {
		cfg.HiddenSize, cfg.IntermediateSize, cfg.NumHiddenLayers = 512, 1536, 8
		cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim, cfg.VocabSize = 8, 4, 64, 32768
		cfg.TieWordEmbeddings = true
	}
	return cfg
}

// paramCount is the number of distinct parameters (a tied head counted once).
func paramCount(cfg Config, w Weights) int {
	n := product(w.Embed.Shape) + product(w.Norm.Shape)
	if !cfg.TieWordEmbeddings {
		n += product(w.LMHead.Shape)
	}
	for _, l := range w.Layers {
		for _, t := range []Tensor{l.InputNorm, l.QProj, l.KProj, l.VProj, l.OProj, l.QNorm, l.KNorm, l.PostAttnNorm, l.GateProj, l.UpProj, l.DownProj} {
			n += product(t.Shape)
		}
	}
	return n
}

// benchPrompts is the prefill's workload: 4 prompts of 256 tokens (2 of 16 under -short).
func benchPrompts() [][]int {
	rows, n := 4, 256
	if testing.Short() {
		rows, n = 2, 16
	}
	r := rand.New(rand.NewPCG(1, 2))
	prompts := make([][]int, rows)
	for i := range prompts {
		prompts[i] = randTokens(r, n, 290)
	}
	return prompts
}

// benchDecision is a realistic decision: a 512-token prompt (16 under -short) and 16 legal
// actions, canonical JSON such as {"op":"ADD_AGENT","role":"coder"} cut into sub-word pieces (6
// to 14 tokens, 12 on average, EOS included) that share prefixes as a tokenizer's would.
func benchDecision() Decision {
	n := 512
	if testing.Short() {
		n = 16
	}
	ids := map[string]int{}
	tok := func(pieces ...string) []int {
		var out []int
		for _, p := range pieces {
			if _, ok := ids[p]; !ok {
				ids[p] = 100 + len(ids)
			}
			out = append(out, ids[p])
		}
		return append(out, eos)
	}
	var acts [][]int
	for _, role := range []string{"planner", "coder", "critic", "tester", "writer", "router"} {
		acts = append(acts, tok(`{"`, "op", `":"`, "ADD", "_AG", "ENT", `","`, "role", `":"`, role, `"}`))
	}
	for i := range 5 {
		acts = append(acts, tok(`{"`, "op", `":"`, "REM", "OVE", "_AG", "ENT", `","`, "id", `":"`, "a", fmt.Sprint(i+1), `"}`))
	}
	for _, v := range []string{"1", "2", "4", "8"} {
		acts = append(acts, tok(`{"`, "op", `":"`, "SET", "_B", "UDGET", `","`, "value", `":`, v, "}"))
	}
	acts = append(acts, tok(`{"`, "op", `":"`, "STOP", `"}`))
	return Decision{Prompt: randTokens(rand.New(rand.NewPCG(5, 6)), n, 290), Actions: acts}
}

// benchSetup builds the model once per process and, outside -short, times torch on it.
func benchSetup(b *testing.B) {
	bench.once.Do(func() {
		bench.cfg = benchConfig()
		std := 0.05
		if !testing.Short() {
			std = 0.02 // as Qwen3's initializer_range: activations of order 1 through 8 layers
		}
		bench.w = RandomWeights(bench.cfg, 1, std)
		bench.m, bench.err = New(testBackend(b), bench.cfg, bench.w, Options{DType: dtypes.Float32})
		if bench.err != nil || testing.Short() {
			return
		}
		b.Logf("model: hidden %d, %d layers, %d heads (%d KV) of %d, intermediate %d, vocabulary %d, tied: %.1fM parameters; GOMAXPROCS %d",
			bench.cfg.HiddenSize, bench.cfg.NumHiddenLayers, bench.cfg.NumAttentionHeads, bench.cfg.NumKeyValueHeads, bench.cfg.HeadDim,
			bench.cfg.IntermediateSize, bench.cfg.VocabSize, float64(paramCount(bench.cfg, bench.w))/1e6, runtime.GOMAXPROCS(0))
		if os.Getenv("QWEN3_BENCH_TORCH") == "off" { // for profiles of the Go side
			return
		}
		bench.torch, bench.err = runTorchBench(b, bench.cfg, bench.w)
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
}

// torchTimes is torch_bench.py's output.
type torchTimes struct {
	PrefillTokensS  float64   `json:"prefill_tokens_s"`
	PlainDecisionsS float64   `json:"plain_decisions_s"`
	KVDecisionsS    float64   `json:"kv_decisions_s"`
	PlainLogProbs   []float64 `json:"plain_logprobs"`
	KVLogProbs      []float64 `json:"kv_logprobs"`
	Torch           string    `json:"torch"`
	Threads         int       `json:"threads"`
	BLAS            string    `json:"blas"`
}

// runTorchBench writes the model's folder and runs testdata/torch_bench.py on the benchmarks'
// workloads with the first python3 that imports torch (nil where none does).
func runTorchBench(b *testing.B, cfg Config, w Weights) (*torchTimes, error) {
	dir, err := os.MkdirTemp("", "qwen3-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	folder := filepath.Join(dir, "model")
	if err := WriteFolder(folder, cfg, w, F32); err != nil {
		return nil, err
	}
	d := benchDecision()
	job, _ := json.Marshal(map[string]any{
		"folder": folder, "threads": runtime.GOMAXPROCS(0), "prompts": benchPrompts(),
		"prompt": d.Prompt, "actions": d.Actions, "out": filepath.Join(dir, "out.json"),
	})
	jobFile := filepath.Join(dir, "job.json")
	if err := os.WriteFile(jobFile, job, 0o644); err != nil {
		return nil, err
	}
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		msg, err := exec.Command(path, filepath.Join("testdata", "torch_bench.py"), jobFile).CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 77 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("torch bench (%s): %v\n%s", path, err, msg)
		}
		raw, err := os.ReadFile(filepath.Join(dir, "out.json"))
		if err != nil {
			return nil, err
		}
		var t torchTimes
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, err
		}
		b.Logf("torch %s, %d threads, BLAS %s: prefill %.0f tokens/s, plain scoring %.3g decisions/s, KV-cached %.3g decisions/s",
			strings.TrimSpace(t.Torch), t.Threads, t.BLAS, t.PrefillTokensS, t.PlainDecisionsS, t.KVDecisionsS)
		return &t, nil
	}
	b.Logf("no python3 imports torch: no x-torch ratios")
	return nil, nil
}

// BenchmarkPrefill is one prefill of benchPrompts, compiled beforehand; it reports prompt tokens
// per second and, with torch, their ratio to a batched torch forward of the same prompts.
func BenchmarkPrefill(b *testing.B) {
	benchSetup(b)
	m, prompts := bench.m, benchPrompts()
	t0 := time.Now()
	if _, _, err := m.Prefill(prompts, Query{}); err != nil {
		b.Fatal(err)
	}
	b.Logf("first call (compiling its graph): %.2f s", time.Since(t0).Seconds())
	b.ResetTimer()
	for range b.N {
		if _, _, err := m.Prefill(prompts, Query{}); err != nil {
			b.Fatal(err)
		}
	}
	tps := float64(len(prompts)*len(prompts[0])*b.N) / b.Elapsed().Seconds()
	b.ReportMetric(tps, "tokens/s")
	if bench.torch != nil {
		b.ReportMetric(tps/bench.torch.PrefillTokensS, "x-torch")
	}
}

// BenchmarkScore is the trie-masked scoring of benchDecision, compiled beforehand; it reports
// decisions per second, forward calls per decision and, with torch, the ratios to torch's plain
// scoring (x-torch: one batched forward of prompt + each action) and to its KV-cached one
// (x-torch-kv).
func BenchmarkScore(b *testing.B) {
	benchSetup(b)
	m, d := bench.m, benchDecision()
	t0 := time.Now()
	s, err := m.Score(d, false)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("first call (compiling its graphs): %.2f s", time.Since(t0).Seconds())
	b.ResetTimer()
	for range b.N {
		if _, err := m.Score(d, false); err != nil {
			b.Fatal(err)
		}
	}
	dps := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(dps, "decisions/s")
	b.ReportMetric(float64(s.Work.Calls), "calls/decision")
	if t := bench.torch; t != nil {
		b.ReportMetric(dps/t.PlainDecisionsS, "x-torch")
		b.ReportMetric(dps/t.KVDecisionsS, "x-torch-kv")
		b.Logf("log-probs, Go against torch: plain max |Δ| %.2g, KV-cached %.2g", maxDiff(s.LogProbs, t.PlainLogProbs), maxDiff(s.LogProbs, t.KVLogProbs))
	}
}
