package gpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// tbBatch is a padded batch in row-major float32, as AnchorTBLoss takes it.
type tbBatch struct {
	B, Tmax             int
	flows, deltaL, mask []float32 // [B*Tmax]
	terminal            []float32 // [B]
	lengths             []int
}

// newTBBatch lays out trajectories (flows[b] and deltaL[b] of length T_b, terminal[b]) into a
// [B, Tmax] batch; padded positions are filled with pad (garbage the loss must ignore).
func newTBBatch(Tmax int, flows, deltaL [][]float64, terminal []float64, pad func() float32) *tbBatch {
	B := len(flows)
	tb := &tbBatch{B: B, Tmax: Tmax, flows: make([]float32, B*Tmax), deltaL: make([]float32, B*Tmax),
		mask: make([]float32, B*Tmax), terminal: make([]float32, B), lengths: make([]int, B)}
	for b := range B {
		T := len(flows[b])
		tb.lengths[b] = T
		tb.terminal[b] = float32(terminal[b])
		for t := range Tmax {
			i := b*Tmax + t
			if t < T {
				tb.flows[i], tb.deltaL[i], tb.mask[i] = float32(flows[b][t]), float32(deltaL[b][t]), 1
			} else {
				tb.flows[i], tb.deltaL[i] = pad(), pad()
			}
		}
	}
	return tb
}

func (tb *tbBatch) args() []any {
	return []any{
		tensors.FromFlatDataAndDimensions(tb.flows, tb.B, tb.Tmax),
		tensors.FromFlatDataAndDimensions(tb.deltaL, tb.B, tb.Tmax),
		tensors.FromFlatDataAndDimensions(tb.terminal, tb.B),
		tensors.FromFlatDataAndDimensions(tb.mask, tb.B, tb.Tmax),
	}
}

// traj returns trajectory b's values in float64, read back from the float32 batch, so that
// the plain-Go references see exactly the numbers the graph sees.
func (tb *tbBatch) traj(b int) (v, dl []float64) {
	T := tb.lengths[b]
	v = make([]float64, T+1)
	dl = make([]float64, T)
	for t := range T {
		v[t], dl[t] = float64(tb.flows[b*tb.Tmax+t]), float64(tb.deltaL[b*tb.Tmax+t])
	}
	v[T] = float64(tb.terminal[b])
	return v, dl
}

// allPairsLoss is the definition: (1/K_T) Σ_{i<j} (v_i + Σ_{t=i}^{j-1} Δℓ_t − v_j)².
func allPairsLoss(v, dl []float64) float64 {
	T := len(dl)
	sum := 0.0
	for i := 0; i < T; i++ {
		for j := i + 1; j <= T; j++ {
			d := v[i] - v[j]
			for t := i; t < j; t++ {
				d += dl[t]
			}
			sum += d * d
		}
	}
	return sum / float64(T*(T+1)/2)
}

// coefficients is Prop. A.14: (2/K_T)·(G_T e)_t with (G_T)_{rs} = (min(r,s)+1)(T − max(r,s)).
func coefficients(v, dl []float64) []float64 {
	T := len(dl)
	e := make([]float64, T)
	for t := range T {
		e[t] = v[t] + dl[t] - v[t+1]
	}
	K := float64(T*(T+1)) / 2
	out := make([]float64, T)
	for r := range T {
		for s := range T {
			out[r] += float64((min(r, s)+1)*(T-max(r, s))) * e[s]
		}
		out[r] *= 2 / K
	}
	return out
}

// tbLossExec returns a function evaluating (perTraj, mean) for a batch.
func tbLossExec(t *testing.T, be compute.Backend) func(tb *tbBatch) ([]float32, float32) {
	t.Helper()
	exec, err := graph.NewExec(be, func(f, d, term, m *graph.Node) (*graph.Node, *graph.Node) {
		return AnchorTBLoss(f, d, term, m)
	})
	if err != nil {
		t.Fatal(err)
	}
	return func(tb *tbBatch) ([]float32, float32) {
		t.Helper()
		out, err := exec.Call(tb.args()...)
		if err != nil {
			t.Fatal(err)
		}
		return tensors.MustCopyFlatData[float32](out[0]), tensors.ToScalar[float32](out[1])
	}
}

