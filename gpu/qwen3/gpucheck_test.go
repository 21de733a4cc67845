package qwen3

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"

	gpubackend "github.com/evosteer/evosteer-go/gpu/backend"
)

// TestGPUCheck is the model's part of make gpu-check (scripts/gpu-check.sh), run only where
// EVOSTEER_QWEN3_GPU_CHECK names a scratch folder. A random model of Qwen3-0.6B's shape (the tiny
// test shape with EVOSTEER_QWEN3_GPU_CHECK_TINY set, a dry run on a CPU) and a trained-looking LoRA
// adapter (Table 5: r 64, α 128, every projection) are written there as a Hugging Face folder and
// a PEFT folder; the graphs on EVOSTEER_TEST_BACKEND (xla:cuda there) are checked against the
// pure-Go CPU backend at every position of a prompt, adapter off and on; then
// scripts/qwen3-transformers-check.py loads the same folders with transformers and peft and
// compares their logits with ours (required when EVOSTEER_QWEN3_ORACLE=required, as gpu-check.sh
// sets it); last it times prefill tokens/s, trie-scored decisions/s and the adapter gradient of
// a batch of 192 decisions, written to metrics.json there.
func TestGPUCheck(t *testing.T) {
	dir := os.Getenv("EVOSTEER_QWEN3_GPU_CHECK")
	if dir == "" {
		t.Skip("EVOSTEER_QWEN3_GPU_CHECK is not set: the model's GPU check runs in make gpu-check")
	}
	cfg := Config0_6B()
	if os.Getenv("EVOSTEER_QWEN3_GPU_CHECK_TINY") != "" { // a dry run of the plumbing on a CPU
		cfg = tinyConfig()
		cfg.Architectures, cfg.TorchDtype = []string{"Qwen3ForCausalLM"}, "float32"
	}
	w := RandomWeights(cfg, 1, 0.02)
	modelDir, adapterDir := filepath.Join(dir, "model"), filepath.Join(dir, "adapter")
	if err := WriteFolder(modelDir, cfg, w, F32); err != nil {
		t.Fatal(err)
	}
	a, err := NewAdapter(cfg, LoRAConfig{Rank: 64, Alpha: 128, TargetModules: ModuleNames}, 2)
	if err != nil {
		t.Fatal(err)
	}
	randomB(a, 3, 0.01)
	if err := WriteAdapter(adapterDir, cfg, *a, "evosteer-random-qwen3-0.6b"); err != nil {
		t.Fatal(err)
	}
	name := cmp.Or(os.Getenv("EVOSTEER_TEST_BACKEND"), "simplego")
	backend, err := gpubackend.New(name)
	if err != nil {
		t.Fatal(err)
	}
	open := func(b compute.Backend) *Model {
		m, err := New(b, cfg, w, Options{DType: dtypes.Float32})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.SetAdapter(a); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := open(backend)
	prompt := randTokens(rand.New(rand.NewPCG(4, 4)), 32, cfg.VocabSize)
	logits := func(m *Model, adapter bool) [][]float64 {
		_, out, err := m.Prefill([][]int{prompt}, Query{Logits: [][]int{iota(len(prompt))}, Adapter: adapter})
		if err != nil {
			t.Fatal(err)
		}
		return out.Logits[0]
	}
	ours := [][][]float64{logits(m, false), logits(m, true)}
	scale := 0.0
	for _, row := range ours[1] {
		for _, v := range row {
			scale = max(scale, math.Abs(v))
		}
	}
	metrics := map[string]any{"backend": name, "layers": cfg.NumHiddenLayers, "largest_logit": scale}
	if name != "simplego" {
		cpu := open(testBackend(t))
		for i, adapter := range []bool{false, true} {
			d := maxDiff2(ours[i], logits(cpu, adapter))
			metrics["max_abs_vs_cpu_adapter_"+strconv.FormatBool(adapter)] = d
			if d > 1e-3*scale {
				t.Errorf("%s against the CPU backend, adapter %v: max |Δ| %.3g over 1e-3 of the largest logit %.3g", name, adapter, d, scale)
			}
		}
	}
	metrics["oracle"] = transformersOracle(t, dir, prompt, ours, scale)
	timeWork(t, m, metrics)
	data, _ := json.MarshalIndent(metrics, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "metrics.json"), append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("metrics: %s", data)
}

// transformersOracle runs scripts/qwen3-transformers-check.py on the folders and our logits
// (adapter off, on) and returns what it measured; transformers or peft absent is a failure only
// where EVOSTEER_QWEN3_ORACLE=required.
func transformersOracle(t *testing.T, dir string, prompt []int, ours [][][]float64, scale float64) any {
	p, _ := json.Marshal(prompt)
	if err := os.WriteFile(filepath.Join(dir, "prompt.json"), p, 0o644); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	for _, rows := range ours {
		for _, row := range rows {
			for _, v := range row {
				raw = binary.LittleEndian.AppendUint64(raw, math.Float64bits(v))
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go_logits.bin"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "qwen3-transformers-check.py"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cmp.Or(os.Getenv("EVOSTEER_PYTHON"), "python3"), script, dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 77 {
		if os.Getenv("EVOSTEER_QWEN3_ORACLE") == "required" {
			t.Fatal("transformers or peft is not importable: the oracle comparison is required here")
		}
		t.Log("transformers or peft is not importable: the oracle comparison did not run")
		return "not run: transformers or peft absent"
	}
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	var got struct{ BaseMaxAbs, AdapterMaxAbs float64 }
	var all map[string]any // with the versions and the device
	if err := json.Unmarshal(out, &got); err != nil || json.Unmarshal(out, &all) != nil {
		t.Fatalf("%s printed %q: %v", script, out, err)
	}
	for what, d := range map[string]float64{"base model": got.BaseMaxAbs, "adapter (peft)": got.AdapterMaxAbs} {
		if d > 1e-3*scale || math.IsNaN(d) {
			t.Errorf("transformers, %s: max |Δ| %.3g over 1e-3 of the largest logit %.3g", what, d, scale)
		}
	}
	return all
}

// timeWork measures the backend's prefill tokens/s (8 prompts of 512 tokens), trie-scored
// decisions/s (a 512-token prompt, 16 legal actions) and the seconds of the adapter's gradient
// over a batch of 192 decisions (128-token prompts), each compiled before it is timed.
func timeWork(t *testing.T, m *Model, metrics map[string]any) {
	r := rand.New(rand.NewPCG(5, 5))
	cfg := m.Config()
	vocab, n := cfg.VocabSize, min(512, cfg.MaxPositionEmbeddings/4)
	prompts := make([][]int, 8)
	for i := range prompts {
		prompts[i] = randTokens(r, n, vocab)
	}
	timed := func(reps int, f func() error) float64 {
		if err := f(); err != nil { // compiles
			t.Fatal(err)
		}
		start := time.Now()
		for range reps {
			if err := f(); err != nil {
				t.Fatal(err)
			}
		}
		return time.Since(start).Seconds() / float64(reps)
	}
	s := timed(3, func() error { _, _, err := m.Prefill(prompts, Query{}); return err })
	metrics["prefill_tokens_per_s"] = float64(8*n) / s
	d := randDecision(r, 16)
	d.Prompt = randTokens(r, n, vocab)
	s = timed(5, func() error { _, err := m.Score(d, true); return err })
	metrics["decisions_per_s"] = 1 / s
	examples := make([]Example, 192)
	for i := range examples {
		e := randDecision(r, 8)
		e.Prompt = randTokens(r, 128, vocab)
		examples[i] = Example{Decision: e, Action: i % 8, Weight: r.NormFloat64()}
	}
	metrics["adapter_gradient_192_s"] = timed(1, func() error { _, err := m.Gradient(examples); return err })
}
