package policy

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func probSum(logp []float64) float64 {
	var s float64
	for _, l := range logp {
		s += math.Exp(l)
	}
	return s
}

func TestLogSoftmaxNormalises(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, logits := range [][]float64{
		{0, 0},
		{1, 2, 3},
		{-5, 4, 0.5, 2, -1},
		{1000, 999, 998},     // no overflow
		{-1000, -1001, -999}, // no underflow to all zeros
		{3, math.Inf(-1), 1}, // a masked action gets probability 0
	} {
		logp := LogSoftmax(logits)
		if len(logp) != len(logits) {
			t.Fatalf("LogSoftmax(%v) has %d entries", logits, len(logp))
		}
		if s := probSum(logp); math.Abs(s-1) > 1e-12 {
			t.Errorf("LogSoftmax(%v): probabilities sum to %.15f", logits, s)
		}
		for i := range logits {
			if logp[i] > 0 || math.IsNaN(logp[i]) {
				t.Errorf("LogSoftmax(%v)[%d] = %v, want a log-probability", logits, i, logp[i])
			}
			for j := range logits {
				if logits[i] > logits[j] && !(logp[i] > logp[j]) {
					t.Errorf("LogSoftmax(%v) does not keep the order of %d and %d", logits, i, j)
				}
			}
		}
	}
	if lp := LogSoftmax([]float64{3, math.Inf(-1), 1}); !math.IsInf(lp[1], -1) {
		t.Errorf("a -Inf logit gets log-prob %v, want -Inf", lp[1])
	}
	// Exact values: softmax of {0, ln 3} is {1/4, 3/4}.
	lp := LogSoftmax([]float64{0, math.Log(3)})
	if math.Abs(lp[0]-math.Log(0.25)) > 1e-12 || math.Abs(lp[1]-math.Log(0.75)) > 1e-12 {
		t.Errorf("LogSoftmax({0, ln 3}) = %v, want {ln 1/4, ln 3/4}", lp)
	}
	for range 200 {
		logits := make([]float64, 1+rng.IntN(40))
		for i := range logits {
			logits[i] = rng.NormFloat64() * 10
		}
		if s := probSum(LogSoftmax(logits)); math.Abs(s-1) > 1e-12 {
			t.Fatalf("LogSoftmax(%v): probabilities sum to %.15f", logits, s)
		}
	}
}

func TestLogSoftmaxSingletonIsExactlyZero(t *testing.T) {
	for _, l := range []float64{0, 1, -7.25, 1e300, -1e300, math.Inf(-1), math.Inf(1), math.NaN()} {
		lp := LogSoftmax([]float64{l})
		if len(lp) != 1 || lp[0] != 0 || math.Signbit(lp[0]) {
			t.Errorf("LogSoftmax({%v}) = %v, want exactly {0}", l, lp)
		}
	}
	if lp := LogSoftmax(nil); len(lp) != 0 {
		t.Errorf("LogSoftmax(nil) = %v, want empty", lp)
	}
}

func TestLogSoftmaxShiftInvariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		logits := make([]float64, 2+rng.IntN(20))
		for i := range logits {
			logits[i] = rng.NormFloat64() * 5
		}
		base := LogSoftmax(logits)
		for _, c := range []float64{-700, -3.5, 0.25, 42, 700} {
			shifted := make([]float64, len(logits))
			for i, l := range logits {
				shifted[i] = l + c
			}
			got := LogSoftmax(shifted)
			for i := range got {
				if math.Abs(got[i]-base[i]) > 1e-9 {
					t.Fatalf("LogSoftmax is not shift invariant: %v + %v gives %v, want %v", logits, c, got, base)
				}
			}
		}
	}
}

func TestSampleSeededDeterminism(t *testing.T) {
	logp := LogSoftmax([]float64{0.3, -1, 2, 0, 1.5, -0.2})
	draw := func(seed uint64) []int {
		rng := rand.New(rand.NewPCG(seed, seed>>1|1))
		out := make([]int, 200)
		for i := range out {
			k, err := Sample(logp, rng)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = k
		}
		return out
	}
	a, b, c := draw(17), draw(17), draw(18)
	if !slices.Equal(a, b) {
		t.Error("the same seed drew different sequences")
	}
	if slices.Equal(a, c) {
		t.Error("different seeds drew the same 200 draws")
	}
	// One decision as the rollout draws it: a fresh generator per decision seed.
	for s := uint64(1); s < 50; s++ {
		x, _ := Sample(logp, rand.New(rand.NewPCG(s, s>>1|1)))
		y, _ := Sample(logp, rand.New(rand.NewPCG(s, s>>1|1)))
		if x != y {
			t.Fatalf("seed %d: draws %d and %d", s, x, y)
		}
	}
}

