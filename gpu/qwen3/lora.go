package qwen3

// LoRAConfig is a LoRA adapter's shape (PEFT's LoraConfig): rank r, α, the projections it adapts
// (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj) and rsLoRA's scaling.
type LoRAConfig struct {
	Rank          int
	Alpha         float64
	TargetModules []string
	RSLoRA        bool
}

// LoRAPair is one adapted projection W [out, in]: W + s·B·A with A [r, in] and B [out, r].
type LoRAPair struct {
	A, B Tensor
}

// Adapter is a LoRA adapter: per layer, the adapted projections by module name.
type Adapter struct {
	Config LoRAConfig
	Layers []map[string]LoRAPair
}
