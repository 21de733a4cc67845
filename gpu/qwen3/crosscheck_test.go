package qwen3

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
)

// TestGraphsEqualReference: the gomlx graphs' logits at every position of a prompt equal the
// independent float64 forward's (reference.go, itself checked against torch), tied and untied,
// with the adapter off and with a trained (B ≠ 0) adapter on: float32 graphs to 1e-4 of the
// largest logit, float64 graphs to 1e-9. A mistake in either forward (a rotation, a norm, the
// grouping of heads, the LoRA scale) shows as a difference of the logits' own size.
func TestGraphsEqualReference(t *testing.T) {
	for _, tied := range []bool{false, true} {
		cfg := tinyConfig()
		cfg.TieWordEmbeddings = tied
		w := RandomWeights(cfg, 11, 0.2)
		a, err := NewAdapter(cfg, allModules, 3)
		if err != nil {
			t.Fatal(err)
		}
		randomB(a, 7, 0.3)
		prompt := randTokens(rand.New(rand.NewPCG(2, 9)), 23, cfg.VocabSize)
		for _, adapter := range []*Adapter{nil, a} {
			ref, err := NewReference(cfg, w, adapter)
			if err != nil {
				t.Fatal(err)
			}
			_, want, err := ref.Prefill(prompt)
			if err != nil {
				t.Fatal(err)
			}
			scale := 0.0
			for _, row := range want {
				for _, v := range row {
					scale = max(scale, math.Abs(v))
				}
			}
			for _, c := range []struct {
				dt  dtypes.DType
				tol float64
			}{{dtypes.Float32, 1e-4 * scale}, {dtypes.Float64, 1e-9}} {
				dt, tol := c.dt, c.tol
				m, err := New(testBackend(t), cfg, w, Options{DType: dt})
				if err != nil {
					t.Fatal(err)
				}
				if adapter != nil {
					if err := m.SetAdapter(adapter); err != nil {
						t.Fatal(err)
					}
				}
				_, out, err := m.Prefill([][]int{prompt}, Query{Logits: [][]int{iota(len(prompt))}, Adapter: adapter != nil})
				if err != nil {
					t.Fatal(err)
				}
				if d := maxDiff2(out.Logits[0], want); d > tol || math.IsNaN(d) {
					t.Errorf("tied %v, adapter %v, %s: graphs differ from the reference by %.3g (tolerance %.3g, largest logit %.3g)", tied, adapter != nil, dt, d, tol, scale)
				} else {
					t.Logf("tied %v, adapter %v, %s: max |Δ| %.3g (largest logit %.3g)", tied, adapter != nil, dt, d, scale)
				}
			}
		}
	}
}
