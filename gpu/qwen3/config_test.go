package qwen3_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/gpu/qwen3"
	"github.com/evosteer/evosteer-go/gpu/qwen3/qwen3test"
)

// configDoc is the tiny config as a JSON map, to edit into a bad one.
func configDoc(t *testing.T) map[string]any {
	t.Helper()
	data, err := json.Marshal(qwen3test.Config())
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func writeConfig(t *testing.T, doc map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, qwen3.ConfigFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A real Qwen3 config.json (Qwen3-0.6B's fields, with the many unknown ones HF writes) reads, and
// optional fields take Hugging Face's defaults.
func TestReadConfig(t *testing.T) {
	const qwen06b = `{"architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
	 "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024,
	 "initializer_range": 0.02, "intermediate_size": 3072, "max_position_embeddings": 40960, "max_window_layers": 28,
	 "model_type": "qwen3", "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
	 "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null,
	 "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true,
	 "use_sliding_window": false, "vocab_size": 151936}`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(qwen06b), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := qwen3.ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QDim() != 2048 || cfg.KVDim() != 1024 || cfg.RopeTheta != 1e6 || !cfg.TieWordEmbeddings {
		t.Errorf("read %+v", cfg)
	}
	n, ok := cfg.ParamCount()
	if !ok || n != 596_049_920 { // Qwen3-0.6B's published count (tied): 0.6 B
		t.Errorf("ParamCount = %d, %v", n, ok)
	}

	doc := configDoc(t)
	delete(doc, "num_key_value_heads")
	delete(doc, "hidden_act")
	delete(doc, "rope_theta")
	doc["rope_parameters"] = map[string]any{"rope_type": "default", "rope_theta": 5e5}
	doc["dtype"] = "bfloat16"
	delete(doc, "torch_dtype")
	cfg, err = qwen3.ReadConfig(writeConfig(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NumKeyValueHeads != cfg.NumAttentionHeads || cfg.HiddenAct != "silu" || cfg.RopeTheta != 5e5 || cfg.TorchDtype != "bfloat16" {
		t.Errorf("defaults: %+v", cfg)
	}
}

// Each configuration not implemented, and each bad size, is refused naming the file, the field
// and its value.
func TestConfigRefusals(t *testing.T) {
	for _, c := range []struct {
		field string
		value any
		want  string
	}{
		{"model_type", "qwen3_moe", `model_type: "qwen3_moe" is not implemented`},
		{"model_type", "qwen2", `model_type: "qwen2" is not implemented`},
		{"architectures", []string{"Qwen3ForSequenceClassification"}, `architectures: ["Qwen3ForSequenceClassification"] is not implemented`},
		{"num_experts", 8, "num_experts: 8 is not implemented"},
		{"use_sliding_window", true, "use_sliding_window: true is not implemented"},
		{"rope_scaling", map[string]any{"rope_type": "yarn", "factor": 4}, `rope_scaling: {"factor":4,"rope_type":"yarn"} is not implemented`},
		{"rope_scaling", map[string]any{"type": "linear", "factor": 2}, `rope_scaling: {"factor":2,"type":"linear"} is not implemented`},
		{"rope_parameters", map[string]any{"rope_type": "llama3", "rope_theta": 10000}, `rope_parameters: {"rope_theta":10000,"rope_type":"llama3"} is not implemented`},
		{"rope_parameters", map[string]any{"rope_type": "default", "rope_theta": 20000}, "rope_parameters.rope_theta: 20000 disagrees with rope_theta 10000"},
		{"hidden_act", "gelu", `hidden_act: "gelu" is not implemented`},
		{"attention_bias", true, "attention_bias: true is not implemented"},
		{"quantization_config", map[string]any{"quant_method": "awq"}, `quantization_config: {"quant_method":"awq"} is not implemented`},
		{"layer_types", []string{"full_attention", "sliding_attention"}, `layer_types[1]: "sliding_attention" is not implemented`},
		{"layer_types", []string{"full_attention"}, "layer_types: [\"full_attention\"] has 1 entries for num_hidden_layers 2"},
		{"hidden_size", 0, "hidden_size: 0 is not positive"},
		{"num_hidden_layers", -1, "num_hidden_layers: -1 is not positive"},
		{"num_key_value_heads", 3, "num_key_value_heads: 3 does not divide num_attention_heads 4"},
		{"head_dim", 7, "head_dim: 7 is odd"},
		{"rms_norm_eps", 0, "rms_norm_eps: 0 is not a positive finite number"},
		{"rope_theta", 0.5, "rope_theta: 0.5 is not a finite number above 1"},
		{"torch_dtype", "float8_e4m3fn", `torch_dtype: "float8_e4m3fn" is not implemented`},
		{"bos_token_id", 300, "bos_token_id: 300 is outside the vocabulary [0, 300)"},
		{"eos_token_id", []any{264, 999}, "eos_token_id: [264,999] holds 999, outside the vocabulary"},
		{"eos_token_id", "x", `eos_token_id: "x" is not an id or a list of ids`},
		{"hidden_size", "16", "config.json: json: cannot unmarshal string into Go struct field Config.hidden_size of type int"},
		{"head_dim", nil, "head_dim: absent (required)"},
	} {
		doc := configDoc(t)
		doc[c.field] = c.value
		dir := writeConfig(t, doc)
		_, err := qwen3.ReadConfig(dir)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "config.json")+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %v: error %v, want one naming the file and saying %q", c.field, c.value, err, c.want)
		}
	}
	// sliding_window's value is ignored while use_sliding_window is false (as transformers does).
	doc := configDoc(t)
	doc["sliding_window"] = 4096
	if _, err := qwen3.ReadConfig(writeConfig(t, doc)); err != nil {
		t.Errorf("sliding_window 4096 with use_sliding_window false: %v", err)
	}
	if _, err := qwen3.ReadConfig(t.TempDir()); err == nil || !strings.Contains(err.Error(), "config.json: no such file") {
		t.Errorf("absent config.json: %v", err)
	}
}

// Sizes whose weights would not fit are refused before anything is allocated, naming the count.
func TestConfigMemoryBound(t *testing.T) {
	cfg := qwen3test.Config() // 2·(300·16) … = a few thousand parameters
	n, _ := cfg.ParamCount()
	if err := (qwen3.Limits{MaxWeightBytes: 4 * n}).Validate(cfg); err != nil {
		t.Errorf("at the bound: %v", err)
	}
	err := qwen3.Limits{MaxWeightBytes: 4*n - 1}.Validate(cfg)
	if err == nil || !strings.Contains(err.Error(), "config.json: the sizes") || !strings.Contains(err.Error(), " make ") {
		t.Errorf("past the bound: %v", err)
	}
	huge := qwen3test.Config()
	huge.VocabSize, huge.HiddenSize = 1<<40, 1<<30 // overflows int64 products
	if err := huge.Validate(); err == nil || !strings.Contains(err.Error(), "more than 2^63 parameters") {
		t.Errorf("overflowing sizes: %v", err)
	}
	big := qwen3test.Config()
	big.VocabSize, big.HiddenSize, big.IntermediateSize, big.NumHiddenLayers = 151936, 16384, 65536, 400
	if err := big.Validate(); err == nil || !strings.Contains(err.Error(), "parameters, past the bound") {
		t.Errorf("a 1.3T model on this machine: %v", err)
	}
}
