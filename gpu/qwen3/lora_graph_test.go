package qwen3

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
)

var allModules = LoRAConfig{Rank: 4, Alpha: 8, TargetModules: ModuleNames}

// TestAdapterInit: A is Kaiming-uniform within ±1/√in (and spread over it), B is zero, and the
// adapter on equals the adapter off bit for bit, for forward outputs and scores.
func TestAdapterInit(t *testing.T) {
	cfg := tinyConfig()
	a, err := NewAdapter(cfg, allModules, 1)
	if err != nil {
		t.Fatal(err)
	}
	for l, mods := range a.Layers {
		if len(mods) != len(ModuleNames) {
			t.Fatalf("layer %d has %d modules", l, len(mods))
		}
		for name, p := range mods {
			_, in := projDims(cfg, name)
			bound, top := 1/math.Sqrt(float64(in)), 0.0
			for _, v := range p.A.Data {
				if math.Abs(float64(v)) > bound {
					t.Fatalf("layer %d %s: A entry %v beyond ±%v", l, name, v, bound)
				}
				top = max(top, math.Abs(float64(v)))
			}
			if top < 0.8*bound {
				t.Errorf("layer %d %s: A's largest entry %v, not spread over ±%v", l, name, top, bound)
			}
			for _, v := range p.B.Data {
				if v != 0 {
					t.Fatalf("layer %d %s: B is not zero", l, name)
				}
			}
		}
	}
	m := tinyModel(t, dtypes.Float32, 7)
	if err := m.SetAdapter(a); err != nil {
		t.Fatal(err)
	}
	seq := randTokens(rand.New(rand.NewPCG(1, 1)), 9, 300)
	h0, l0 := full(t, m, seq, false)
	h1, l1 := full(t, m, seq, true)
	for i := range h0 {
		for j := range h0[i] {
			if math.Float64bits(h0[i][j]) != math.Float64bits(h1[i][j]) {
				t.Fatalf("hidden %d,%d: adapter on %v, off %v", i, j, h1[i][j], h0[i][j])
			}
		}
		for j := range l0[i] {
			if math.Float64bits(l0[i][j]) != math.Float64bits(l1[i][j]) {
				t.Fatalf("logit %d,%d: adapter on %v, off %v", i, j, l1[i][j], l0[i][j])
			}
		}
	}
	d := randDecision(rand.New(rand.NewPCG(2, 2)), 9)
	s0, err := m.Score(d, false)
	if err != nil {
		t.Fatal(err)
	}
	s1, err := m.Score(d, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range s0.LogProbs {
		if math.Float64bits(s0.LogProbs[i]) != math.Float64bits(s1.LogProbs[i]) {
			t.Errorf("action %d: log-prob on %v, off %v", i, s1.LogProbs[i], s0.LogProbs[i])
		}
	}
}

// randomB gives an adapter's B entries N(0, std²).
func randomB(a *Adapter, seed uint64, std float64) {
	r := rand.New(rand.NewPCG(seed, 3))
	for _, mods := range a.Layers {
		for _, p := range mods {
			for i := range p.B.Data {
				p.B.Data[i] = float32(r.NormFloat64() * std)
			}
		}
	}
}

// TestAdapterEqualsMergedWeights: the adapter on equals the base model with W + s·B·A merged into
// every projection (α/r and rsLoRA's α/√r), and differs from it off.
func TestAdapterEqualsMergedWeights(t *testing.T) {
	cfg := tinyConfig()
	for _, rs := range []bool{false, true} {
		lc := allModules
		lc.RSLoRA = rs
		a, err := NewAdapter(cfg, lc, 2)
		if err != nil {
			t.Fatal(err)
		}
		randomB(a, 4, 0.3)
		w := RandomWeights(cfg, 8, 0.2)
		base, err := New(testBackend(t), cfg, w, Options{DType: dtypes.Float64})
		if err != nil {
			t.Fatal(err)
		}
		if err := base.SetAdapter(a); err != nil {
			t.Fatal(err)
		}
		s := lc.Scale()
		merged := RandomWeights(cfg, 8, 0.2)
		for l := range merged.Layers {
			ly := &merged.Layers[l]
			for name, ten := range map[string]*Tensor{"q_proj": &ly.QProj, "k_proj": &ly.KProj, "v_proj": &ly.VProj, "o_proj": &ly.OProj, "gate_proj": &ly.GateProj, "up_proj": &ly.UpProj, "down_proj": &ly.DownProj} {
				p := a.Layers[l][name]
				out, in := ten.Shape[0], ten.Shape[1]
				for o := range out {
					for i := range in {
						acc := 0.0
						for k := range lc.Rank {
							acc += float64(p.B.Data[o*lc.Rank+k]) * float64(p.A.Data[k*in+i])
						}
						ten.Data[o*in+i] += float32(s * acc)
					}
				}
			}
		}
		mm, err := New(testBackend(t), cfg, merged, Options{DType: dtypes.Float64})
		if err != nil {
			t.Fatal(err)
		}
		seq := randTokens(rand.New(rand.NewPCG(5, 5)), 10, 300)
		_, on := full(t, base, seq, true)
		_, off := full(t, base, seq, false)
		_, want := full(t, mm, seq, false)
		// The merged weights are rounded to float32: that rounding, not the graphs, sets the tolerance.
		d, doff := maxDiff2(on, want), maxDiff2(off, want)
		t.Logf("rsLoRA %v: adapter on vs merged %.2g, off vs merged %.2g", rs, d, doff)
		if d > 1e-4 || doff < 100*d {
			t.Errorf("rsLoRA %v: adapter on differs from merged weights by %g (off by %g)", rs, d, doff)
		}
	}
}
