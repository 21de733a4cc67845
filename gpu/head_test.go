package gpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

func testAdamW() AdamW {
	return AdamW{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Epsilon: 1e-8, WeightDecay: 0.01}
}

// headData draws n rows of 30 uniform features plus a 6-way one-hot; the label is 1 when
// feature 0 > 0.5.
func headData(n int, seed uint64) ([][]float32, []float32) {
	r := rand.New(rand.NewPCG(seed, 7))
	x := make([][]float32, n)
	y := make([]float32, n)
	for i := range x {
		row := make([]float32, 36)
		for j := range 30 {
			row[j] = r.Float32()
		}
		row[30+r.IntN(6)] = 1
		x[i] = row
		if row[0] > 0.5 {
			y[i] = 1
		}
	}
	return x, y
}

// plainHead is the float64 oracle of a head: its output and the MSE gradient by hand, in the
// order W1, b1, W2, b2.
func plainHead(h *Head, row []float32) (out float64, pre, act []float64) {
	pre, act = make([]float64, h.Hidden), make([]float64, h.Hidden)
	z := float64(h.B2.Value[0])
	for j := range h.Hidden {
		s := float64(h.B1.Value[j])
		for i := range h.In {
			s += float64(row[i]) * float64(h.W1.Value[i*h.Hidden+j])
		}
		pre[j], act[j] = s, gelu64(s)
		z += act[j] * float64(h.W2.Value[j])
	}
	if h.Sigmoid {
		z = 1 / (1 + math.Exp(-z))
	}
	return z, pre, act
}

func plainMSEGrad(h *Head, x [][]float32, y []float32) []float64 {
	n := float64(len(x))
	g := make([]float64, h.In*h.Hidden+2*h.Hidden+1)
	gW1, gB1, gW2 := g[:h.In*h.Hidden], g[h.In*h.Hidden:h.In*h.Hidden+h.Hidden], g[h.In*h.Hidden+h.Hidden:h.In*h.Hidden+2*h.Hidden]
	for r, row := range x {
		p, pre, act := plainHead(h, row)
		dz := 2 * (p - float64(y[r])) / n
		if h.Sigmoid {
			dz *= p * (1 - p)
		}
		g[len(g)-1] += dz
		for j := range h.Hidden {
			gW2[j] += dz * act[j]
			s := pre[j]
			dact := 0.5*(1+math.Erf(s/math.Sqrt2)) + s*math.Exp(-s*s/2)/math.Sqrt(2*math.Pi)
			dh := dz * float64(h.W2.Value[j]) * dact
			gB1[j] += dh
			for i := range h.In {
				gW1[i*h.Hidden+j] += dh * float64(row[i])
			}
		}
	}
	return g
}

func flatValues(ps []*Param) []float64 {
	var out []float64
	for _, p := range ps {
		for _, v := range p.Value {
			out = append(out, float64(v))
		}
	}
	return out
}

func setFlat(ps []*Param, v []float64) {
	k := 0
	for _, p := range ps {
		for i := range p.Value {
			p.Value[i] = float32(v[k])
			k++
		}
	}
}

func headGroup(heads ...*Head) *ClipGroup {
	g := &ClipGroup{Name: "test"}
	for _, h := range heads {
		for _, p := range h.Params() {
			g.Params, g.Hyper = append(g.Params, p), append(g.Hyper, testAdamW())
		}
	}
	return g
}

// TestHeadPredictMatchesPlainGo checks the head's graph and its CPU kernels (Predict on a native
// engine) against a float64 plain-Go forward pass.
func TestHeadPredictMatchesPlainGo(t *testing.T) {
	e := testEngine(t)
	for _, c := range []struct{ sig, native bool }{{true, false}, {false, false}, {true, true}, {false, true}} {
		sig := c.sig
		e.native = c.native
		h := NewHead("v", 36, 32, sig, false, 11)
		// Larger weights exercise GELU's negative side and the sigmoid's tails.
		for i := range h.W1.Value {
			h.W1.Value[i] *= 4
		}
		for i := range h.W2.Value {
			h.W2.Value[i] *= 3
		}
		for _, n := range []int{1, 5, 64, 70, 600} { // 70 crosses a padding bucket, 600 a native group
			x, _ := headData(n, uint64(n))
			got, err := h.Predict(e, x)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("%d predictions for %d rows", len(got), n)
			}
			for i, row := range x {
				want, _, _ := plainHead(h, row)
				if math.Abs(float64(got[i])-want) > 1e-5*math.Max(1, math.Abs(want)) {
					t.Fatalf("sigmoid %v native %v n=%d row %d: %v, want %v", sig, c.native, n, i, got[i], want)
				}
			}
		}
	}
	if _, err := NewHead("v", 36, 32, true, false, 1).Predict(e, [][]float32{make([]float32, 35)}); err == nil {
		t.Fatal("a short row was accepted")
	}
}

