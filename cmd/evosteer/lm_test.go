//go:build duckdb_arrow

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/gpu/qwen3"
	"github.com/evosteer/evosteer-go/gpu/qwen3/qwen3test"
)

// editJSON rewrites the JSON object file path with edit applied.
func editJSON(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	if data, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A tiny Qwen3 folder (sharded BF16 weights) with a LoRA adapter: ok lines saying what each file
// holds, the supported line, exit 0.
func TestLMCheckSupported(t *testing.T) {
	cfg := qwen3test.Config()
	model := qwen3test.Folder(t, cfg, 1, qwen3.BF16, 3)
	adapter, _ := qwen3test.AdapterFolder(t, cfg, qwen3test.LoRAConfig(), 2, qwen3.BF16)
	out, err := run(t, "", "lm", "check", "--model", model, "--adapter", adapter)
	t.Logf("lm check:\n%s", out)
	if err != nil {
		t.Fatalf("lm check: %v", err)
	}
	n, _ := cfg.ParamCount()
	for _, want := range []string{
		"ok   config: model_type qwen3 (Qwen3ForCausalLM): 2 layers, hidden 16, intermediate 24, 4 heads / 2 kv heads, head_dim 8, vocab 300, tied embedding and lm_head, torch_dtype bfloat16\n",
		fmt.Sprintf("ok   size: %d parameters, %d bytes (", n, 4*n),
		fmt.Sprintf("ok   weights: model.safetensors.index.json: 3 shards, 24 tensors, BF16, %d bytes; every tensor config.json implies, with its shape, and no other\n", 2*n),
		`ok   tokenizer: tokenizer.json: 265 tokens (vocab_size 300); tokenizer_config.json: eos "<|im_end|>", bos null, pad "<|endoftext|>"` + "\n",
		"ok   chat template: none in tokenizer_config.json: prompts are rendered with Qwen3's (thinking off)\n",
		`ok   adapter: LoRA r 2, lora_alpha 4 (rsLoRA, scale α/√r = 2.828) on q_proj k_proj v_proj o_proj gate_proj up_proj down_proj in all 2 layers; adapter_model.safetensors: 28 tensors, BF16; base_model_name_or_path "tiny/qwen3"` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no line %q", want)
		}
	}
	if !strings.HasSuffix(out, "supported: the model folder and the adapter can be loaded by gpu/qwen3\n") || strings.Contains(out, "FAIL") {
		t.Errorf("not supported:\n%s", out)
	}
	single := qwen3test.Folder(t, cfg, 1, qwen3.F32, 1)
	if out, err := run(t, "", "lm", "check", "--model", single); err != nil || !strings.Contains(out, "ok   weights: model.safetensors (single file), 24 tensors, F32") ||
		strings.Contains(out, "adapter") || !strings.HasSuffix(out, "supported: the model folder can be loaded by gpu/qwen3\n") {
		t.Errorf("single file: %v\n%s", err, out)
	}
}

