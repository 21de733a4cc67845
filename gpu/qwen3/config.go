package qwen3

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// Config is the part of a Hugging Face config.json that the dense Qwen3 architecture reads
// (transformers' Qwen3Config). Fields the architecture does not implement are kept so that
// Validate can refuse a value other than the one implemented, naming it.
type Config struct {
	Architectures         []string `json:"architectures"`
	ModelType             string   `json:"model_type"`
	VocabSize             int      `json:"vocab_size"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	NumKeyValueHeads      int      `json:"num_key_value_heads"`
	HeadDim               int      `json:"head_dim"`
	HiddenAct             string   `json:"hidden_act"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	RMSNormEps            float64  `json:"rms_norm_eps"`
	RopeTheta             float64  `json:"rope_theta"`
	TieWordEmbeddings     bool     `json:"tie_word_embeddings"`
	AttentionBias         bool     `json:"attention_bias"`
	TorchDtype            string   `json:"torch_dtype"`
	BOSTokenID            *int     `json:"bos_token_id"`
	EOSTokenID            any      `json:"eos_token_id"` // an id or a list of ids

	// Refused unless absent, null or the implemented value.
	RopeScaling      any  `json:"rope_scaling"`
	UseSlidingWindow bool `json:"use_sliding_window"`
	SlidingWindow    any  `json:"sliding_window"`
	NumExperts       int  `json:"num_experts"`
	// RopeParameters is newer transformers' spelling of rope_theta and rope_scaling together
	// ({"rope_type": "default", "rope_theta": θ}); only rope_type "default" is implemented.
	RopeParameters map[string]any `json:"rope_parameters,omitempty"`
	// LayerTypes, when present, must name every layer "full_attention".
	LayerTypes []string `json:"layer_types,omitempty"`
	// QuantizationConfig is refused when present: the weights are read as plain floats.
	QuantizationConfig any `json:"quantization_config,omitempty"`

	file string // the file it was read from, for errors ("config.json" when built in memory)
}

// KVDim is the width of a layer's keys (and values): NumKeyValueHeads × HeadDim.
func (c Config) KVDim() int { return c.NumKeyValueHeads * c.HeadDim }

// QDim is the width of a layer's queries: NumAttentionHeads × HeadDim.
func (c Config) QDim() int { return c.NumAttentionHeads * c.HeadDim }

// ConfigFile is the configuration's name in a model folder.
const ConfigFile = "config.json"

// required are the fields config.json must hold: there is no default a checkpoint could mean
// (transformers' Qwen3Config defaults are Qwen3-8B's sizes and head_dim 128, which a file that
// omits them rarely means).
var required = []string{"model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
	"num_attention_heads", "head_dim", "rms_norm_eps"}

// ReadConfig reads and validates dir's config.json with the default Limits. Unknown fields are
// ignored (Hugging Face configs carry many: initializer_range, use_cache, transformers_version…);
// a known field of the wrong JSON type, a missing required field or a value Validate refuses is
// an error naming the file, the field and the value.
func ReadConfig(dir string) (Config, error) { return Limits{}.ReadConfig(dir) }

// ReadConfig is ReadConfig under l.
func (l Limits) ReadConfig(dir string) (Config, error) {
	path := filepath.Join(dir, ConfigFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("qwen3: %w", err)
	}
	c, err := ParseConfig(path, data)
	if err != nil {
		return Config{}, err
	}
	return c, l.Validate(c)
}

