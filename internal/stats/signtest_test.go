package stats

import (
	"math"
	"math/big"
	"testing"

	"gonum.org/v1/gonum/mathext"
)

// exactTails returns P(Bin(n, ½) ≥ k) for k = 0..n+1 and P(Bin(n, ½) = k) for k = 0..n, summed
// exactly in big integers and rounded once to float64.
func exactTails(n int) (tail, point []float64) {
	row := make([]*big.Int, n+1)
	row[0] = big.NewInt(1)
	for i := 0; i < n; i++ {
		row[i+1] = new(big.Int).Mul(row[i], big.NewInt(int64(n-i)))
		row[i+1].Quo(row[i+1], big.NewInt(int64(i+1)))
	}
	toFloat := func(x *big.Int) float64 {
		f := new(big.Float).SetPrec(256).SetInt(x)
		v, _ := f.SetMantExp(f, -n).Float64()
		return v
	}
	tail, point = make([]float64, n+2), make([]float64, n+1)
	sum := new(big.Int)
	for k := n; k >= 0; k-- {
		sum.Add(sum, row[k])
		tail[k], point[k] = toFloat(sum), toFloat(row[k])
	}
	return tail, point
}

// tailSizes are the n checked against the exact sums: every n up to 300, then a spread up to
// 2,000 (every n would take minutes of big-integer arithmetic).
func tailSizes() []int {
	var ns []int
	for n := 0; n <= 300; n++ {
		ns = append(ns, n)
	}
	for n := 301; n < 2000; n += 89 {
		ns = append(ns, n)
	}
	return append(ns, 1023, 1024, 1999, 2000)
}

// UpperTail matches the exact big-integer tail to 1e-10 relative error for every k, down to
// the smallest normal float64 (below it both are 0 or subnormal).
func TestUpperTailMatchesBigIntegerSums(t *testing.T) {
	worst := 0.0
	for _, n := range tailSizes() {
		tail, _ := exactTails(n)
		for k := -1; k <= n+1; k++ {
			want := 1.0
			if k >= 0 {
				want = tail[k]
			}
			got := UpperTail(n, k)
			if want < 0x1p-1022 {
				if got > 0x1p-1022 {
					t.Fatalf("UpperTail(%d, %d) = %g, exact %g", n, k, got, want)
				}
				continue
			}
			rel := math.Abs(got-want) / want
			worst = max(worst, rel)
			if rel > 1e-10 {
				t.Fatalf("UpperTail(%d, %d) = %.17g, exact %.17g (relative error %g)", n, k, got, want, rel)
			}
		}
	}
	t.Logf("worst relative error %.3g", worst)
}

// Far tails keep their size instead of collapsing to 0 as 1 − CDF would.
func TestUpperTailFarTail(t *testing.T) {
	for _, c := range []struct {
		n, k int
		want float64
	}{
		{60, 60, math.Ldexp(1, -60)},
		{200, 200, math.Ldexp(1, -200)},
		{1000, 1000, math.Ldexp(1, -1000)},
		{100, 99, 101 * math.Ldexp(1, -100)},
	} {
		if got := UpperTail(c.n, c.k); math.Abs(got-c.want) > 1e-12*c.want {
			t.Errorf("UpperTail(%d, %d) = %g, want %g", c.n, c.k, got, c.want)
		}
	}
}

// Cor. C.4: p+ + p− = 1 + P(B = W), so both directions can never reject at a level below ½.
func TestSignTestSumIdentity(t *testing.T) {
	for _, d := range []int{1, 2, 3, 10, 15, 64, 255, 1000, 2000} {
		_, point := exactTails(d)
		for w := 0; w <= d; w++ {
			pp, pm := SignTest(w, d-w)
			if got, want := pp+pm, 1+point[w]; math.Abs(got-want) > 1e-10*want {
				t.Fatalf("D=%d W=%d: p+ + p− = %.17g, want 1 + P(B=W) = %.17g", d, w, got, want)
			}
			if pp < 0.5 && pm < 0.5 {
				t.Fatalf("D=%d W=%d: both p-values below ½ (%g, %g)", d, w, pp, pm)
			}
		}
	}
}