// What is not supported: one FAIL line per problem naming the file, the field and the value, a
// non-zero exit; checks that need the refused config.json say skip; the folder's text is escaped.
func TestLMCheckRefuses(t *testing.T) {
	cfg := qwen3test.Config()
	for _, c := range []struct {
		name    string
		model   func(dir string)
		adapter func(dir string)
		want    []string
		fails   int
	}{
		{"moe", func(dir string) {
			editJSON(t, filepath.Join(dir, qwen3.ConfigFile), func(d map[string]any) { d["model_type"] = "qwen3_moe" })
		}, nil, []string{`FAIL config: MODEL/config.json: model_type: "qwen3_moe" is not implemented (only "qwen3", the dense model)`,
			"skip weights: model.safetensors (single file), 24 tensors, F32", "ok   tokenizer: ", "skip adapter: needs a supported config.json"}, 1},
		{"dora", nil, func(dir string) {
			editJSON(t, filepath.Join(dir, qwen3.AdapterConfigFile), func(d map[string]any) { d["use_dora"] = true })
		}, []string{"ok   config: ", "FAIL adapter: ADAPTER/adapter_config.json: use_dora: true is not implemented (DoRA: only plain LoRA)"}, 1},
		{"template and tensor", func(dir string) {
			editJSON(t, filepath.Join(dir, qwen3.TokenizerConfigFile), func(d map[string]any) { d["chat_template"] = "{{ messages }}" })
			ts, _, err := qwen3.ReadSafetensors(filepath.Join(dir, qwen3.SingleFile))
			if err != nil {
				t.Fatal(err)
			}
			delete(ts, "model.layers.1.mlp.up_proj.weight")
			if err := qwen3.WriteSafetensors(filepath.Join(dir, qwen3.SingleFile), ts, qwen3.F32, nil); err != nil {
				t.Fatal(err)
			}
		}, nil, []string{"FAIL weights: MODEL/model.safetensors: model.layers.1.mlp.up_proj.weight: missing (config.json asks for it, shape [24 16])",
			"FAIL chat template: tokenizer_config.json: chat_template: sha256 ", "ok   adapter: "}, 2},
		{"escaped", func(dir string) {
			editJSON(t, filepath.Join(dir, qwen3.ConfigFile), func(d map[string]any) { d["hidden_act"] = "gelu\x1b[2J\r" })
		}, nil, []string{`FAIL config: MODEL/config.json: hidden_act: "gelu\x1b[2J\r" is not implemented`}, 1},
	} {
		model := qwen3test.Folder(t, cfg, 1, qwen3.F32, 1)
		adapter, _ := qwen3test.AdapterFolder(t, cfg, qwen3test.LoRAConfig(), 2, qwen3.F32)
		if c.model != nil {
			c.model(model)
		}
		if c.adapter != nil {
			c.adapter(adapter)
		}
		out, err := run(t, "", "lm", "check", "--model", model, "--adapter", adapter)
		t.Logf("%s:\n%s", c.name, out)
		if want := fmt.Sprintf("lm check: %d problem(s) (the FAIL lines above)", c.fails); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q\n%s", c.name, err, want, out)
		}
		if n := strings.Count(out, "FAIL "); n != c.fails || strings.Contains(out, "supported:") {
			t.Errorf("%s: %d FAIL lines, want %d\n%s", c.name, n, c.fails, out)
		}
		if i, ok := rawControl(out); ok {
			t.Errorf("%s: control character %q at %d in\n%q", c.name, out[i], i, out)
		}
		for _, want := range c.want {
			want = strings.NewReplacer("MODEL", model, "ADAPTER", adapter).Replace(want)
			if !strings.Contains(out, want) {
				t.Errorf("%s: no line %q in\n%s", c.name, want, out)
			}
		}
	}
	// A path is printed as the folder names it: escaped.
	model := qwen3test.Folder(t, cfg, 1, qwen3.F32, 1)
	out, err := run(t, "", "lm", "check", "--model", model, "--adapter", filepath.Join(t.TempDir(), "ad\x1b[2Japter"))
	if i, ok := rawControl(out); ok || err == nil || !strings.Contains(out, `FAIL adapter: open `) || !strings.Contains(out, `ad\x1b[2Japter/adapter_config.json: no such file or directory`) {
		t.Errorf("raw control character at %d, or no FAIL line: %v\n%q", i, err, out)
	}
	if _, err := run(t, "", "lm", "check"); err == nil || !strings.Contains(err.Error(), `"model" not set`) {
		t.Errorf("no --model: %v", err)
	}
}

