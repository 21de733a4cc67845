package gpu

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// The update's kernels in plain Go, for the CPU (engines on simplego; see kernels.go). The
// update differentiates the network over every legal action of every decision, and simplego
// spent that time in generic single-threaded matmuls, a float64 math.Erf per element, broadcast
// iterators and work on padded actions (BenchmarkUpdate: 15 s for 192 trajectories on 2 cores).
// These kernels compute the same functions over the exact legal actions: matmuls on gonum's
// vector kernels, a tabulated GELU, fused elementwise passes, and the batch split into fixed
// groups run on every core. Each group is computed in one fixed order and the groups' partial
// gradients are added in group order, so results do not depend on the number of cores.

var blas32 gonum.Implementation

// mm sets c [m, n] to a·b, or adds a·b to c when acc; a is [m, k] ([k, m] when ta) and b is
// [k, n] ([n, k] when tb), all row-major and dense. It runs on the calling goroutine (the
// callers split the work), with gonum's vector kernels: rows of c accumulate whole rows of b
// scaled by a's entries in order of k, skipping zero entries (action descriptors are sparse),
// as gonum's serial Sgemm does.
func mm(ta, tb bool, m, n, k int, a, b []float32, acc bool, c []float32) {
	c = c[:m*n]
	if !acc {
		clear(c)
	}
	switch {
	case !ta && !tb:
		for i := range m {
			ci := c[i*n : (i+1)*n]
			for l, t := range a[i*k : (i+1)*k] {
				if t != 0 {
					blas32.Saxpy(n, t, b[l*n:(l+1)*n], 1, ci, 1)
				}
			}
		}
	case ta && !tb:
		for l := range k {
			bl := b[l*n : (l+1)*n]
			for i, t := range a[l*m : (l+1)*m] {
				if t != 0 {
					blas32.Saxpy(n, t, bl, 1, c[i*n:(i+1)*n], 1)
				}
			}
		}
	case !ta && tb:
		for i := range m {
			ai, ci := a[i*k:(i+1)*k], c[i*n:(i+1)*n]
			for j := range ci {
				ci[j] += blas32.Sdot(k, ai, 1, b[j*k:(j+1)*k], 1)
			}
		}
	default:
		var beta float32
		if acc {
			beta = 1
		}
		blas32.Sgemm(blas.Trans, blas.Trans, m, n, k, 1, a, max(m, 1), b, max(k, 1), beta, c, n)
	}
}

