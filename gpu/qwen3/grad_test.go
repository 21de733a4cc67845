package qwen3

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
)

func gradExamples() []Example {
	r := rand.New(rand.NewPCG(21, 22))
	var ex []Example
	for i, k := range []int{6, 3, 12, 1} {
		d := randDecision(r, k)
		ex = append(ex, Example{Decision: d, Action: r.IntN(k), Weight: []float64{1, -0.5, 2, 1}[i]})
	}
	return ex
}

// TestGradientMatchesFiniteDifferences: in float64, the log-probs of the gradient's graph equal
// Score's with the adapter on, the objective is Σ w·log θ, and ∂J/∂A, ∂J/∂B match central
// differences (relative 1e-3) on entries of every slot.
func TestGradientMatchesFiniteDifferences(t *testing.T) {
	m := tinyModel(t, dtypes.Float64, 9)
	cfg := m.Config()
	lc := LoRAConfig{Rank: 2, Alpha: 4, TargetModules: ModuleNames}
	a, err := NewAdapter(cfg, lc, 3)
	if err != nil {
		t.Fatal(err)
	}
	randomB(a, 5, 0.2)
	if err := m.SetAdapter(a); err != nil {
		t.Fatal(err)
	}
	ex := gradExamples()
	g, err := m.Gradient(ex)
	if err != nil {
		t.Fatal(err)
	}
	obj := 0.0
	for i, e := range ex {
		s, err := m.Score(e.Decision, true)
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(s.LogProbs[e.Action] - g.LogProbs[i]); d > 1e-9 {
			t.Errorf("example %d: gradient graph's log-prob %v, Score's %v", i, g.LogProbs[i], s.LogProbs[e.Action])
		}
		obj += e.Weight * g.LogProbs[i]
	}
	if math.Abs(obj-g.Objective) > 1e-12 {
		t.Errorf("objective %v, Σ w·log θ %v", g.Objective, obj)
	}
	if len(g.Grads) != cfg.NumHiddenLayers*len(ModuleNames) {
		t.Fatalf("%d gradients", len(g.Grads))
	}
	r := rand.New(rand.NewPCG(31, 32))
	const eps = 1e-5
	worst := 0.0
	objective := func() float64 {
		if err := m.SetAdapter(a); err != nil {
			t.Fatal(err)
		}
		g, err := m.Gradient(ex)
		if err != nil {
			t.Fatal(err)
		}
		return g.Objective
	}
	// The adapter's host tensors are float32: the step is the float32 difference actually taken.
	for _, pg := range g.Grads {
		p := a.Layers[pg.Layer][pg.Module]
		for which, data := range [][]float32{p.A.Data, p.B.Data} {
			grad := [][]float64{pg.A, pg.B}[which]
			i := r.IntN(len(data))
			orig := data[i]
			h := float32(eps)
			data[i] = orig + h
			up := objective()
			data[i] = orig - h
			down := objective()
			data[i] = orig
			step := float64(orig+h) - float64(orig-h)
			fd := (up - down) / step
			rel := math.Abs(fd-grad[i]) / max(math.Abs(grad[i]), 1e-3)
			worst = max(worst, rel)
			if rel > 1e-3 {
				t.Errorf("layer %d %s %c[%d]: gradient %v, central difference %v", pg.Layer, pg.Module, "AB"[which], i, grad[i], fd)
			}
		}
	}
	t.Logf("gradient vs central differences: worst relative error %.2g over %d entries", worst, 2*len(g.Grads))
	nonzero := 0
	for _, pg := range g.Grads {
		for _, v := range append(append([]float64{}, pg.A...), pg.B...) {
			if v != 0 {
				nonzero++
			}
		}
	}
	if nonzero == 0 {
		t.Error("every gradient entry is zero")
	}
}

// TestGradientFloat32: the float32 graph's gradient agrees with float64's (relative 1e-3 of the
// largest entry); with B = 0 (initialisation) ∂J/∂A is zero and ∂J/∂B is not.
func TestGradientFloat32(t *testing.T) {
	cfg := tinyConfig()
	lc := LoRAConfig{Rank: 2, Alpha: 4, TargetModules: []string{"q_proj", "v_proj", "down_proj"}}
	a, err := NewAdapter(cfg, lc, 3)
	if err != nil {
		t.Fatal(err)
	}
	ex := gradExamples()
	grads := map[dtypes.DType]*AdapterGradient{}
	for _, dt := range []dtypes.DType{dtypes.Float32, dtypes.Float64} {
		m := tinyModel(t, dt, 9)
		if err := m.SetAdapter(a); err != nil {
			t.Fatal(err)
		}
		if grads[dt], err = m.Gradient(ex); err != nil {
			t.Fatal(err)
		}
	}
	g32, g64 := grads[dtypes.Float32], grads[dtypes.Float64]
	scale, worst, bnorm := 0.0, 0.0, 0.0
	for i := range g64.Grads {
		for _, v := range g64.Grads[i].A {
			if v != 0 {
				t.Fatalf("∂J/∂A = %v with B = 0", v)
			}
		}
		for j, v := range g64.Grads[i].B {
			scale = max(scale, math.Abs(v))
			worst = max(worst, math.Abs(v-g32.Grads[i].B[j]))
			bnorm += v * v
		}
	}
	t.Logf("float32 vs float64 ∂J/∂B: max |Δ| %.2g of max |g| %.2g", worst, scale)
	if bnorm == 0 || worst > 1e-3*scale {
		t.Errorf("float32 gradient off by %g (scale %g, ‖∂J/∂B‖² %g)", worst, scale, bnorm)
	}
}