func TestSampleFrequencies(t *testing.T) {
	probs := []float64{0.5, 0.05, 0.3, 0, 0.15}
	logp := make([]float64, len(probs))
	for i, p := range probs {
		logp[i] = math.Log(p) // log 0 = -Inf: never drawn
	}
	const n = 100_000
	counts := make([]int, len(probs))
	rng := rand.New(rand.NewPCG(7, 11))
	for range n {
		k, err := Sample(logp, rng)
		if err != nil {
			t.Fatal(err)
		}
		counts[k]++
	}
	for i, p := range probs {
		f := float64(counts[i]) / n
		t.Logf("p=%.2f freq=%.4f", p, f)
		if math.Abs(f-p) > 0.01 {
			t.Errorf("action %d: frequency %.4f, want %.2f +- 0.01", i, f, p)
		}
	}
	if counts[3] != 0 {
		t.Errorf("a zero-probability action was drawn %d times", counts[3])
	}
	// Frequencies of the prior's own normalisation.
	logp = LogSoftmax([]float64{1, 0, -1, 2})
	counts = make([]int, len(logp))
	for range n {
		k, _ := Sample(logp, rng)
		counts[k]++
	}
	for i, l := range logp {
		if f := float64(counts[i]) / n; math.Abs(f-math.Exp(l)) > 0.01 {
			t.Errorf("softmax action %d: frequency %.4f, want %.4f +- 0.01", i, f, math.Exp(l))
		}
	}
}

// topSource makes rand.Float64 return its largest value, 1 - 2^-53.
type topSource struct{}

func (topSource) Uint64() uint64 { return math.MaxUint64 }

// TestSampleRoundingNeverDrawsAMaskedAction: when the probabilities sum to a little less than
// the uniform draw, the fallback is the last action with positive probability.
func TestSampleRoundingNeverDrawsAMaskedAction(t *testing.T) {
	rng := rand.New(topSource{})
	logp := []float64{math.Log(0.5), math.Log(0.5) - 1e-12, math.Inf(-1), math.Inf(-1)}
	if k, err := Sample(logp, rng); err != nil || k != 1 {
		t.Errorf("Sample = %d, %v; want 1, the last action with positive probability", k, err)
	}
	if _, err := Sample([]float64{math.Inf(-1), math.Inf(-1)}, rng); err == nil {
		t.Error("Sample with no positive probability did not fail")
	}
}

func TestSampleEdgeCases(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	if _, err := Sample(nil, rng); err == nil {
		t.Error("Sample over no legal action did not fail")
	}
	for range 100 {
		if k, err := Sample([]float64{0}, rng); err != nil || k != 0 {
			t.Fatalf("Sample of a singleton = %d, %v", k, err)
		}
		// A mass a rounding error short of 1 still returns a valid index.
		if k, err := Sample([]float64{math.Log(0.5), math.Log(0.5 - 1e-15)}, rng); err != nil || k < 0 || k > 1 {
			t.Fatalf("Sample = %d, %v", k, err)
		}
	}
}

func TestPadToFixedK(t *testing.T) {
	rows := make([]float32, 3*ActionWidth)
	for i := range rows {
		rows[i] = float32(i + 1)
	}
	padded, mask, ok := Pad(rows, 5)
	if !ok || len(padded) != 5*ActionWidth || len(mask) != 5 {
		t.Fatalf("pad: ok %v len %d mask %d", ok, len(padded), len(mask))
	}
	for i, want := range []bool{true, true, true, false, false} {
		if mask[i] != want {
			t.Fatalf("mask %v", mask)
		}
	}
	if padded[3*ActionWidth-1] != float32(3*ActionWidth) || padded[3*ActionWidth] != 0 {
		t.Fatal("rows not copied in place or padding not zero")
	}
	if _, _, ok := Pad(rows, 2); ok {
		t.Fatal("3 legal actions fit a K of 2")
	}
}

// Temper is the identity at τ = 1 and otherwise the renormalised p^(1/τ): sharper below 1,
// flatter above, a distribution either way.
func TestTemper(t *testing.T) {
	logp := LogSoftmax([]float64{0.5, -1, 2})
	if got := Temper(logp, 1); &got[0] != &logp[0] {
		t.Fatal("τ = 1 must return the log-probabilities themselves")
	}
	for _, tau := range []float64{0.5, 2} {
		got := Temper(logp, tau)
		var sum float64
		for i, l := range got {
			sum += math.Exp(l)
			if want := math.Exp(logp[i]/tau) / (math.Exp(logp[0]/tau) + math.Exp(logp[1]/tau) + math.Exp(logp[2]/tau)); math.Abs(math.Exp(l)-want) > 1e-12 {
				t.Fatalf("τ = %g: p[%d] = %g, want %g", tau, i, math.Exp(l), want)
			}
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Fatalf("τ = %g: probabilities sum to %g", tau, sum)
		}
		if sharper := got[2] > logp[2]; sharper != (tau < 1) {
			t.Fatalf("τ = %g: the mode's log-prob %g against %g", tau, got[2], logp[2])
		}
	}
}
