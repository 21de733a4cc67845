package qwen3_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/gpu/qwen3"
	"github.com/evosteer/evosteer-go/gpu/qwen3/qwen3test"
)

func equalWeights(t *testing.T, got, want qwen3.Weights) {
	t.Helper()
	eq := func(name string, a, b qwen3.Tensor) {
		if !slices.Equal(a.Shape, b.Shape) || !slices.Equal(a.Data, b.Data) {
			t.Errorf("%s differs: shape %v, want %v", name, a.Shape, b.Shape)
		}
	}
	eq("embed", got.Embed, want.Embed)
	eq("norm", got.Norm, want.Norm)
	eq("lm_head", got.LMHead, want.LMHead)
	if len(got.Layers) != len(want.Layers) {
		t.Fatalf("%d layers, want %d", len(got.Layers), len(want.Layers))
	}
	for i := range got.Layers {
		g, w := got.Layers[i], want.Layers[i]
		for _, p := range [][3]any{{"input_layernorm", g.InputNorm, w.InputNorm}, {"q", g.QProj, w.QProj}, {"k", g.KProj, w.KProj},
			{"v", g.VProj, w.VProj}, {"o", g.OProj, w.OProj}, {"q_norm", g.QNorm, w.QNorm}, {"k_norm", g.KNorm, w.KNorm},
			{"post", g.PostAttnNorm, w.PostAttnNorm}, {"gate", g.GateProj, w.GateProj}, {"up", g.UpProj, w.UpProj}, {"down", g.DownProj, w.DownProj}} {
			eq(p[0].(string), p[1].(qwen3.Tensor), p[2].(qwen3.Tensor))
		}
	}
}