// ParseConfig parses the bytes of a config.json (path names it in errors) and fills Hugging
// Face's defaults for the optional fields (num_key_value_heads: the heads; hidden_act: silu;
// max_position_embeddings: 32768; rope_theta from rope_parameters). It does not validate.
func ParseConfig(path string, data []byte) (Config, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return Config{}, fmt.Errorf("qwen3: %s: not a JSON object: %v", path, err)
	}
	for _, f := range required {
		if v, ok := raw[f]; !ok || string(v) == "null" {
			return Config{}, fmt.Errorf("qwen3: %s: %s: absent (required)", path, f)
		}
	}
	c := Config{HiddenAct: "silu", MaxPositionEmbeddings: 32768, file: path}
	if err := json.Unmarshal(data, &c); err != nil {
		return Config{}, fmt.Errorf("qwen3: %s: %v", path, err)
	}
	if v, ok := raw["num_key_value_heads"]; !ok || string(v) == "null" {
		c.NumKeyValueHeads = c.NumAttentionHeads
	}
	if _, ok := raw["rope_theta"]; !ok {
		theta, ok := c.RopeParameters["rope_theta"].(float64)
		if !ok {
			return Config{}, fmt.Errorf("qwen3: %s: rope_theta: absent, and rope_parameters.rope_theta is %s (required)", path, show(c.RopeParameters["rope_theta"]))
		}
		c.RopeTheta = theta
	}
	if c.TorchDtype == "" {
		if v, ok := raw["dtype"]; ok { // newer transformers' name for torch_dtype
			_ = json.Unmarshal(v, &c.TorchDtype)
		}
	}
	return c, nil
}

// Limits bound what a configuration may ask of the machine.
type Limits struct {
	// MaxWeightBytes caps the weights' bytes in memory (float32, 4 bytes a parameter); 0 is half
	// the machine's physical memory (DefaultMaxWeightBytes).
	MaxWeightBytes int64
}

// DefaultMaxWeightBytes is half the machine's physical memory (Linux's MemTotal), or 8 GiB where
// it cannot be read: the float32 weights plus the mapped file being converted must fit.
func DefaultMaxWeightBytes() int64 {
	if total, ok := memTotal(); ok {
		return total / 2
	}
	return 8 << 30
}

func memTotal() (int64, bool) {
	if runtime.GOOS != "linux" {
		return 0, false
	}
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	for s := bufio.NewScanner(f); s.Scan(); {
		if rest, ok := strings.CutPrefix(s.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err == nil && kb > 0
		}
	}
	return 0, false
}

// ParamCount is the number of parameters cfg's weights hold (the tied head counted once), and
// false when it overflows int64. Validate's size checks come first.
func (c Config) ParamCount() (int64, bool) {
	var n sat
	h, q, kv, in, hd := int64(c.HiddenSize), int64(c.QDim()), int64(c.KVDim()), int64(c.IntermediateSize), int64(c.HeadDim)
	n.add(n.mul(int64(c.VocabSize), h))
	if !c.TieWordEmbeddings {
		n.add(n.mul(int64(c.VocabSize), h))
	}
	var layer sat
	layer.add(2 * h)                  // input and post-attention norms
	layer.add(2 * hd)                 // q_norm, k_norm
	layer.add(n.mul(2*q, h))          // q_proj, o_proj
	layer.add(n.mul(2*kv, h))         // k_proj, v_proj
	layer.add(n.mul(n.mul(3, in), h)) // gate, up, down
	n.add(n.mul(layer.v, int64(c.NumHiddenLayers)))
	n.ovf = n.ovf || layer.ovf
	n.add(h) // final norm
	return n.v, !n.ovf
}

// sat is int64 arithmetic that records an overflow.
type sat struct {
	v   int64
	ovf bool
}

func (s *sat) mul(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if a < 0 || b < 0 || hi != 0 || lo > math.MaxInt64 {
		s.ovf = true
		return math.MaxInt64
	}
	return int64(lo)
}

func (s *sat) add(a int64) {
	if a < 0 || s.v > math.MaxInt64-a {
		s.ovf = true
		s.v = math.MaxInt64
		return
	}
	s.v += a
}

// Validate checks c with the default Limits.
func (c Config) Validate() error { return Limits{}.Validate(c) }