// tbGradExec returns a function evaluating perTraj and d(Σ_b L_b)/d deltaL, d(Σ_b L_b)/d flows.
// The losses of different rows are independent, so the gradient of the sum is per-row ∂L_b/∂·.
func tbGradExec(t *testing.T, be compute.Backend) func(tb *tbBatch) (per, gDelta, gFlows []float32) {
	t.Helper()
	exec, err := graph.NewExec(be, func(f, d, term, m *graph.Node) []*graph.Node {
		per, _ := AnchorTBLoss(f, d, term, m)
		gr := graph.Gradient(graph.ReduceAllSum(per), d, f)
		return []*graph.Node{per, gr[0], gr[1]}
	})
	if err != nil {
		t.Fatal(err)
	}
	return func(tb *tbBatch) ([]float32, []float32, []float32) {
		t.Helper()
		out, err := exec.Call(tb.args()...)
		if err != nil {
			t.Fatal(err)
		}
		return tensors.MustCopyFlatData[float32](out[0]), tensors.MustCopyFlatData[float32](out[1]),
			tensors.MustCopyFlatData[float32](out[2])
	}
}

// randomTrajs draws B trajectories with lengths in 1..Tmax (both ends always present).
func randomTrajs(rng *rand.Rand, B, Tmax int) (flows, deltaL [][]float64, terminal []float64) {
	for b := range B {
		T := 1 + rng.IntN(Tmax)
		switch b {
		case 0:
			T = 1
		case 1:
			T = Tmax
		}
		f, d := make([]float64, T), make([]float64, T)
		for t := range T {
			f[t] = rng.NormFloat64()
			d[t] = 0.5 * rng.NormFloat64()
		}
		flows, deltaL = append(flows, f), append(deltaL, d)
		terminal = append(terminal, 2*rng.Float64())
	}
	return flows, deltaL, terminal
}

func closeTo(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

func TestAnchorTBMatchesAllPairs(t *testing.T) {
	run := tbLossExec(t, testBackend(t))
	const B, Tmax = 9, 64
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 17))
		flows, deltaL, terminal := randomTrajs(rng, B, Tmax)
		tb := newTBBatch(Tmax, flows, deltaL, terminal, func() float32 { return float32(50 * rng.NormFloat64()) })
		per, mean := run(tb)
		wantMean := 0.0
		for b := range B {
			want := allPairsLoss(tb.traj(b))
			wantMean += want / B
			if !closeTo(float64(per[b]), want, 1e-5) {
				t.Errorf("seed %d row %d (T=%d): loss %.8g, all-pairs %.8g", seed, b, tb.lengths[b], per[b], want)
			}
		}
		if !closeTo(float64(mean), wantMean, 1e-5) {
			t.Errorf("seed %d: mean %.8g, want %.8g", seed, mean, wantMean)
		}
	}
}

func TestAnchorTBSingleDecision(t *testing.T) {
	run := tbLossExec(t, testBackend(t))
	// T = 1: K_1 = 1 and the only span is (0,1), so the loss is e_0² = (v_0 + Δℓ_0 − v_1)².
	tb := newTBBatch(3, [][]float64{{0.9}, {-0.3}}, [][]float64{{0.25}, {1.5}}, []float64{0.4, 2},
		func() float32 { return 7 })
	per, mean := run(tb)
	want := []float64{math.Pow(0.9+0.25-0.4, 2), math.Pow(-0.3+1.5-2, 2)}
	for b := range want {
		if !closeTo(float64(per[b]), want[b], 1e-6) {
			t.Errorf("row %d: loss %.8g, want e_0² = %.8g", b, per[b], want[b])
		}
	}
	if !closeTo(float64(mean), (want[0]+want[1])/2, 1e-6) {
		t.Errorf("mean %.8g, want %.8g", mean, (want[0]+want[1])/2)
	}
}

