package openai

// SeedBits is the width of the per-request seed every caller of this package sends (the
// executor's send_seed, the skill author's): servers take a non-negative 32-bit integer.
const SeedBits = 31

// RequestSeed is the per-request seed of a 64-bit seed: its low SeedBits bits.
func RequestSeed(s uint64) int64 { return int64(s & (1<<SeedBits - 1)) }