// forEach runs fn(0) … fn(n−1) on up to GOMAXPROCS goroutines. Each call must write only its own
// outputs, so the results do not depend on the schedule.
func forEach(n int, fn func(i int)) {
	w := min(n, runtime.GOMAXPROCS(0))
	if w <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// groups splits [0, n) into consecutive ranges of at most size items.
func groups(n, size int) [][2]int {
	var out [][2]int
	for lo := 0; lo < n; lo += size {
		out = append(out, [2]int{lo, min(lo+size, n)})
	}
	return out
}

// GELU(x) = x·Φ(x) and GELU′(x) = Φ(x) + x·φ(x), with Φ and φ the standard normal's CDF and
// density (the graph's x·(erf(x/√2) + 1)·½). normTable holds, for each interval of width 1/16
// on [−8, 8), the cubics in the position f ∈ [0, 1) within it that interpolate Φ and φ with
// their derivatives at both ends (Hermite; φ′ = −x·φ), evaluated in float32: within 8e-8 of Φ
// and φ everywhere, as close as the graph's float32 (erf + 1)·½, at a fraction of math.Erf's and
// math.Exp's cost. Beyond the table Φ is 0 or 1 and φ is 0, as they are in float32.
const (
	normHalf    = 8   // the table covers [−normHalf, normHalf)
	normPerUnit = 16  // intervals per unit
	normSize    = 256 // 2·normHalf·normPerUnit intervals, a power of two
)

var normTable = func() (t [normSize][8]float32) {
	node := func(x float64) (cdf, pdf float64) {
		return 0.5 * math.Erfc(-x/math.Sqrt2), math.Exp(-x*x/2) / math.Sqrt(2*math.Pi)
	}
	const h = 1.0 / normPerUnit
	// cubic returns a + b·f + c·f² + d·f³ through (0, y0) and (1, y1) with slopes s0 and s1 (per
	// unit of f).
	cubic := func(y0, s0, y1, s1 float64) [4]float32 {
		return [4]float32{float32(y0), float32(s0), float32(3*(y1-y0) - 2*s0 - s1), float32(2*(y0-y1) + s0 + s1)}
	}
	for i := range t {
		x0 := -normHalf + float64(i)*h
		c0, p0 := node(x0)
		c1, p1 := node(x0 + h)
		cdf, pdf := cubic(c0, p0*h, c1, p1*h), cubic(p0, -x0*p0*h, p1, -(x0+h)*p1*h)
		copy(t[i][:4], cdf[:])
		copy(t[i][4:], pdf[:])
	}
	return t
}()

// normAt returns x's table interval and the position in it (−normHalf < x < normHalf). The
// index comes from x·16 + 128 (rounded), the position from x·16 alone, so it keeps x's precision.
func normAt(x float32) (*[8]float32, float32) {
	t := x * normPerUnit
	i := int(t + normHalf*normPerUnit)
	return &normTable[i&(normSize-1)], t - float32(i-normHalf*normPerUnit)
}

// gelu32 is GELU(x).
func gelu32(x float32) float32 {
	if !(x > -normHalf) { // NaN too: GELU(NaN) = NaN·0 stays NaN
		return x * 0
	}
	if x >= normHalf {
		return x
	}
	c, f := normAt(x)
	return x * (c[0] + f*(c[1]+f*(c[2]+f*c[3])))
}

// geluBoth returns GELU(x) and GELU′(x).
func geluBoth(x float32) (y, dy float32) {
	if !(x > -normHalf) {
		return x * 0, 0
	}
	if x >= normHalf {
		return x, 1
	}
	c, f := normAt(x)
	cdf := c[0] + f*(c[1]+f*(c[2]+f*c[3]))
	pdf := c[4] + f*(c[5]+f*(c[6]+f*c[7]))
	return x * cdf, cdf + x*pdf
}

// rmsRows sets y to N(x) = x/√(mean(x²) + 1e-6) row by row (rows of width w) and r to each
// row's divisor.
func rmsRows(x, y, r []float32, w int) {
	for i := range r {
		row, out := x[i*w:(i+1)*w], y[i*w:(i+1)*w]
		s := 0.0
		for _, v := range row {
			s += float64(v) * float64(v)
		}
		d := float32(math.Sqrt(float64(float32(s/float64(w)) + 1e-6)))
		r[i] = d
		for j, v := range row {
			out[j] = v / d
		}
	}
}

// rmsBack turns dy, the gradient at y = N(x) (rows of width w, divisors r), into the gradient
// at x in place: dx = (dy − y·mean(dy·y))/r.
func rmsBack(y, r, dy []float32, w int) {
	for i, d := range r {
		yr, g := y[i*w:(i+1)*w], dy[i*w:(i+1)*w]
		s := 0.0
		for j, v := range yr {
			s += float64(v) * float64(g[j])
		}
		m := s / float64(w)
		for j, v := range yr {
			g[j] = float32((float64(g[j]) - float64(v)*m) / float64(d))
		}
	}
}

// addRows adds the row vector b to every row of x.
func addRows(x, b []float32) {
	w := len(b)
	for i := 0; i < len(x); i += w {
		row := x[i : i+w]
		for j, v := range b {
			row[j] += v
		}
	}
}

// geluRows sets a to GELU(u) and d to GELU′(u), element by element.
func geluRows(u, a, d []float32) {
	for i, x := range u {
		a[i], d[i] = geluBoth(x)
	}
}

// mulRows multiplies g by d element by element, in place.
func mulRows(g, d []float32) {
	for i, v := range d {
		g[i] *= v
	}
}

// sum64 adds src into the float64 accumulator dst.
func sum64(dst []float64, src []float32) {
	for i, v := range src {
		dst[i] += float64(v)
	}
}

// to32 rounds a float64 gradient to float32.
func to32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}