// TestAnchorTBWorkedExample is the reference's example: Δℓ = [0.2, −0.1], flows [0.4, 0.7],
// r = 0 so F_2 = log R_β(0) = 0. Span residuals: δ_{0:1} = 0.4+0.2−0.7 = −0.1,
// δ_{1:2} = 0.7−0.1−0 = 0.6, δ_{0:2} = 0.4+0.2−0.1−0 = 0.5; Σδ² = 0.62, K_2 = 3.
func TestAnchorTBWorkedExample(t *testing.T) {
	v, dl := []float64{0.4, 0.7, 0}, []float64{0.2, -0.1}
	spans := map[[2]int]float64{{0, 1}: -0.1, {1, 2}: 0.6, {0, 2}: 0.5}
	for ij, want := range spans {
		d := v[ij[0]] - v[ij[1]]
		for k := ij[0]; k < ij[1]; k++ {
			d += dl[k]
		}
		if math.Abs(d-want) > 1e-12 {
			t.Errorf("δ_{%d:%d} = %g, want %g", ij[0], ij[1], d, want)
		}
	}
	if got := allPairsLoss(v, dl); math.Abs(got-0.62/3) > 1e-12 {
		t.Errorf("all-pairs loss %g, want 0.62/3", got)
	}
	// In the graph, alone and padded next to a longer trajectory.
	run := tbLossExec(t, testBackend(t))
	tb := newTBBatch(4, [][]float64{{0.4, 0.7}, {0.1, 0.2, 0.3, 0.4}}, [][]float64{{0.2, -0.1}, {0, 0, 0, 0}},
		[]float64{0, 1}, func() float32 { return -3 })
	per, _ := run(tb)
	if !closeTo(float64(per[0]), 0.62/3, 1e-6) {
		t.Errorf("graph loss %.8g, want 0.62/3 = %.8g", per[0], 0.62/3)
	}
}

func TestAnchorTBGradientMatchesCoefficients(t *testing.T) {
	run := tbGradExec(t, testBackend(t))
	const B, Tmax = 8, 6
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		flows, deltaL, terminal := randomTrajs(rng, B, Tmax)
		tb := newTBBatch(Tmax, flows, deltaL, terminal, func() float32 { return float32(10 * rng.NormFloat64()) })
		per, gDelta, gFlows := run(tb)
		for b := range B {
			v, dl := tb.traj(b)
			if !closeTo(float64(per[b]), allPairsLoss(v, dl), 1e-5) {
				t.Errorf("seed %d row %d: loss %.8g, want %.8g", seed, b, per[b], allPairsLoss(v, dl))
			}
			coef := coefficients(v, dl)
			for tt := range Tmax {
				got := float64(gDelta[b*Tmax+tt])
				if tt >= tb.lengths[b] {
					if got != 0 || gFlows[b*Tmax+tt] != 0 {
						t.Errorf("seed %d row %d padded t=%d: ∂L/∂Δℓ = %g, ∂L/∂F = %g, want 0", seed, b, tt, got, gFlows[b*Tmax+tt])
					}
					continue
				}
				if !closeTo(got, coef[tt], 1e-4) {
					t.Errorf("seed %d row %d (T=%d) t=%d: ∂L/∂Δℓ = %.7g, (2/K)(G e)_t = %.7g", seed, b, tb.lengths[b], tt, got, coef[tt])
				}
			}
		}
	}
}