func TestHeadZeroLastLayer(t *testing.T) {
	e := testEngine(t)
	x, _ := headData(10, 3)
	for _, sig := range []bool{false, true} {
		out, err := NewHead("b", 36, 16, sig, true, 5).Predict(e, x)
		if err != nil {
			t.Fatal(err)
		}
		want := float32(0)
		if sig {
			want = 0.5
		}
		for i, v := range out {
			if v != want {
				t.Fatalf("sigmoid %v row %d: %v at init, want exactly %v", sig, i, v, want)
			}
		}
	}
}

// TestFitMSEMatchesPlainAdamW checks three steps, as graphs and as CPU kernels, against
// torch.optim.AdamW written in float64 plain Go (hand-derived gradients, global-norm clip, bias
// correction, decoupled decay).
func TestFitMSEMatchesPlainAdamW(t *testing.T) {
	e := testEngine(t)
	x, y := headData(50, 12)
	h0 := NewHead("v", 36, 32, true, false, 77)
	hp := AdamW{LR: 0.05, Beta1: 0.9, Beta2: 0.999, Epsilon: 1e-8, WeightDecay: 0.5} // large, so a wrong formula shows
	// The clip is below the initial gradient norm: it engages.
	const clip = 0.05
	ref := h0.Clone()
	p := flatValues(ref.Params())
	m, v := make([]float64, len(p)), make([]float64, len(p))
	clipped := 0
	for step := 1; step <= 3; step++ {
		gr := plainMSEGrad(ref, x, y)
		norm := 0.0
		for _, e := range gr {
			norm += e * e
		}
		norm = math.Sqrt(norm)
		coef := math.Min(1, clip/(norm+1e-6))
		if coef < 1 {
			clipped++
		}
		bc1, bc2 := 1-math.Pow(hp.Beta1, float64(step)), 1-math.Pow(hp.Beta2, float64(step))
		for i := range p {
			gi := gr[i] * coef
			p[i] *= 1 - hp.LR*hp.WeightDecay
			m[i] = hp.Beta1*m[i] + (1-hp.Beta1)*gi
			v[i] = hp.Beta2*v[i] + (1-hp.Beta2)*gi*gi
			p[i] -= hp.LR / bc1 * m[i] / (math.Sqrt(v[i])/math.Sqrt(bc2) + hp.Epsilon)
		}
		setFlat(ref.Params(), p)
	}
	if clipped == 0 {
		t.Fatal("test setup: the clip never engaged")
	}
	for _, native := range []bool{false, true} {
		e.native = native
		h := h0.Clone()
		g := headGroup(h)
		for i := range g.Hyper {
			g.Hyper[i] = hp
		}
		fitMatches(t, e, h, g, clip, x, y, p)
	}
}