// lm score on a tiny folder and adapter: one line per action with log ρ and log θ, whose
// probabilities each sum to 1, θ moved off ρ by the adapter, float32 within 1e-4 of float64, and
// one prefill for the decision; a repeated action, no action and a missing file are refused
// naming the file (and the lines).
func TestLMScore(t *testing.T) {
	cfg := qwen3test.Config()
	model := qwen3test.Folder(t, cfg, 1, qwen3.F32, 1)
	adapter, _ := qwen3test.AdapterFolder(t, cfg, qwen3test.LoRAConfig(), 2, qwen3.F32)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	prompt := write("prompt.txt", "Task: add the first agent.\nLegal actions follow.")
	actions := write("actions.txt", "{\"op\":\"ADD_AGENT\",\"role\":\"solver\"}\r\n{\"op\":\"ADD_AGENT\",\"role\":\"verifier\"}\n\n{\"op\":\"STOP\"}\n")
	scores := func(dtype string) (rho, theta []float64, out string) {
		out, err := run(t, "", "lm", "score", "--model", model, "--adapter", adapter, "--prompt", prompt, "--actions", actions, "--dtype", dtype)
		if err != nil {
			t.Fatalf("lm score --dtype %s: %v\n%s", dtype, err, out)
		}
		for _, l := range strings.Split(out, "\n") {
			var i int
			var r, th float64
			if n, _ := fmt.Sscanf(l, "%d %g %g", &i, &r, &th); n == 3 {
				rho, theta = append(rho, r), append(theta, th)
			}
		}
		return rho, theta, out
	}
	rho, theta, out := scores("float64")
	t.Logf("lm score:\n%s", out)
	if len(rho) != 3 || !strings.Contains(out, "; 3 actions; forward calls of ρ: 1 prefill,") || !strings.Contains(out, `{"op":"STOP"}`) {
		t.Fatalf("want 3 actions, one prefill:\n%s", out)
	}
	sum := func(lp []float64) (s float64) {
		for _, v := range lp {
			s += math.Exp(v)
		}
		return s
	}
	if math.Abs(sum(rho)-1) > 1e-5 || math.Abs(sum(theta)-1) > 1e-5 {
		t.Errorf("probabilities sum to %v (ρ) and %v (θ), want 1", sum(rho), sum(theta))
	}
	if slices.Equal(rho, theta) {
		t.Error("the adapter did not move θ off ρ")
	}
	rho32, theta32, _ := scores("float32")
	for i := range rho {
		if math.Abs(rho32[i]-rho[i]) > 1e-4 || math.Abs(theta32[i]-theta[i]) > 1e-4 {
			t.Errorf("action %d: float32 %v %v, float64 %v %v", i, rho32[i], theta32[i], rho[i], theta[i])
		}
	}
	for _, c := range []struct{ actions, want string }{
		{write("twice.txt", "{\"op\":\"STOP\"}\nA\n{\"op\":\"STOP\"}\n"), "twice.txt:3: the action of line 1 again"},
		{write("none.txt", "\n\n"), "none.txt: no action"},
		{filepath.Join(dir, "absent.txt"), "absent.txt: no such file"},
	} {
		if out, err := run(t, "", "lm", "score", "--model", model, "--prompt", prompt, "--actions", c.actions); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--actions %s: %v, want %q\n%s", c.actions, err, c.want, out)
		}
	}
}

// `evosteer lm random` writes a folder that gpu/qwen3 opens and `lm check` supports: the tests'
// QwenVocab shape by default, Qwen3's tokenizer, qwen3test's weights for the seed; the same flags
// write the same bytes; nothing temporary is left beside it.
func TestLMRandom(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "model")
	out, err := run(t, "", "lm", "random", "--out", dir, "--seed", "7")
	if err != nil {
		t.Fatalf("lm random: %v\n%s", err, out)
	}
	cfg := qwen3test.QwenVocab()
	n, _ := cfg.ParamCount()
	if want := fmt.Sprintf("wrote %s: a random Qwen3 (2 layers, hidden 32, 1 heads / 1 kv heads, head_dim 16, MLP 64, tied; vocab 151936) of %d parameters, F32 weights (seed 7, std 0.3), and Qwen3's tokenizer\n", dir, n); out != want {
		t.Errorf("lm random said\n%s\nwant\n%s", out, want)
	}
	f, err := qwen3.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := f.Config
	if got.VocabSize != cfg.VocabSize || got.HiddenSize != cfg.HiddenSize || got.NumHiddenLayers != cfg.NumHiddenLayers || got.IntermediateSize != cfg.IntermediateSize ||
		got.NumAttentionHeads != cfg.NumAttentionHeads || got.NumKeyValueHeads != cfg.NumKeyValueHeads || got.HeadDim != cfg.HeadDim || !got.TieWordEmbeddings {
		t.Errorf("config %+v, want QwenVocab's %+v", got, cfg)
	}
	want := qwen3test.Weights(cfg, 7)
	if !slices.Equal(f.Weights.Embed.Data, want.Embed.Data) || !slices.Equal(f.Weights.Layers[1].DownProj.Data, want.Layers[1].DownProj.Data) {
		t.Error("the weights are not qwen3test.Weights(QwenVocab(), seed)")
	}
	if f.Tokenizer.VocabSize() != 151669 {
		t.Errorf("tokenizer of %d tokens, want Qwen3's 151669", f.Tokenizer.VocabSize())
	}
	if out, err := run(t, "", "lm", "check", "--model", dir); err != nil || !strings.HasSuffix(out, "supported: the model folder can be loaded by gpu/qwen3\n") ||
		!strings.Contains(out, "ok   chat template: Qwen3's") {
		t.Errorf("lm check: %v\n%s", err, out)
	}
	again := filepath.Join(parent, "again")
	if out, err := run(t, "", "lm", "random", "--out", again, "--seed", "7"); err != nil {
		t.Fatalf("lm random again: %v\n%s", err, out)
	}
	for _, name := range []string{qwen3.ConfigFile, qwen3.SingleFile, qwen3.TokenizerFile, qwen3.TokenizerConfigFile} {
		if a, b := readFile(t, filepath.Join(dir, name)), readFile(t, filepath.Join(again, name)); a != b {
			t.Errorf("%s differs between two runs of the same flags", name)
		}
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 2 {
		t.Errorf("beside the folders: %v", entries)
	}

	// Another shape, untied, in BF16.
	other := filepath.Join(parent, "other")
	if out, err := run(t, "", "lm", "random", "--out", other, "--layers", "1", "--hidden", "16", "--heads", "4", "--kv-heads", "2",
		"--head-dim", "8", "--intermediate", "24", "--tied=false", "--dtype", "BF16", "--std", "0.1"); err != nil {
		t.Fatalf("lm random: %v\n%s", err, out)
	}
	if out, err := run(t, "", "lm", "check", "--model", other); err != nil ||
		!strings.Contains(out, "ok   config: model_type qwen3 (Qwen3ForCausalLM): 1 layers, hidden 16, intermediate 24, 4 heads / 2 kv heads, head_dim 8, vocab 151936, untied embedding and lm_head, torch_dtype bfloat16\n") {
		t.Errorf("lm check of another shape: %v\n%s", err, out)
	}
}

