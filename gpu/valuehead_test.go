package gpu

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
)

func valueHeadTestOpt() config.Optimizer {
	return config.Optimizer{HeadsLR: 1e-3, HeadsBeta1: 0.9, Beta2: 0.999, Epsilon: 1e-8, WeightDecay: 0.01, GradClip: 1.0}
}

// valueHeadData draws n rows of 30 uniform features plus a 6-way one-hot; the label is 1 when
// feature 0 > 0.5.
func valueHeadData(n int, seed uint64) ([][]float32, []float32) {
	r := rand.New(rand.NewPCG(seed, 7))
	x := make([][]float32, n)
	y := make([]float32, n)
	for i := range x {
		row := make([]float32, 36)
		for j := 0; j < 30; j++ {
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

// plainForward is the oracle: the head in float64 plain Go, exact (erf) GELU.
func plainForward(v *ValueHead, row []float32) float64 {
	z := float64(v.B2)
	for j := 0; j < v.Hidden; j++ {
		h := float64(v.B1[j])
		for i := 0; i < v.Inputs; i++ {
			h += float64(row[i]) * float64(v.W1[i*v.Hidden+j])
		}
		h = h * 0.5 * (1 + math.Erf(h/math.Sqrt2))
		z += h * float64(v.W2[j])
	}
	return 1 / (1 + math.Exp(-z))
}

func TestValueHeadPredictMatchesPlainGo(t *testing.T) {
	b := testBackend(t)
	v := NewValueHead(config.ValueHead{Hidden: 32}, 36, 11)
	// Larger weights so the GELU's negative side and the sigmoid's tails are exercised.
	for i := range v.W1 {
		v.W1[i] *= 4
	}
	for i := range v.W2 {
		v.W2[i] *= 3
	}
	for _, n := range []int{1, 5, 64, 70} { // 70 crosses a padding bucket
		x, _ := valueHeadData(n, uint64(n))
		p, err := v.Predict(b, x)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) != n {
			t.Fatalf("n=%d: got %d predictions", n, len(p))
		}
		for i := range p {
			want := plainForward(v, x[i])
			if math.Abs(float64(p[i])-want) > 1e-5 || !(p[i] > 0 && p[i] < 1) {
				t.Fatalf("n=%d row %d: predict %.8f, plain Go %.8f", n, i, p[i], want)
			}
		}
	}
	if _, err := v.Predict(b, [][]float32{make([]float32, 35)}); err == nil {
		t.Fatal("a row of the wrong width was accepted")
	}
}

func TestValueHeadFitLearns(t *testing.T) {
	b := testBackend(t)
	x, y := valueHeadData(200, 3)
	v := NewValueHead(config.ValueHead{Hidden: 32}, 36, 5)
	opt := valueHeadTestOpt()
	opt.HeadsLR = 1e-2 // 200 steps at the production 1e-3 barely leave the initial plateau
	before, after, err := v.Fit(b, opt, x, y, 200)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("MSE %.4f -> %.4f after 200 steps", before, after)
	if before < 0.2 {
		t.Fatalf("initial MSE %.4f is below 0.2: the target is too easy to test learning", before)
	}
	if !(after < before) || after > 0.1 {
		t.Fatalf("MSE %.4f -> %.4f: did not learn", before, after)
	}
	if v.Step != 200 {
		t.Fatalf("step count %d, want 200", v.Step)
	}
	// lossAfter must be the MSE of the head as it now is.
	p, err := v.Predict(b, x)
	if err != nil {
		t.Fatal(err)
	}
	s := 0.0
	for i := range p {
		d := float64(p[i]) - float64(y[i])
		s += d * d
	}
	if math.Abs(s/float64(len(p))-after) > 1e-9 {
		t.Fatalf("lossAfter %.6f, MSE of the fitted head %.6f", after, s/float64(len(p)))
	}
	// The production learning rate also moves the loss down.
	v2 := NewValueHead(config.ValueHead{Hidden: 32}, 36, 5)
	b2, a2, err := v2.Fit(b, valueHeadTestOpt(), x, y, 50)
	if err != nil {
		t.Fatal(err)
	}
	if !(a2 < b2) {
		t.Fatalf("lr 1e-3: MSE %.5f -> %.5f", b2, a2)
	}
}

// plainGradNorm is the L2 norm of the MSE gradient computed by hand in float64.
func plainGradNorm(v *ValueHead, x [][]float32, y []float32) float64 {
	s := 0.0
	for _, e := range plainGrads(v, x, y) {
		s += e * e
	}
	return math.Sqrt(s)
}

// plainGrads is the MSE gradient by hand in float64, flattened in the order W1, b1, W2, b2.
func plainGrads(v *ValueHead, x [][]float32, y []float32) []float64 {
	n := float64(len(x))
	gW1 := make([]float64, len(v.W1))
	gB1 := make([]float64, v.Hidden)
	gW2 := make([]float64, v.Hidden)
	gB2 := 0.0
	pre := make([]float64, v.Hidden)
	act := make([]float64, v.Hidden)
	for r, row := range x {
		z := float64(v.B2)
		for j := 0; j < v.Hidden; j++ {
			h := float64(v.B1[j])
			for i := 0; i < v.Inputs; i++ {
				h += float64(row[i]) * float64(v.W1[i*v.Hidden+j])
			}
			pre[j] = h
			act[j] = h * 0.5 * (1 + math.Erf(h/math.Sqrt2))
			z += act[j] * float64(v.W2[j])
		}
		p := 1 / (1 + math.Exp(-z))
		dz := 2 * (p - float64(y[r])) / n * p * (1 - p)
		gB2 += dz
		for j := 0; j < v.Hidden; j++ {
			gW2[j] += dz * act[j]
			h := pre[j]
			dact := 0.5*(1+math.Erf(h/math.Sqrt2)) + h*math.Exp(-h*h/2)/math.Sqrt(2*math.Pi)
			dh := dz * float64(v.W2[j]) * dact
			gB1[j] += dh
			for i := 0; i < v.Inputs; i++ {
				gW1[i*v.Hidden+j] += dh * float64(row[i])
			}
		}
	}
	out := append(append(append(gW1, gB1...), gW2...), gB2)
	return out
}

// flatParams returns the weights flattened in the order W1, b1, W2, b2.
func flatParams(v *ValueHead) []float64 {
	var out []float64
	for _, s := range [][]float32{v.W1, v.B1, v.W2, {v.B2}} {
		for _, e := range s {
			out = append(out, float64(e))
		}
	}
	return out
}

// TestValueHeadAdamWMatchesPlainGo checks three Fit steps against torch.optim.AdamW written in
// float64 plain Go (hand-derived gradients, global-norm clip, bias correction, decoupled decay).
func TestValueHeadAdamWMatchesPlainGo(t *testing.T) {
	b := testBackend(t)
	x, y := valueHeadData(50, 12)
	opt := valueHeadTestOpt()
	opt.HeadsLR = 0.05 // large steps and decay so that a wrong formula shows
	opt.WeightDecay = 0.5
	opt.GradClip = 0.05 // below the initial gradient norm: the clip is active
	v := NewValueHead(config.ValueHead{Hidden: 32}, 36, 77)
	ref := v.Snapshot()
	p := flatParams(ref)
	m := make([]float64, len(p))
	s2 := make([]float64, len(p))
	clipped := 0
	for step := 1; step <= 3; step++ {
		g := plainGrads(ref, x, y)
		norm := 0.0
		for _, e := range g {
			norm += e * e
		}
		norm = math.Sqrt(norm)
		coef := math.Min(1, opt.GradClip/(norm+1e-6))
		if coef < 1 {
			clipped++
		}
		bc1 := 1 - math.Pow(opt.HeadsBeta1, float64(step))
		bc2 := 1 - math.Pow(opt.Beta2, float64(step))
		for i := range p {
			gi := g[i] * coef
			p[i] *= 1 - opt.HeadsLR*opt.WeightDecay
			m[i] = opt.HeadsBeta1*m[i] + (1-opt.HeadsBeta1)*gi
			s2[i] = opt.Beta2*s2[i] + (1-opt.Beta2)*gi*gi
			p[i] -= opt.HeadsLR / bc1 * m[i] / (math.Sqrt(s2[i])/math.Sqrt(bc2) + opt.Epsilon)
		}
		// write p back into ref for the next gradient
		k := 0
		for _, s := range [][]float32{ref.W1, ref.B1, ref.W2} {
			for i := range s {
				s[i] = float32(p[k])
				k++
			}
		}
		ref.B2 = float32(p[k])
	}
	if clipped == 0 {
		t.Fatal("test setup: the clip never engaged")
	}
	if _, _, err := v.Fit(b, opt, x, y, 3); err != nil {
		t.Fatal(err)
	}
	// Adam divides by √v, so parameters whose gradient is nearly zero amplify float32 rounding
	// of the gradient; a wrong formula (bias correction, decay, clip) is off by ~lr·wd·|p| ≥ 1e-3
	// or ~lr = 5e-2. Bound the worst parameter at 4e-3·lr and the mean at 1e-4·lr.
	got := flatParams(v)
	worst, sum := 0.0, 0.0
	for i := range got {
		d := math.Abs(got[i] - p[i])
		sum += d
		if d > 2e-4 {
			t.Fatalf("param %d after 3 steps: graph %.7f, plain-Go AdamW %.7f", i, got[i], p[i])
		}
		worst = max(worst, d)
	}
	t.Logf("max |Δ| %.3g, mean |Δ| %.3g", worst, sum/float64(len(got)))
	if sum/float64(len(got)) > 5e-6 {
		t.Fatalf("mean deviation from plain-Go AdamW %.3g", sum/float64(len(got)))
	}
}

// firstMomentNorm is ‖m‖ over all parameters; after one step from m = 0 it is (1−β1)·‖g_clipped‖.
func firstMomentNorm(v *ValueHead) float64 {
	s := float64(v.MB2) * float64(v.MB2)
	for _, m := range [][]float32{v.MW1, v.MB1, v.MW2} {
		for _, e := range m {
			s += float64(e) * float64(e)
		}
	}
	return math.Sqrt(s)
}

func TestValueHeadGradClip(t *testing.T) {
	b := testBackend(t)
	// Large inputs make the gradient of W1 huge while the sigmoid stays unsaturated.
	x, y := valueHeadData(40, 9)
	for _, row := range x {
		for j := range row {
			row[j] *= 500
		}
	}
	base := NewValueHead(config.ValueHead{Hidden: 32}, 36, 21)
	for i := range base.W1 {
		base.W1[i] = 0
	}
	for j := range base.B1 {
		base.B1[j] = 0.5
	}
	for j := range base.W2 {
		base.W2[j] = 0.3
	}
	base.B2 = -0.3 * 32 * 0.5 * 0.5 * (1 + float32(math.Erf(0.5/math.Sqrt2))) // z ≈ 0 at the start
	raw := plainGradNorm(base, x, y)
	if raw < 20 {
		t.Fatalf("test setup: gradient norm %.3g is not huge", raw)
	}

	for _, tc := range []struct {
		clip, wantNorm float64
	}{
		{1.0, 1.0 / (1 + 1e-6/raw)}, // clipped: ‖g‖ → clip·‖g‖/(‖g‖+1e-6)
		{0, raw},                    // no clip
		{10 * raw, raw},             // clip above the norm leaves g alone
	} {
		v := base.Snapshot()
		opt := valueHeadTestOpt()
		opt.GradClip = tc.clip
		if _, _, err := v.Fit(b, opt, x, y, 1); err != nil {
			t.Fatal(err)
		}
		if math.Abs(v.lastGradNorm-raw)/raw > 1e-3 {
			t.Fatalf("clip %g: graph gradient norm %.6g, plain Go %.6g", tc.clip, v.lastGradNorm, raw)
		}
		got := firstMomentNorm(v) / (1 - opt.HeadsBeta1)
		if math.Abs(got-tc.wantNorm)/tc.wantNorm > 1e-3 {
			t.Fatalf("clip %g: applied gradient norm %.6g, want %.6g", tc.clip, got, tc.wantNorm)
		}
		// W1 starts at 0, so decay is moot: a first AdamW step moves each weight by at most ≈ lr.
		for i := range v.W1 {
			if d := math.Abs(float64(v.W1[i] - base.W1[i])); d > opt.HeadsLR*1.001 {
				t.Fatalf("clip %g: W1[%d] moved %.3g > lr", tc.clip, i, d)
			}
		}
	}
}

func TestValueHeadDeterminismAndSnapshot(t *testing.T) {
	b := testBackend(t)
	x, y := valueHeadData(100, 4)
	opt := valueHeadTestOpt()
	h1 := NewValueHead(config.ValueHead{Hidden: 32}, 36, 99)
	h2 := NewValueHead(config.ValueHead{Hidden: 32}, 36, 99)
	h3 := NewValueHead(config.ValueHead{Hidden: 32}, 36, 100)
	snap := h1.Snapshot()
	snapBytes, _ := snap.MarshalBinary()
	for _, h := range []*ValueHead{h1, h2} {
		if _, _, err := h.Fit(b, opt, x, y, 20); err != nil {
			t.Fatal(err)
		}
	}
	b1, err := h1.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := h2.MarshalBinary()
	if !bytes.Equal(b1, b2) {
		t.Fatal("same seed and data gave different weights")
	}
	// A large batch (bucket 2048) takes simplego's parallel code paths; still bitwise equal.
	xl, yl := valueHeadData(1500, 6)
	l1 := NewValueHead(config.ValueHead{Hidden: 32}, 36, 3)
	l2 := NewValueHead(config.ValueHead{Hidden: 32}, 36, 3)
	for _, h := range []*ValueHead{l1, l2} {
		if _, _, err := h.Fit(b, opt, xl, yl, 3); err != nil {
			t.Fatal(err)
		}
	}
	if d1, _ := l1.MarshalBinary(); !bytes.Equal(d1, valueHeadMust(l2.MarshalBinary())) {
		t.Fatal("same seed and data gave different weights on a large batch")
	}
	b3, _ := h3.MarshalBinary()
	if bytes.Equal(b3[24:], snapBytes[24:]) {
		t.Fatal("different seeds gave the same initial weights")
	}
	if after, _ := snap.MarshalBinary(); !bytes.Equal(after, snapBytes) || snap.Step != 0 {
		t.Fatal("fitting the original changed its snapshot")
	}
	if bytes.Equal(b1, snapBytes) {
		t.Fatal("fit did not change the head")
	}
	// In-place edits of the original (as a caller might make) must not reach the snapshot either.
	snap2 := h1.Snapshot()
	before, _ := snap2.MarshalBinary()
	for _, sl := range [][]float32{h1.W1, h1.B1, h1.W2, h1.MW1, h1.MB1, h1.MW2, h1.VW1, h1.VB1, h1.VW2} {
		sl[0] += 1
	}
	h1.B2++
	if after, _ := snap2.MarshalBinary(); !bytes.Equal(after, before) {
		t.Fatal("editing the original in place changed its snapshot")
	}
}

func TestValueHeadMarshalRoundTrip(t *testing.T) {
	b := testBackend(t)
	x, y := valueHeadData(30, 8)
	v := NewValueHead(config.ValueHead{Hidden: 32}, 36, 1)
	if _, _, err := v.Fit(b, valueHeadTestOpt(), x, y, 3); err != nil {
		t.Fatal(err)
	}
	data, err := v.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var w ValueHead
	if err := w.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	again, _ := w.MarshalBinary()
	if !bytes.Equal(data, again) || w.Step != 3 || w.Inputs != 36 || w.Hidden != 32 || w.B2 != v.B2 || w.VB2 != v.VB2 {
		t.Fatal("round trip changed the head")
	}
	// Continuing the fit from the decoded copy matches continuing the original.
	if _, _, err := v.Fit(b, valueHeadTestOpt(), x, y, 2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Fit(b, valueHeadTestOpt(), x, y, 2); err != nil {
		t.Fatal(err)
	}
	d1, _ := v.MarshalBinary()
	d2, _ := w.MarshalBinary()
	if !bytes.Equal(d1, d2) {
		t.Fatal("fit from the decoded head diverged from the original")
	}

	flipped := append([]byte(nil), data...)
	flipped[100] ^= 1
	bad := map[string][]byte{
		"empty":     nil,
		"garbage":   []byte("this is not a value head checkpoint at all......"),
		"truncated": data[:len(data)-5],
		"bit flip":  flipped,
		"version":   append(append([]byte("EVVH"), 9, 0, 0, 0), data[8:]...),
	}
	for name, d := range bad {
		var u ValueHead
		if err := u.UnmarshalBinary(d); err == nil {
			t.Errorf("%s: unmarshal accepted it", name)
		}
	}
}

// BenchmarkValueHeadFit times one production refit: 50 AdamW steps over 2,000 replay states.
func BenchmarkValueHeadFit(b *testing.B) {
	be, err := NewBackend("simplego")
	if err != nil {
		b.Fatal(err)
	}
	defer be.Finalize()
	x, y := valueHeadData(2000, 1)
	for b.Loop() {
		v := NewValueHead(config.ValueHead{Hidden: 32}, 36, 1)
		if _, _, err := v.Fit(be, valueHeadTestOpt(), x, y, 50); err != nil {
			b.Fatal(err)
		}
	}
}

func valueHeadMust[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