// Validate refuses what the package does not implement and sizes that are not positive, do not
// fit together or whose weights would exceed l's memory bound, naming the file, the field and its
// value; it allocates nothing. Implemented: model_type qwen3, Qwen3ForCausalLM, silu, no attention
// biases (Qwen3 checkpoints have none; Layer holds none), full attention in every layer (no
// sliding window), the default rotary embedding (rope_scaling null or of rope_type "default"),
// no experts, no quantization.
func (l Limits) Validate(c Config) error {
	file := c.file
	if file == "" {
		file = ConfigFile
	}
	bad := func(field string, value any, why string) error {
		return fmt.Errorf("qwen3: %s: %s: %s %s", file, field, show(value), why)
	}
	switch {
	case c.ModelType != "qwen3":
		return bad("model_type", c.ModelType, `is not implemented (only "qwen3", the dense model)`)
	case c.Architectures != nil && !slices.Equal(c.Architectures, []string{"Qwen3ForCausalLM"}):
		return bad("architectures", c.Architectures, `is not implemented (only ["Qwen3ForCausalLM"])`)
	case c.NumExperts > 0:
		return bad("num_experts", c.NumExperts, "is not implemented (mixture of experts; only the dense model)")
	case c.UseSlidingWindow:
		return bad("use_sliding_window", true, "is not implemented (full attention only; sliding_window is ignored when this is false)")
	case c.HiddenAct != "silu":
		return bad("hidden_act", c.HiddenAct, `is not implemented (only "silu")`)
	case c.AttentionBias:
		return bad("attention_bias", true, "is not implemented (projections without biases, as Qwen3's)")
	case c.QuantizationConfig != nil:
		return bad("quantization_config", c.QuantizationConfig, "is not implemented (plain BF16/F16/F32 weights only)")
	}
	if err := ropeDefault(c.RopeScaling, "rope_scaling", bad); err != nil {
		return err
	}
	if c.RopeParameters != nil {
		if err := ropeDefault(c.RopeParameters, "rope_parameters", bad); err != nil {
			return err
		}
		if t, ok := c.RopeParameters["rope_theta"]; ok && t != c.RopeTheta {
			return bad("rope_parameters.rope_theta", t, fmt.Sprintf("disagrees with rope_theta %v", c.RopeTheta))
		}
	}
	if c.LayerTypes != nil {
		if len(c.LayerTypes) != c.NumHiddenLayers {
			return bad("layer_types", c.LayerTypes, fmt.Sprintf("has %d entries for num_hidden_layers %d", len(c.LayerTypes), c.NumHiddenLayers))
		}
		for i, t := range c.LayerTypes {
			if t != "full_attention" {
				return bad(fmt.Sprintf("layer_types[%d]", i), t, `is not implemented (only "full_attention")`)
			}
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"vocab_size", c.VocabSize}, {"hidden_size", c.HiddenSize}, {"intermediate_size", c.IntermediateSize},
		{"num_hidden_layers", c.NumHiddenLayers}, {"num_attention_heads", c.NumAttentionHeads},
		{"num_key_value_heads", c.NumKeyValueHeads}, {"head_dim", c.HeadDim}, {"max_position_embeddings", c.MaxPositionEmbeddings}} {
		if f.v <= 0 {
			return bad(f.name, f.v, "is not positive")
		}
	}
	switch {
	case c.NumAttentionHeads%c.NumKeyValueHeads != 0:
		return bad("num_key_value_heads", c.NumKeyValueHeads, fmt.Sprintf("does not divide num_attention_heads %d", c.NumAttentionHeads))
	case c.HeadDim%2 != 0:
		return bad("head_dim", c.HeadDim, "is odd (the rotary embedding rotates halves)")
	case !(c.RMSNormEps > 0) || math.IsInf(c.RMSNormEps, 0):
		return bad("rms_norm_eps", c.RMSNormEps, "is not a positive finite number")
	case !(c.RopeTheta > 1) || math.IsInf(c.RopeTheta, 0):
		return bad("rope_theta", c.RopeTheta, "is not a finite number above 1")
	}
	switch c.TorchDtype {
	case "", "bfloat16", "float16", "float32":
	default:
		return bad("torch_dtype", c.TorchDtype, "is not implemented (bfloat16, float16 or float32)")
	}
	if c.BOSTokenID != nil && (*c.BOSTokenID < 0 || *c.BOSTokenID >= c.VocabSize) {
		return bad("bos_token_id", *c.BOSTokenID, fmt.Sprintf("is outside the vocabulary [0, %d)", c.VocabSize))
	}
	if _, err := c.EOSTokenIDs(); err != nil {
		return bad("eos_token_id", c.EOSTokenID, err.Error())
	}
	n, ok := c.ParamCount()
	max := l.MaxWeightBytes
	if max <= 0 {
		max = DefaultMaxWeightBytes()
	}
	if !ok || n > max/4 {
		count := "more than 2^63"
		if ok {
			count = strconv.FormatInt(n, 10)
		}
		return fmt.Errorf("qwen3: %s: the sizes (vocab_size %d, hidden_size %d, intermediate_size %d, num_hidden_layers %d, heads %d/%d × head_dim %d) make %s parameters, past the bound of %d (%d bytes of float32 weights: Limits.MaxWeightBytes, by default half the machine's memory)",
			file, c.VocabSize, c.HiddenSize, c.IntermediateSize, c.NumHiddenLayers, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, count, max/4, max)
	}
	return nil
}