// fitMatches takes FitMSE's three steps on h and compares the parameters with p.
func fitMatches(t *testing.T, e *Engine, h *Head, g *ClipGroup, clip float64, x [][]float32, y []float32, p []float64) {
	t.Helper()
	before, after, _, err := FitMSE(e, []*Head{h}, g, clip, 1, x, y, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !(after[0] < before[0]) {
		t.Fatalf("MSE %v -> %v", before[0], after[0])
	}
	if g.Step != 3 {
		t.Fatalf("group step %d after 3 steps", g.Step)
	}
	// Adam divides by √v, so parameters with a near-zero gradient amplify float32 rounding; a
	// wrong formula is off by ~lr·wd·|p| ≥ 1e-3 or ~lr.
	got := flatValues(h.Params())
	sum := 0.0
	for i := range got {
		d := math.Abs(got[i] - p[i])
		sum += d
		if d > 2e-4 {
			t.Fatalf("native %v: param %d after 3 steps: %.7f, plain-Go AdamW %.7f", e.native, i, got[i], p[i])
		}
	}
	if sum/float64(len(got)) > 5e-6 {
		t.Fatalf("native %v: mean deviation from plain-Go AdamW %.3g", e.native, sum/float64(len(got)))
	}
}

// TestFitMSEJointClipAndWeight checks that two heads in one group share one clip (the applied
// first moment is (1−β1)·clip in joint norm), that a weight scales the gradient before the clip,
// and that weight 0 takes no step.
func TestFitMSEJointClipAndWeight(t *testing.T) {
	e := testEngine(t)
	x, y := headData(40, 9)
	a, b := NewHead("a", 36, 8, true, false, 1), NewHead("b", 36, 8, true, false, 2)
	rawA, rawB := plainMSEGrad(a, x, y), plainMSEGrad(b, x, y)
	joint := 0.0
	for _, g := range append(rawA, rawB...) {
		joint += g * g
	}
	joint = math.Sqrt(joint)
	firstMoment := func(hs ...*Head) float64 {
		s := 0.0
		for _, h := range hs {
			for _, p := range h.Params() {
				for _, m := range p.M {
					s += float64(m) * float64(m)
				}
			}
		}
		return math.Sqrt(s) / (1 - testAdamW().Beta1)
	}
	for _, tc := range []struct {
		clip, weight, want float64
	}{
		{joint / 4, 1, joint / 4},    // clipped jointly to the clip
		{0, 1, joint},                // no clip
		{10 * joint, 0.5, joint / 2}, // weighted, below the clip
		{joint / 4, 3, joint / 4},    // weighted above the clip: clipped
	} {
		ha, hb := a.Clone(), b.Clone()
		g := headGroup(ha, hb)
		_, _, norm, err := FitMSE(e, []*Head{ha, hb}, g, tc.clip, tc.weight, x, y, 1)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(norm-tc.weight*joint)/joint > 1e-4 {
			t.Fatalf("%+v: pre-clip norm %v, want %v", tc, norm, tc.weight*joint)
		}
		if got := firstMoment(ha, hb); math.Abs(got-tc.want)/tc.want > 1e-3 {
			t.Fatalf("%+v: applied gradient norm %v, want %v", tc, got, tc.want)
		}
	}
	ha := a.Clone()
	g := headGroup(ha)
	if _, _, _, err := FitMSE(e, []*Head{ha}, g, 1, 0, x, y, 5); err != nil {
		t.Fatal(err)
	}
	if g.Step != 0 || flatValues(ha.Params())[0] != flatValues(a.Params())[0] {
		t.Fatal("weight 0 took a step")
	}
	if _, _, _, err := FitMSE(e, []*Head{ha}, headGroup(b), 1, 1, x, y, 1); err == nil {
		t.Fatal("a clip group that does not hold the head was accepted")
	}
}

// TestHeadBatchInvariant: a row's prediction is bit-identical alone and in a batch of 300, on
// the CPU kernels and the graph, so the rollout may score value questions in whatever batches
// the episodes' timing makes.
func TestHeadBatchInvariant(t *testing.T) {
	h := NewHead("v", 36, 32, true, false, 11)
	r := rand.New(rand.NewPCG(3, 4))
	x := make([][]float32, 300)
	for i := range x {
		x[i] = make([]float32, 36)
		for j := range x[i] {
			x[i][j] = float32(r.NormFloat64())
		}
	}
	for _, native := range []bool{true, false} {
		e := testEngine(t)
		e.native = native
		all, err := h.Predict(e, x)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range []int{0, 7, 150, 299} {
			one, err := h.Predict(e, x[i:i+1])
			if err != nil {
				t.Fatal(err)
			}
			if one[0] != all[i] {
				t.Fatalf("native %v row %d: alone %v, in a batch %v", native, i, one[0], all[i])
			}
		}
	}
}
