package stats

import (
	"fmt"

	"gonum.org/v1/gonum/mathext"
)

// UpperTail is P(Bin(n, ½) ≥ k), exact up to floating-point rounding: for 1 ≤ k ≤ n it is the
// regularised incomplete beta I_{1/2}(k, n−k+1). It is never computed as 1 − CDF, which
// cancels to 0 once the tail drops below about 1e-16 (ARCHITECTURE.md §10). k ≤ 0 gives 1, k > n
// gives 0. It panics on n < 0.
func UpperTail(n, k int) float64 {
	if n < 0 {
		panic(fmt.Sprintf("stats: UpperTail(%d, %d): negative n", n, k))
	}
	switch {
	case k <= 0:
		return 1
	case k > n:
		return 0
	}
	return mathext.RegIncBeta(float64(k), float64(n-k+1), 0.5)
}

// SignTest returns the two directional sign-test p-values of paper Eq. (11) for w wins and
// l losses (ties are not an argument: they carry no sign information):
//
//	p+ = P(Bin(D, ½) ≥ W),  p− = P(Bin(D, ½) ≥ L),  D = W + L,
//
// with p+ = p− = 1 when D = 0.
func SignTest(w, l int) (pPlus, pMinus float64) {
	if w < 0 || l < 0 {
		panic(fmt.Sprintf("stats: SignTest(%d, %d): negative count", w, l))
	}
	d := w + l
	if d == 0 {
		return 1, 1
	}
	return UpperTail(d, w), UpperTail(d, l)
}

// SpendLevel is the level α_{j,l} = α / (j(j+1)·l(l+1)) of look l of comparison j (paper
// Eq. (12)); each direction is tested at half of it. Summed over every j, l ≥ 1 it is α
// (Prop. C.5), so a run that uses each (j, l) at most once spends at most α.
func SpendLevel(alpha float64, j, l int) float64 {
	if j < 1 || l < 1 {
		panic(fmt.Sprintf("stats: SpendLevel: j = %d and l = %d must be >= 1", j, l))
	}
	jf, lf := float64(j), float64(l)
	return alpha / (jf * (jf + 1) * lf * (lf + 1))
}

// ClopperPearson returns exact one-sided confidence bounds for a binomial proportion after x
// successes in n trials: lo is the conf-level lower bound, hi the conf-level upper bound
// (lo = 0 when x = 0, hi = 1 when x = n). Tests of error rates use hi.
func ClopperPearson(x, n int, conf float64) (lo, hi float64) {
	if n < 1 || x < 0 || x > n || !(conf > 0 && conf < 1) {
		panic(fmt.Sprintf("stats: ClopperPearson(%d, %d, %g): bad argument", x, n, conf))
	}
	lo, hi = 0, 1
	if x > 0 {
		lo = mathext.InvRegIncBeta(float64(x), float64(n-x+1), 1-conf)
	}
	if x < n {
		hi = mathext.InvRegIncBeta(float64(x+1), float64(n-x), conf)
	}
	return lo, hi
}
