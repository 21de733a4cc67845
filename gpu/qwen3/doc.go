// Package qwen3 is the dense Qwen3 causal language model, read from a local Hugging Face folder:
// its configuration (config.go), weights in safetensors files (safetensors.go, weights.go), the
// forward pass with a KV cache as gomlx graphs (forward.go, cache.go), an independent float64
// forward that the graphs are checked against (reference.go), LoRA adapters on the attention
// and MLP projections and their PEFT files (lora.go, adapter.go), and trie-masked scoring and
// sampling of a decision's legal actions (score.go). The tokenizer and the chat template are
// internal/tokenizer's, shared with the served scorer.
//
// It must not read or write pipeline files (run folders, Arrow tables) and must not download
// anything: a model is a folder the user brings. Configurations it does not implement (MoE,
// sliding windows, rope scaling, other model types) are refused, naming the field and its value.
package qwen3
