// Package backend opens the gomlx backend a configuration names (compute.backend): the pure-Go
// CPU backend as "simplego", XLA through a PJRT plugin in builds with -tags xla (xla.go), or
// "auto". The policy engine (gpu) and the Qwen3 model's checks share it.
//
// It must not build graphs or hold models: it only maps names to opened backends.
package backend
