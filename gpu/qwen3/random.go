package qwen3

import "math/rand/v2"

// RandomWeights are weights of cfg's shapes drawn from a seeded generator: projections and
// embeddings N(0, std²), norms 1 + N(0, 0.1²) so that a test sees them act. A random model of the
// real architecture is what the tests run, since no weights can be downloaded where this is built.
func RandomWeights(cfg Config, seed uint64, std float64) Weights {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	mat := func(dims ...int) Tensor {
		t := Tensor{Shape: dims, Data: make([]float32, product(dims))}
		for i := range t.Data {
			t.Data[i] = float32(rng.NormFloat64() * std)
		}
		return t
	}
	norm := func(n int) Tensor {
		t := Tensor{Shape: []int{n}, Data: make([]float32, n)}
		for i := range t.Data {
			t.Data[i] = float32(1 + 0.1*rng.NormFloat64())
		}
		return t
	}
	h, q, kv, in := cfg.HiddenSize, cfg.QDim(), cfg.KVDim(), cfg.IntermediateSize
	w := Weights{Embed: mat(cfg.VocabSize, h)}
	for range cfg.NumHiddenLayers {
		w.Layers = append(w.Layers, Layer{
			InputNorm: norm(h), QProj: mat(q, h), KProj: mat(kv, h), VProj: mat(kv, h), OProj: mat(h, q),
			QNorm: norm(cfg.HeadDim), KNorm: norm(cfg.HeadDim), PostAttnNorm: norm(h),
			GateProj: mat(in, h), UpProj: mat(in, h), DownProj: mat(h, in),
		})
	}
	w.Norm = norm(h)
	if cfg.TieWordEmbeddings {
		w.LMHead = w.Embed
	} else {
		w.LMHead = mat(cfg.VocabSize, h)
	}
	return w
}

func product(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}