func TestAnchorTBZeroIffTelescoping(t *testing.T) {
	run := tbLossExec(t, testBackend(t))
	rng := rand.New(rand.NewPCG(5, 5))
	const Tmax = 6
	// Telescoping flows: v_{t+1} = v_t + Δℓ_t and F_T = v_T, so every e_t = 0 (dyadic values, exact in float32).
	var flows, deltaL [][]float64
	var terminal []float64
	for T := 1; T <= Tmax; T++ {
		v := float64(rng.IntN(16)) / 8
		f, d := make([]float64, T), make([]float64, T)
		for t := range T {
			f[t], d[t] = v, float64(rng.IntN(17)-8)/16
			v += d[t]
		}
		flows, deltaL, terminal = append(flows, f), append(deltaL, d), append(terminal, v)
	}
	tb := newTBBatch(Tmax, flows, deltaL, terminal, func() float32 { return 1 })
	per, mean := run(tb)
	for b := range per {
		if math.Abs(float64(per[b])) > 1e-10 {
			t.Errorf("telescoping row T=%d: loss %g, want 0", tb.lengths[b], per[b])
		}
	}
	if math.Abs(float64(mean)) > 1e-10 {
		t.Errorf("telescoping batch mean %g, want 0", mean)
	}
	// Any single nonzero residual gives a positive loss, at least Σe²/K_T (Prop. A.13).
	for b := range flows {
		T := len(flows[b])
		tt := rng.IntN(T)
		flows[b][tt] += 0.25
		per, _ := run(newTBBatch(Tmax, flows, deltaL, terminal, func() float32 { return 1 }))
		sumE2 := 0.25 * 0.25
		if tt > 0 {
			sumE2 *= 2 // v_t enters e_{t−1} and e_t
		}
		if lower := sumE2 / float64(T*(T+1)/2); float64(per[b]) < lower*(1-1e-5) {
			t.Errorf("perturbed row T=%d at t=%d: loss %g, want ≥ %g > 0", T, tt, per[b], lower)
		}
		flows[b][tt] -= 0.25
	}
	// Remark A.5 (local coverage): T = 2, e = (c, −c) balances the full trajectory yet costs 2c²/3.
	// With v = (0, 0, 0) and Δℓ = (c, −c), e = (c, −c).
	c := 0.5
	per, _ = run(newTBBatch(Tmax, [][]float64{{0, 0}}, [][]float64{{c, -c}}, []float64{0}, func() float32 { return 0 }))
	if !closeTo(float64(per[0]), 2*c*c/3, 1e-6) {
		t.Errorf("e = (c, −c): loss %g, want 2c²/3 = %g", per[0], 2*c*c/3)
	}
}

// TestAnchorTBFirstDecisionTarget checks the closed form of the first decision's coefficient
// (METHOD.md §4.1, "What a decision's log-ratio converges to"): with F_T = log R_β,
//
//	Γ_0 = (4/(T+1))·(Δℓ_0 − Δℓ*_0),   Δℓ*_0 = mean_{j=1..T}(F_j − Σ_{1≤t<j} Δℓ_t) − F_0,
//
// so the first decision's log-ratio is pulled toward the mean of the flows after it, the
// terminal one weighing 1/T: flows that understate how much a state matters shrink θ's tilt.
func TestAnchorTBFirstDecisionTarget(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for T := 1; T <= 12; T++ {
		for range 20 {
			flows, deltaL := make([]float64, T), make([]float64, T)
			for i := range T {
				flows[i], deltaL[i] = rng.NormFloat64(), rng.NormFloat64()
			}
			terminal := 2 * rng.Float64()
			target, between := 0.0, 0.0
			for j := 1; j <= T; j++ {
				f := terminal
				if j < T {
					f = flows[j]
				}
				target += f - between
				if j < T {
					between += deltaL[j]
				}
			}
			target = target/float64(T) - flows[0]
			_, dDelta, _ := AnchorTB(flows, deltaL, terminal)
			if want := 4 / float64(T+1) * (deltaL[0] - target); !closeTo(dDelta[0], want, 1e-12) {
				t.Fatalf("T=%d: Γ_0 = %.15g, want 4/(T+1)·(Δℓ_0 − Δℓ*_0) = %.15g", T, dDelta[0], want)
			}
			deltaL[0] = target
			if _, dDelta, _ := AnchorTB(flows, deltaL, terminal); math.Abs(dDelta[0]) > 1e-12 {
				t.Fatalf("T=%d: Γ_0 = %g at Δℓ_0 = Δℓ*_0, want 0", T, dDelta[0])
			}
		}
	}
}

