package qwen3

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
)

// benchModel is the tiny test model under -short (make test), otherwise a small one of the real
// architecture (hidden 256, 4 layers, 8 heads, 4 KV heads, head_dim 32, vocabulary 4096) that the
// pure-Go backend runs in seconds.
func benchModel(b *testing.B) *Model {
	cfg := tinyConfig()
	if !testing.Short() {
		cfg.HiddenSize, cfg.IntermediateSize, cfg.NumHiddenLayers = 256, 768, 4
		cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim, cfg.VocabSize = 8, 4, 32, 4096
	}
	m, err := New(testBackend(b), cfg, RandomWeights(cfg, 1, 0.05), Options{DType: dtypes.Float32})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkPrefill is one prefill of 4 prompts of 128 tokens (2 of 16 under -short), compiled
// beforehand; it reports prompt tokens per second.
func BenchmarkPrefill(b *testing.B) {
	m := benchModel(b)
	rows, n := 4, 128
	if testing.Short() {
		rows, n = 2, 16
	}
	r := rand.New(rand.NewPCG(1, 2))
	prompts := make([][]int, rows)
	for i := range prompts {
		prompts[i] = randTokens(r, n, 290)
	}
	if _, _, err := m.Prefill(prompts, Query{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, _, err := m.Prefill(prompts, Query{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows*n*b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkScore is the trie-masked scoring of one decision, a 128-token prompt (16 under -short)
// and 16 legal actions (8), compiled beforehand; it reports decisions per second and forward calls
// per decision.
func BenchmarkScore(b *testing.B) {
	m := benchModel(b)
	k, n := 16, 128
	if testing.Short() {
		k, n = 8, 16
	}
	d := randDecision(rand.New(rand.NewPCG(3, 4)), k)
	d.Prompt = randTokens(rand.New(rand.NewPCG(5, 6)), n, 290)
	s, err := m.Score(d, false)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := m.Score(d, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	b.ReportMetric(float64(s.Work.Prefills+s.Work.Extensions), "calls/decision")
}