// A written folder reads back exactly in F32, single or sharded, tied or not, and Open reads the
// tokenizer beside it.
func TestFolderRoundTrip(t *testing.T) {
	for _, tied := range []bool{true, false} {
		for _, shards := range []int{1, 3} {
			cfg := qwen3test.Config()
			cfg.TieWordEmbeddings = tied
			dir := qwen3test.Folder(t, cfg, 7, qwen3.F32, shards)
			m, err := qwen3.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			equalWeights(t, m.Weights, qwen3test.Weights(cfg, 7))
			if tied && &m.Weights.LMHead.Data[0] != &m.Weights.Embed.Data[0] {
				t.Error("tied: lm_head is not the embedding")
			}
			if ids, err := m.Tokenizer.Encode("hello the"); err != nil || !slices.Equal(ids, []int{261, 258}) {
				t.Errorf("tokenizer: %v %v", ids, err)
			}
			if m.TokenizerConfig.EOS != "<|im_end|>" || m.Config.TorchDtype != "float32" {
				t.Errorf("read %+v %+v", m.TokenizerConfig, m.Config)
			}
			_, hasIndex := os.Stat(filepath.Join(dir, qwen3.IndexFile))
			if (hasIndex == nil) != (shards > 1) {
				t.Errorf("shards %d: index present %v", shards, hasIndex == nil)
			}
		}
	}
	// BF16 weights read back as the bf16 rounding of what was written (within 2^-8 relative).
	cfg := qwen3test.Config()
	dir := qwen3test.Folder(t, cfg, 7, qwen3.BF16, 1)
	w, err := qwen3.ReadWeights(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := qwen3test.Weights(cfg, 7)
	for i, v := range want.Layers[1].DownProj.Data {
		if d := w.Layers[1].DownProj.Data[i] - v; d > abs(v)/256 || -d > abs(v)/256 {
			t.Fatalf("bf16 down_proj[%d] = %v, wrote %v", i, w.Layers[1].DownProj.Data[i], v)
		}
	}
}

// tensors reads a folder's model.safetensors to edit it.
func tensors(t *testing.T, dir string) map[string]qwen3.Tensor {
	t.Helper()
	ts, _, err := qwen3.ReadSafetensors(filepath.Join(dir, qwen3.SingleFile))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func rewrite(t *testing.T, path string, ts map[string]qwen3.Tensor) {
	t.Helper()
	if err := qwen3.WriteSafetensors(path, ts, qwen3.F32, nil); err != nil {
		t.Fatal(err)
	}
}

// Missing, extra and misshapen tensors are refused naming the file and the tensor; the rotary
// inv_freq buffers are ignored, and a tied lm_head.weight equal to the embedding is accepted.
func TestWeightsRefusals(t *testing.T) {
	cfg := qwen3test.Config()
	base := qwen3test.Folder(t, cfg, 3, qwen3.F32, 1)
	single := filepath.Join(base, qwen3.SingleFile)
	orig := tensors(t, base)
	for _, c := range []struct {
		what string
		edit func(map[string]qwen3.Tensor)
		want string // "" accepts
	}{
		{"missing", func(ts map[string]qwen3.Tensor) { delete(ts, "model.layers.1.self_attn.k_norm.weight") },
			single + ": model.layers.1.self_attn.k_norm.weight: missing (config.json asks for it, shape [8])"},
		{"extra", func(ts map[string]qwen3.Tensor) {
			ts["model.layers.2.mlp.up_proj.weight"] = ts["model.layers.1.mlp.up_proj.weight"]
		},
			single + ": model.layers.2.mlp.up_proj.weight: an extra tensor (shape [24 16]) that a 2-layer tied config.json does not have"},
		{"bias", func(ts map[string]qwen3.Tensor) {
			ts["model.layers.0.self_attn.q_proj.bias"] = qwen3.Tensor{Shape: []int{32}, Data: make([]float32, 32)}
		},
			"model.layers.0.self_attn.q_proj.bias: an extra tensor"},
		{"shape", func(ts map[string]qwen3.Tensor) {
			ts["model.layers.0.self_attn.q_proj.weight"] = qwen3.Tensor{Shape: []int{16, 32}, Data: ts["model.layers.0.self_attn.q_proj.weight"].Data}
		}, single + ": model.layers.0.self_attn.q_proj.weight: shape [16 32] disagrees with config.json, which gives [32 16]"},
		{"inv_freq", func(ts map[string]qwen3.Tensor) {
			ts["model.layers.0.self_attn.rotary_emb.inv_freq"] = qwen3.Tensor{Shape: []int{4}, Data: []float32{1, 0.1, 0.01, 0.001}}
		}, ""},
		{"tied head equal", func(ts map[string]qwen3.Tensor) { ts["lm_head.weight"] = ts["model.embed_tokens.weight"] }, ""},
		{"tied head differs", func(ts map[string]qwen3.Tensor) { ts["lm_head.weight"] = qwen3test.Weights(cfg, 4).Embed },
			single + ": lm_head.weight: differs from model.embed_tokens.weight, but config.json's tie_word_embeddings is true"},
	} {
		ts := map[string]qwen3.Tensor{}
		for k, v := range orig {
			ts[k] = v
		}
		c.edit(ts)
		rewrite(t, single, ts)
		w, err := qwen3.ReadWeights(base, cfg)
		if cerr := (qwen3.Limits{}).CheckWeights(base, cfg); (cerr == nil) != (err == nil) || err != nil && cerr.Error() != err.Error() {
			t.Errorf("%s: CheckWeights says %v, ReadWeights %v", c.what, cerr, err)
		}
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.what, err)
		case c.want == "" && w.Embed.Data == nil:
			t.Errorf("%s: no weights", c.what)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want %q", c.what, err, c.want)
		}
	}
	if _, err := qwen3.ReadWeights(t.TempDir(), cfg); err == nil || !strings.Contains(err.Error(), "neither model.safetensors nor model.safetensors.index.json") {
		t.Errorf("empty folder: %v", err)
	}
	// An untied config asks for lm_head.weight.
	untied := cfg
	untied.TieWordEmbeddings = false
	rewrite(t, single, orig)
	if _, err := qwen3.ReadWeights(base, untied); err == nil || !strings.Contains(err.Error(), "lm_head.weight: missing") {
		t.Errorf("untied without lm_head: %v", err)
	}
}

// InspectWeights summarises a folder's weight files from their headers: single or sharded, the
// tensors, their dtypes and bytes.
func TestInspectWeights(t *testing.T) {
	cfg := qwen3test.Config()
	for _, c := range []struct {
		shards int
		dtype  qwen3.DType
		files  []string
	}{{1, qwen3.BF16, []string{qwen3.SingleFile}}, {3, qwen3.F32, []string{"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"}}} {
		got, err := qwen3.InspectWeights(qwen3test.Folder(t, cfg, 1, c.dtype, c.shards))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := cfg.ParamCount()
		if !slices.Equal(got.Files, c.files) || got.Sharded != (c.shards > 1) || got.Tensors != 1+11*cfg.NumHiddenLayers+1 ||
			!slices.Equal(got.DTypes, []qwen3.DType{c.dtype}) || got.Bytes != n*int64(c.dtype.Size()) {
			t.Errorf("%d shards: %+v", c.shards, got)
		}
	}
}

