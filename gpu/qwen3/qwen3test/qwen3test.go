// Package qwen3test builds the fixtures of gpu/qwen3's tests: tiny random Qwen3 model folders
// (config.json, safetensors weights, a tiny byte-level tokenizer.json and tokenizer_config.json)
// in a test's temporary folder. No weights can be downloaded where this is built, so a random
// model of the real architecture is what the tests run.
//
// Only tests import it (layering_test.go's testOnly).
package qwen3test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/evosteer/evosteer-go/gpu/qwen3"
)

// Config is a tiny Qwen3: 2 layers, hidden 16, 4 query heads over 2 key/value heads of width 8
// (so heads·head_dim = 32 ≠ hidden, as in Qwen3-0.6B), MLP 24, a vocabulary of 300 (the tiny
// tokenizer's 265 tokens and padding, as Qwen3's vocab_size exceeds its tokenizer), tied.
func Config() qwen3.Config {
	eos := 264
	return qwen3.Config{
		Architectures: []string{"Qwen3ForCausalLM"}, ModelType: "qwen3",
		VocabSize: 300, HiddenSize: 16, IntermediateSize: 24, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 8, HiddenAct: "silu",
		MaxPositionEmbeddings: 256, RMSNormEps: 1e-6, RopeTheta: 10000, TieWordEmbeddings: true,
		EOSTokenID: eos,
	}
}

// Weights are cfg's seeded random weights (std qwen3.RandomStd, 0.3: large enough that every part
// of the forward moves the logits).
func Weights(cfg qwen3.Config, seed uint64) qwen3.Weights {
	return qwen3.RandomWeights(cfg, seed, qwen3.RandomStd)
}

// Folder writes a model folder of cfg with Weights(cfg, seed) in dtype (shards > 1: a sharded
// checkpoint) and the tiny tokenizer into a new temporary folder of t, and returns it.
func Folder(t testing.TB, cfg qwen3.Config, seed uint64, dtype qwen3.DType, shards int) string {
	t.Helper()
	dir := t.TempDir()
	if err := qwen3.WriteShardedFolder(dir, cfg, Weights(cfg, seed), dtype, shards); err != nil {
		t.Fatal(err)
	}
	WriteTokenizer(t, dir)
	return dir
}

// LoRAConfig is a small adapter shape: rank 2, α 4, every projection, rsLoRA (so that the scale
// α/√r differs from α/r, and a slip between the two shows).
func LoRAConfig() qwen3.LoRAConfig {
	return qwen3.LoRAConfig{Rank: 2, Alpha: 4, TargetModules: slices.Clone(qwen3.ModuleNames), RSLoRA: true}
}

// Adapter is qwen3.NewAdapter(cfg, lcfg, seed) with every B drawn N(0, 0.3²) instead of zero,
// so that the adapter moves the logits (a freshly initialised one changes nothing).
func Adapter(t testing.TB, cfg qwen3.Config, lcfg qwen3.LoRAConfig, seed uint64) qwen3.Adapter {
	t.Helper()
	a, err := qwen3.NewAdapter(cfg, lcfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	for _, layer := range a.Layers {
		for _, m := range qwen3.ModuleNames {
			if p, ok := layer[m]; ok {
				for i := range p.B.Data {
					p.B.Data[i] = float32(0.3 * rng.NormFloat64())
				}
			}
		}
	}
	return *a
}

// AdapterFolder writes Adapter(cfg, lcfg, seed) as a PEFT adapter folder in dtype into a new
// temporary folder of t, and returns it with the adapter as written (before any rounding).
func AdapterFolder(t testing.TB, cfg qwen3.Config, lcfg qwen3.LoRAConfig, seed uint64, dtype qwen3.DType) (string, qwen3.Adapter) {
	t.Helper()
	a := Adapter(t, cfg, lcfg, seed)
	dir := filepath.Join(t.TempDir(), "adapter")
	if err := qwen3.WriteAdapterDType(dir, cfg, a, "tiny/qwen3", dtype); err != nil {
		t.Fatal(err)
	}
	return dir, a
}

// WriteTokenizer writes the tiny tokenizer's tokenizer.json and tokenizer_config.json into dir.
func WriteTokenizer(t testing.TB, dir string) {
	t.Helper()
	for name, doc := range map[string]any{qwen3.TokenizerFile: Tokenizer(), qwen3.TokenizerConfigFile: TokenizerConfig()} {
		data, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ByteLevel is the character of byte b in the byte-level alphabet (GPT-2's, which Qwen's
// tokenizer uses).
func ByteLevel(b byte) string {
	n := 0
	for c := range 256 {
		printable := c >= '!' && c <= '~' || c >= 0xA1 && c <= 0xAC || c >= 0xAE
		if c == int(b) {
			if printable {
				return string(rune(c))
			}
			return string(rune(256 + n))
		}
		if !printable {
			n++
		}
	}
	panic("unreachable")
}

// Tokenizer is a tiny byte-level BPE tokenizer.json as a map (edit it to make a bad file): the 256
// bytes (id = the byte), six merges (ids 256…261) and Qwen's three special tokens
// <|endoftext|> 262, <|im_start|> 263, <|im_end|> 264.
func Tokenizer() map[string]any {
	vocab := map[string]any{}
	for b := range 256 {
		vocab[ByteLevel(byte(b))] = b
	}
	sp := ByteLevel(' ')
	for i, tok := range []string{sp + "t", "he", sp + "the", "ll", "hell", "hello"} {
		vocab[tok] = 256 + i
	}
	var added []any
	for i, s := range []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"} {
		added = append(added, map[string]any{"id": 262 + i, "content": s, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true})
	}
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": true}
	return map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer": map[string]any{"type": "NFC"}, "pre_tokenizer": byteLevel,
		"post_processor": byteLevel, "decoder": byteLevel,
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "", "end_of_word_suffix": "",
			"fuse_unk": false, "byte_fallback": false, "ignore_merges": false, "vocab": vocab,
			"merges": []any{sp + " t", "h e", sp + "t he", "l l", "he ll", "hell o"},
		},
	}
}

// TokenizerConfig is the tiny tokenizer's tokenizer_config.json (no chat template).
func TokenizerConfig() map[string]any {
	return map[string]any{"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "bos_token": nil}
}

// QwenVocab is a tiny Qwen3 with Qwen3's own vocabulary, read by the real tokenizer (qwen3tok):
// qwen3.TinyShape (2 layers, hidden 32, one query head over one key/value head of width 16, MLP
// 64, tied), eos <|im_end|>; the shape `evosteer lm random` writes by default.
func QwenVocab() qwen3.Config { return qwen3.QwenVocabConfig(qwen3.TinyShape()) }

// QwenFolder writes a model folder of cfg (QwenVocab's vocabulary) with Weights(cfg, seed) in F32
// and Qwen3's tokenizer into a new temporary folder of t (qwen3.WriteRandomFolder, as
// `evosteer lm random` does), and returns it.
func QwenFolder(t testing.TB, cfg qwen3.Config, seed uint64) string {
	t.Helper()
	dir := t.TempDir()
	if err := qwen3.WriteRandomFolder(dir, cfg, seed, qwen3.RandomStd, qwen3.F32, false); err != nil {
		t.Fatal(err)
	}
	return dir
}