func TestAnchorTBShiftInvariance(t *testing.T) {
	run := tbLossExec(t, testBackend(t))
	rng := rand.New(rand.NewPCG(11, 3))
	const B, Tmax = 6, 5
	flows, deltaL, terminal := randomTrajs(rng, B, Tmax)
	per0, _ := run(newTBBatch(Tmax, flows, deltaL, terminal, func() float32 { return 0 }))
	for _, shift := range []float64{3.7, -2.25} {
		sf := make([][]float64, B)
		st := make([]float64, B)
		for b := range B {
			sf[b] = make([]float64, len(flows[b]))
			for i, f := range flows[b] {
				sf[b][i] = f + shift
			}
			st[b] = terminal[b] + shift
		}
		per, _ := run(newTBBatch(Tmax, sf, deltaL, st, func() float32 { return 0 }))
		for b := range B {
			if !closeTo(float64(per[b]), float64(per0[b]), 1e-5) {
				t.Errorf("shift %g row %d: loss %.8g, unshifted %.8g", shift, b, per[b], per0[b])
			}
		}
	}
	// Shifting the terminal alone is not a symmetry: the loss must move.
	st := append([]float64(nil), terminal...)
	st[1] += 1
	per, _ := run(newTBBatch(Tmax, flows, deltaL, st, func() float32 { return 0 }))
	if closeTo(float64(per[1]), float64(per0[1]), 1e-3) {
		t.Errorf("shifting only the terminal left the loss at %g", per[1])
	}
}

func TestAnchorTBPaddingInvariance(t *testing.T) {
	be := testBackend(t)
	run := tbLossExec(t, be)
	f, d, term := []float64{0.3, -1.2, 0.8}, []float64{0.1, -0.4, 0.7}, 1.3
	alone, _ := run(newTBBatch(3, [][]float64{f}, [][]float64{d}, []float64{term}, func() float32 { return 0 }))
	rng := rand.New(rand.NewPCG(2, 2))
	lf, ld, lt := randomTrajs(rng, 4, 9)
	for pos := range 3 {
		flows := append(append(append([][]float64{}, lf[:pos]...), f), lf[pos:]...)
		deltaL := append(append(append([][]float64{}, ld[:pos]...), d), ld[pos:]...)
		terminal := append(append(append([]float64{}, lt[:pos]...), term), lt[pos:]...)
		in, _ := run(newTBBatch(9, flows, deltaL, terminal, func() float32 { return float32(rng.NormFloat64() * 100) }))
		if !closeTo(float64(in[pos]), float64(alone[0]), 1e-6) {
			t.Errorf("at row %d of a Tmax=9 batch: loss %.8g, alone %.8g", pos, in[pos], alone[0])
		}
	}
	if want := allPairsLoss(append(append([]float64{}, f...), term), d); !closeTo(float64(alone[0]), want, 1e-5) {
		t.Errorf("alone: loss %.8g, all-pairs %.8g", alone[0], want)
	}
}

// Non-finite padding must not leak into the loss or its gradients, and an all-padding row
// (T_b = 0) gives 0 and is left out of the mean.
func TestAnchorTBPaddingValuesAndEmptyRows(t *testing.T) {
	be := testBackend(t)
	rng := rand.New(rand.NewPCG(8, 1))
	flows, deltaL, terminal := randomTrajs(rng, 4, 5)
	flows = append(flows, []float64{})
	deltaL = append(deltaL, []float64{})
	terminal = append(terminal, 0)
	vals := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	i := 0
	tb := newTBBatch(5, flows, deltaL, terminal, func() float32 { i++; return vals[i%3] })
	clean := newTBBatch(5, flows, deltaL, terminal, func() float32 { return 0 })
	per, mean := tbLossExec(t, be)(tb)
	perClean, _ := tbLossExec(t, be)(clean)
	want := 0.0
	for b := range 4 {
		want += allPairsLoss(tb.traj(b)) / 4
		if per[b] != perClean[b] {
			t.Errorf("row %d: loss %g with non-finite padding, %g with zeros", b, per[b], perClean[b])
		}
	}
	if per[4] != 0 {
		t.Errorf("empty row: loss %g, want 0", per[4])
	}
	if !closeTo(float64(mean), want, 1e-5) {
		t.Errorf("mean %g, want %g (mean over the 4 non-empty rows)", mean, want)
	}
	_, gd, gf := tbGradExec(t, be)(tb)
	for k := range gd {
		if math.IsNaN(float64(gd[k])) || math.IsInf(float64(gd[k]), 0) || math.IsNaN(float64(gf[k])) || math.IsInf(float64(gf[k]), 0) {
			t.Fatalf("non-finite gradient at %d: ∂/∂Δℓ = %g, ∂/∂F = %g", k, gd[k], gf[k])
		}
	}
}