// A sharded checkpoint's index must agree with its shards.
func TestShardedRefusals(t *testing.T) {
	cfg := qwen3test.Config()
	for _, c := range []struct {
		what string
		edit func(t *testing.T, dir string, weightMap map[string]string)
		want string
	}{
		{"missing shard", func(t *testing.T, dir string, wm map[string]string) {
			wm["model.norm.weight"] = "model-00009-of-00009.safetensors"
		}, `model.safetensors.index.json: weight_map["model.norm.weight"]: the shard model-00009-of-00009.safetensors does not exist`},
		{"path outside", func(t *testing.T, dir string, wm map[string]string) { wm["model.norm.weight"] = "../x.safetensors" },
			`weight_map["model.norm.weight"]: "../x.safetensors" is not a .safetensors file of the folder`},
		{"two shards", func(t *testing.T, dir string, wm map[string]string) {
			p := filepath.Join(dir, "model-00001-of-00003.safetensors")
			ts, _, _ := qwen3.ReadSafetensors(p)
			last, _, _ := qwen3.ReadSafetensors(filepath.Join(dir, "model-00003-of-00003.safetensors"))
			ts["model.norm.weight"] = last["model.norm.weight"]
			rewrite(t, p, ts)
		}, "model.norm.weight: the tensor is in two shards, model-00001-of-00003.safetensors and model-00003-of-00003.safetensors"},
		{"not in index", func(t *testing.T, dir string, wm map[string]string) { delete(wm, "model.norm.weight") },
			"model.norm.weight: the tensor of shard model-00003-of-00003.safetensors is not in weight_map"},
		{"wrong shard", func(t *testing.T, dir string, wm map[string]string) {
			wm["model.norm.weight"] = "model-00001-of-00003.safetensors"
		},
			`weight_map["model.norm.weight"]: names shard model-00001-of-00003.safetensors, but the tensor is in model-00003-of-00003.safetensors`},
		{"not held", func(t *testing.T, dir string, wm map[string]string) {
			wm["model.extra.weight"] = "model-00002-of-00003.safetensors"
		},
			`weight_map["model.extra.weight"]: the shard model-00002-of-00003.safetensors does not hold the tensor`},
		{"both layouts", func(t *testing.T, dir string, wm map[string]string) {
			_ = os.WriteFile(filepath.Join(dir, qwen3.SingleFile), nil, 0o644)
		}, "both model.safetensors and model.safetensors.index.json"},
	} {
		dir := qwen3test.Folder(t, cfg, 3, qwen3.F32, 3)
		indexPath := filepath.Join(dir, qwen3.IndexFile)
		var idx struct {
			Metadata  map[string]any    `json:"metadata"`
			WeightMap map[string]string `json:"weight_map"`
		}
		data, _ := os.ReadFile(indexPath)
		if err := json.Unmarshal(data, &idx); err != nil {
			t.Fatal(err)
		}
		c.edit(t, dir, idx.WeightMap)
		data, _ = json.Marshal(idx)
		_ = os.WriteFile(indexPath, data, 0o644)
		if _, err := qwen3.ReadWeights(dir, cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.what, err, c.want)
		}
	}
}

// Open refuses a tokenizer larger than the model's vocabulary, and checks the config before
// reading any weights.
func TestOpenRefusals(t *testing.T) {
	cfg := qwen3test.Config()
	cfg.VocabSize, cfg.EOSTokenID = 200, nil // the tiny tokenizer has 265 tokens
	dir := t.TempDir()
	if err := qwen3.WriteFolder(dir, cfg, qwen3.RandomWeights(cfg, 1, 0.1), qwen3.F32); err != nil {
		t.Fatal(err)
	}
	qwen3test.WriteTokenizer(t, dir)
	if _, err := qwen3.Open(dir); err == nil || !strings.Contains(err.Error(), "tokenizer.json: 265 tokens, more than config.json's vocab_size 200") {
		t.Errorf("small vocab: %v", err)
	}
	dir = qwen3test.Folder(t, qwen3test.Config(), 1, qwen3.BF16, 1)
	if _, err := (qwen3.Limits{MaxWeightBytes: 1000}).Open(dir); err == nil || !strings.Contains(err.Error(), "parameters, past the bound of 250") {
		t.Errorf("memory bound: %v", err)
	}
	_ = os.WriteFile(filepath.Join(dir, qwen3.TokenizerConfigFile), []byte(`{"eos_token": "<|nope|>"}`), 0o644)
	if _, err := qwen3.Open(dir); err == nil || !strings.Contains(err.Error(), `tokenizer_config.json: eos_token: "<|nope|>" is not a token of tokenizer.json`) {
		t.Errorf("unknown eos: %v", err)
	}
}