// EOSTokenIDs are eos_token_id's ids (none when it is null), or an error saying why they are not
// ids of the vocabulary.
func (c Config) EOSTokenIDs() ([]int, error) {
	var vals []any
	switch v := c.EOSTokenID.(type) {
	case nil:
		return nil, nil
	case []any:
		vals = v
	default:
		vals = []any{v}
	}
	ids := make([]int, 0, len(vals))
	for _, v := range vals {
		var id int
		switch n := v.(type) {
		case float64:
			if n != math.Trunc(n) {
				return nil, fmt.Errorf("is not an id or a list of ids")
			}
			id = int(n)
		case int:
			id = n
		default:
			return nil, fmt.Errorf("is not an id or a list of ids")
		}
		if id < 0 || id >= c.VocabSize {
			return nil, fmt.Errorf("holds %d, outside the vocabulary [0, %d)", id, c.VocabSize)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// ropeDefault accepts null or an object of rope_type (or its older name type) "default".
func ropeDefault(v any, field string, bad func(string, any, string) error) error {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return bad(field, v, "is not implemented (null, or rope_type \"default\")")
	}
	kind, ok := m["rope_type"]
	if !ok {
		kind = m["type"]
	}
	if kind != "default" {
		return bad(field, v, "is not implemented (only the default rotary embedding: no YaRN, linear, dynamic or llama3 scaling)")
	}
	return nil
}

// show renders a value for an error: JSON, so that strings are quoted and objects readable.
func show(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 120 {
		b = append(b[:117:117], "..."...)
	}
	return string(bytes.TrimSpace(b))
}

// Config0_6B is Qwen3-0.6B's config.json numbers (float32): the real small shape, which the GPU
// checks run with random weights.
func Config0_6B() Config {
	return Config{
		Architectures: []string{"Qwen3ForCausalLM"}, ModelType: "qwen3", VocabSize: 151936, HiddenSize: 1024,
		IntermediateSize: 3072, NumHiddenLayers: 28, NumAttentionHeads: 16, NumKeyValueHeads: 8, HeadDim: 128,
		HiddenAct: "silu", MaxPositionEmbeddings: 40960, RMSNormEps: 1e-6, RopeTheta: 1e6, TieWordEmbeddings: true,
		TorchDtype: "float32", EOSTokenID: 151645,
	}
}
