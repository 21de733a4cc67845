package qwen3

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
}

// KVDim is the width of a layer's keys (and values): NumKeyValueHeads × HeadDim.
func (c Config) KVDim() int { return c.NumKeyValueHeads * c.HeadDim }

// QDim is the width of a layer's queries: NumAttentionHeads × HeadDim.
func (c Config) QDim() int { return c.NumAttentionHeads * c.HeadDim }
