package qwen3_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/evosteer/evosteer-go/gpu/qwen3"
	"github.com/evosteer/evosteer-go/gpu/qwen3/qwen3test"
)

// noTorch is the script's exit status where its python3 cannot import torch.
const noTorch = 77

// runTorch runs the script on jobsFile with the first python3 that imports torch (PATH's, then
// Debian's /usr/bin/python3, where python3-torch installs), and reports whether one did.
func runTorch(t *testing.T, jobsFile string) bool {
	t.Helper()
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		msg, err := exec.Command(path, filepath.Join("testdata", "torch_forward.py"), jobsFile).CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == noTorch {
			continue
		}
		if err != nil {
			t.Fatalf("torch forward (%s): %v\n%s", path, err, msg)
		}
		return true
	}
	return false
}

// TestTorchCrossCheck runs testdata/torch_forward.py, an independent torch forward written from
// transformers' modeling facts, on tiny random model folders (tied with BF16 weights, untied with
// F32, and untied with a PEFT LoRA adapter folder on every projection, rsLoRA, non-zero B, BF16,
// which the script reads with struct/json and applies unmerged as PEFT's forward does) and
// compares its logits at every position with the reference's (the adapter as ReadAdapter reads
// it, merged in float64): to 1e-9 (absolute, the logits are of order 1) in float64, to 1e-4 of
// the largest logit in float32. Skipped where no python3 imports torch.
func TestTorchCrossCheck(t *testing.T) {
	type job struct {
		Folder  string `json:"folder"`
		DType   string `json:"dtype"`
		Tokens  []int  `json:"tokens"`
		Out     string `json:"out"`
		Adapter string `json:"adapter,omitempty"`
	}
	type check struct {
		name string
		want [][]float64
		job  job
	}
	var checks []check
	tmp := t.TempDir()
	for _, c := range []struct {
		name    string
		tied    bool
		dtype   qwen3.DType
		adapter bool
	}{{"tied-bf16", true, qwen3.BF16, false}, {"untied-f32", false, qwen3.F32, false}, {"untied-f32+lora-bf16", false, qwen3.F32, true}} {
		cfg := qwen3test.Config()
		cfg.TieWordEmbeddings = c.tied
		cfg.RopeTheta = 100 // large angles at these few positions, so a rotary slip shows
		dir := qwen3test.Folder(t, cfg, 21, c.dtype, 1)
		m, err := qwen3.Open(dir) // the weights as read back (bf16-rounded), as torch reads them
		if err != nil {
			t.Fatal(err)
		}
		tokens := randomTokens(8, 10, cfg.VocabSize)
		var adapterDir string
		var adapter *qwen3.Adapter
		if c.adapter {
			adapterDir, _ = qwen3test.AdapterFolder(t, cfg, qwen3test.LoRAConfig(), 22, qwen3.BF16)
			a, err := qwen3.ReadAdapter(adapterDir, cfg) // bf16-rounded, as torch reads it
			if err != nil {
				t.Fatal(err)
			}
			adapter = &a
		}
		want := prefill(t, newRef(t, m.Config, m.Weights, adapter), tokens)
		if adapter != nil {
			if d := maxDiff(t, want, prefill(t, newRef(t, m.Config, m.Weights, nil), tokens)); d < 0.1 {
				t.Fatalf("%s: the adapter moves the logits by %g only: the check would not see it", c.name, d)
			}
		}
		for _, dt := range []string{"float64", "float32"} {
			name := c.name + "/torch-" + dt
			checks = append(checks, check{name, want, job{dir, dt, tokens, filepath.Join(tmp, c.name+"-"+dt+".f64"), adapterDir}})
		}
	}
	jobs := make([]job, len(checks))
	for i, c := range checks {
		jobs[i] = c.job
	}
	data, _ := json.Marshal(jobs)
	jobsFile := filepath.Join(tmp, "jobs.json")
	if err := os.WriteFile(jobsFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if !runTorch(t, jobsFile) {
		t.Skip("no python3 imports torch (Debian: apt-get install python3-torch): the torch cross-check did not run")
	}
	for _, c := range checks {
		raw, err := os.ReadFile(c.job.Out)
		if err != nil {
			t.Fatal(err)
		}
		vocab := len(c.want[0])
		if len(raw) != 8*len(c.want)*vocab {
			t.Fatalf("%s: torch wrote %d bytes, want %d", c.name, len(raw), 8*len(c.want)*vocab)
		}
		d, scale := 0.0, 0.0
		for i, row := range c.want {
			for j, v := range row {
				got := math.Float64frombits(binary.LittleEndian.Uint64(raw[8*(i*vocab+j):]))
				d, scale = max(d, math.Abs(got-v)), max(scale, math.Abs(v))
			}
		}
		tol := map[string]float64{"float64": 1e-9, "float32": 1e-4 * scale}[c.job.DType]
		t.Logf("%s against the reference: max |Δ| %.3g over %d positions (largest logit %.3g)", c.name, d, len(c.want), scale)
		if d > tol {
			t.Errorf("%s: max |Δ| %g past %g", c.name, d, tol)
		}
	}
}