// What `lm random` refuses, with the flag or the folder named, writing nothing: a non-empty
// folder (without --force), with --force a folder holding anything but a random model's files,
// and flags that give no model.
func TestLMRandomRefuses(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "model")
	if out, err := run(t, "", "lm", "random", "--out", dir); err != nil {
		t.Fatalf("lm random: %v\n%s", err, out)
	}
	before := readFile(t, filepath.Join(dir, qwen3.SingleFile))
	if _, err := run(t, "", "lm", "random", "--out", dir, "--seed", "2"); err == nil || !strings.Contains(err.Error(), dir+` exists and is not empty (it holds "config.json"): give a new or empty folder, or --force`) {
		t.Errorf("a second write without --force: %v", err)
	}
	if readFile(t, filepath.Join(dir, qwen3.SingleFile)) != before {
		t.Error("a refused write changed the folder")
	}
	if out, err := run(t, "", "lm", "random", "--out", dir, "--seed", "2", "--force"); err != nil {
		t.Fatalf("--force: %v\n%s", err, out)
	}
	if readFile(t, filepath.Join(dir, qwen3.SingleFile)) == before {
		t.Error("--force --seed 2 left seed 1's weights")
	}

	mine := filepath.Join(parent, "mine")
	if err := os.Mkdir(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mine, "notes.txt"), "mine\n")
	if _, err := run(t, "", "lm", "random", "--out", mine, "--force"); err == nil || !strings.Contains(err.Error(), `holds "notes.txt", which a random model folder does not`) {
		t.Errorf("--force on a folder of other files: %v", err)
	}
	if readFile(t, filepath.Join(mine, "notes.txt")) != "mine\n" {
		t.Error("--force touched a folder of other files")
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, `required flag(s) "out" not set`},
		{[]string{"--out", ""}, "--out is empty"},
		{[]string{"--layers", "0"}, "--layers 0: must be positive"},
		{[]string{"--hidden", "-4"}, "--hidden -4: must be positive"},
		{[]string{"--heads", "4", "--kv-heads", "3"}, "--kv-heads 3 does not divide --heads 4"},
		{[]string{"--head-dim", "15"}, "--head-dim 15: must be even"},
		{[]string{"--std", "0"}, "--std 0: must be a positive finite number"},
		{[]string{"--std", "NaN"}, "--std NaN: must be a positive finite number"},
		{[]string{"--std", "-1"}, "--std -1: must be a positive finite number"},
		{[]string{"--dtype", "F64"}, `--dtype "F64": not one of F32, BF16, F16`},
		{[]string{"--layers", "x"}, `invalid argument "x" for "--layers"`},
		{[]string{"--hidden", "1000000", "--intermediate", "1000000"}, "the flags' shape would be refused: config.json: "},
	} {
		out := filepath.Join(parent, "bad")
		args := append([]string{"lm", "random"}, c.args...)
		if !slices.Contains(c.args, "--out") && c.args != nil {
			args = append(args, "--out", out)
		}
		if _, err := run(t, "", args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%v: wrote %s", c.args, out)
		}
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 2 {
		t.Errorf("left beside the folders: %v", entries)
	}
}
