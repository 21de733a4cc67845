package qwen3

// Tensor is a dense row-major float32 tensor: the weights are kept in float32 whatever their
// dtype on disk (bf16 widens exactly).
type Tensor struct {
	Shape []int
	Data  []float32
}

// Layer is one decoder layer's weights, named as in the Hugging Face checkpoint
// (model.layers.{i}.…). Projections are [out, in], as torch's Linear stores them.
type Layer struct {
	InputNorm    Tensor // input_layernorm.weight [hidden]
	QProj        Tensor // self_attn.q_proj.weight [heads·head_dim, hidden]
	KProj        Tensor // self_attn.k_proj.weight [kv_heads·head_dim, hidden]
	VProj        Tensor // self_attn.v_proj.weight [kv_heads·head_dim, hidden]
	OProj        Tensor // self_attn.o_proj.weight [hidden, heads·head_dim]
	QNorm        Tensor // self_attn.q_norm.weight [head_dim]
	KNorm        Tensor // self_attn.k_norm.weight [head_dim]
	PostAttnNorm Tensor // post_attention_layernorm.weight [hidden]
	GateProj     Tensor // mlp.gate_proj.weight [intermediate, hidden]
	UpProj       Tensor // mlp.up_proj.weight [intermediate, hidden]
	DownProj     Tensor // mlp.down_proj.weight [hidden, intermediate]
}

// Weights are a model's weights. LMHead is Embed when the configuration ties them.
type Weights struct {
	Embed  Tensor // model.embed_tokens.weight [vocab, hidden]
	Layers []Layer
	Norm   Tensor // model.norm.weight [hidden]
	LMHead Tensor // lm_head.weight [vocab, hidden]
}