func TestSignTestConventions(t *testing.T) {
	if pp, pm := SignTest(0, 0); pp != 1 || pm != 1 {
		t.Errorf("D = 0: p = (%g, %g), want (1, 1)", pp, pm)
	}
	// No losses: p− = P(B ≥ 0) = 1; p+ = 2^−W.
	if pp, pm := SignTest(15, 0); math.Abs(pp-math.Ldexp(1, -15)) > 1e-14*pp || pm != 1 {
		t.Errorf("15 wins: p = (%g, %g)", pp, pm)
	}
	// Direction symmetry.
	if a, b := SignTest(7, 3); func() bool { c, d := SignTest(3, 7); return a != d || b != c }() {
		t.Errorf("SignTest(7,3) and SignTest(3,7) are not mirror images")
	}
	for _, bad := range []func(){
		func() { SignTest(-1, 2) },
		func() { UpperTail(-1, 0) },
		func() { SpendLevel(0.05, 0, 1) },
		func() { SpendLevel(0.05, 1, 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic on a bad argument")
				}
			}()
			bad()
		}()
	}
}

// Prop. C.5: over a J × L rectangle the levels sum to α(1 − 1/(J+1))(1 − 1/(L+1)) < α.
func TestSpendLevelRectangleSum(t *testing.T) {
	const alpha = 0.05
	for _, r := range [][2]int{{1, 1}, {1, 15}, {3, 7}, {40, 300}, {500, 500}} {
		sum := 0.0
		for j := 1; j <= r[0]; j++ {
			for l := 1; l <= r[1]; l++ {
				sum += SpendLevel(alpha, j, l)
			}
		}
		want := alpha * (1 - 1/float64(r[0]+1)) * (1 - 1/float64(r[1]+1))
		if math.Abs(sum-want) > 1e-14 || sum >= alpha {
			t.Errorf("J=%d L=%d: sum %.17g, want %.17g (< α)", r[0], r[1], sum, want)
		}
	}
	if got := SpendLevel(alpha, 1, 1); got != alpha/4 {
		t.Errorf("level(1,1) = %g, want α/4", got)
	}
}

func TestClopperPearson(t *testing.T) {
	const conf = 0.95
	// Closed forms at the edges.
	lo, hi := ClopperPearson(0, 1000, conf)
	if want := 1 - math.Pow(1-conf, 1.0/1000); lo != 0 || math.Abs(hi-want) > 1e-12 {
		t.Errorf("x=0: (%g, %g), want (0, %g)", lo, hi, want)
	}
	lo, hi = ClopperPearson(20, 20, conf)
	if want := math.Pow(1-conf, 1.0/20); hi != 1 || math.Abs(lo-want) > 1e-12 {
		t.Errorf("x=n: (%g, %g), want (%g, 1)", lo, hi, want)
	}
	// Inside: the bounds are where the binomial tails equal 1 − conf:
	// P(Bin(n, hi) ≤ x) = I_{1−hi}(n−x, x+1) and P(Bin(n, lo) ≥ x) = I_lo(x, n−x+1).
	for _, c := range [][2]int{{1, 10}, {12, 1000}, {500, 1000}, {999, 1000}} {
		x, n := c[0], c[1]
		lo, hi := ClopperPearson(x, n, conf)
		if !(lo < float64(x)/float64(n) && float64(x)/float64(n) < hi) {
			t.Errorf("x=%d n=%d: bounds (%g, %g) do not bracket %g", x, n, lo, hi, float64(x)/float64(n))
		}
		if got := mathext.RegIncBeta(float64(n-x), float64(x+1), 1-hi); math.Abs(got-(1-conf)) > 1e-9 {
			t.Errorf("x=%d n=%d: P(Bin(n, hi) ≤ x) = %g", x, n, got)
		}
		if got := mathext.RegIncBeta(float64(x), float64(n-x+1), lo); math.Abs(got-(1-conf)) > 1e-9 {
			t.Errorf("x=%d n=%d: P(Bin(n, lo) ≥ x) = %g", x, n, got)
		}
	}
}