// TestAnchorTBGoMatchesDefinitions: the O(T) float64 form used by the update equals the all-pairs
// definition and Prop. A.14's coefficients (2/K_T)(G_T e)_t for every T from 1 to 64, and its
// ∂L/∂F_t equals finite differences of the all-pairs loss.
func TestAnchorTBGoMatchesDefinitions(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for T := 1; T <= 64; T++ {
		v, dl := make([]float64, T+1), make([]float64, T)
		for i := range v {
			v[i] = 2 * rng.NormFloat64()
		}
		for i := range dl {
			dl[i] = rng.NormFloat64()
		}
		loss, dDelta, dFlows := AnchorTB(v[:T], dl, v[T])
		if want := allPairsLoss(v, dl); !closeTo(loss, want, 1e-12) {
			t.Fatalf("T=%d: loss %.15g, all-pairs %.15g", T, loss, want)
		}
		for i, want := range coefficients(v, dl) {
			if !closeTo(dDelta[i], want, 1e-11) {
				t.Fatalf("T=%d t=%d: Γ %.15g, (2/K_T)(G_T e)_t %.15g", T, i, dDelta[i], want)
			}
		}
		for _, i := range []int{0, T / 2, T - 1} {
			const h = 1e-6
			v[i] += h
			up := allPairsLoss(v, dl)
			v[i] -= 2 * h
			down := allPairsLoss(v, dl)
			v[i] += h
			if fd := (up - down) / (2 * h); !closeTo(dFlows[i], fd, 1e-6) {
				t.Fatalf("T=%d: ∂L/∂F_%d = %.10g, finite difference %.10g", T, i, dFlows[i], fd)
			}
		}
	}
	// Remark A.5 (local coverage): T = 2, e = (c, −c) has a zero full-trajectory residual and
	// L = 2c²/3.
	const c = 0.7
	v, dl := []float64{0, 0, 0}, []float64{c, -c}
	if loss, _, _ := AnchorTB(v[:2], dl, v[2]); math.Abs(loss-2*c*c/3) > 1e-15 {
		t.Fatalf("Remark A.5: loss %v, want 2c²/3 = %v", loss, 2*c*c/3)
	}
}

// TestAnchorTBGoMatchesGraph: the float64 form and the padded graph agree on every row.
func TestAnchorTBGoMatchesGraph(t *testing.T) {
	run := tbGradExec(t, testBackend(t))
	const B, Tmax = 12, 40
	rng := rand.New(rand.NewPCG(8, 9))
	flows, deltaL, terminal := randomTrajs(rng, B, Tmax)
	tb := newTBBatch(Tmax, flows, deltaL, terminal, func() float32 { return float32(rng.NormFloat64()) })
	per, gDelta, gFlows := run(tb)
	for b := range B {
		v, dl := tb.traj(b)
		T := len(dl)
		loss, dd, df := AnchorTB(v[:T], dl, v[T])
		if !closeTo(float64(per[b]), loss, 1e-5) {
			t.Fatalf("row %d: graph %v, Go %v", b, per[b], loss)
		}
		for i := range T {
			if !closeTo(float64(gDelta[b*Tmax+i]), dd[i], 1e-4) || !closeTo(float64(gFlows[b*Tmax+i]), df[i], 1e-4) {
				t.Fatalf("row %d t=%d: graph (%v, %v), Go (%v, %v)", b, i, gDelta[b*Tmax+i], gFlows[b*Tmax+i], dd[i], df[i])
			}
		}
	}
}
