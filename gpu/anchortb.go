package gpu

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// AnchorTBLoss builds the per-trajectory losses [B] and the batch mean (scalar) in graph g.
//
// It evaluates the anchored subtrajectory-balance loss of the paper (Eq. subtb)
//
//	L_b = (1/K_T) Σ_{0≤i<j≤T} (v_i + Σ_{t=i}^{j-1} Δℓ_t − v_j)²,   K_T = T(T+1)/2,
//
// for a padded batch of B trajectories with at most Tmax decisions, in O(T) per trajectory by
// the cumulative-sum identity (paper Prop. A.7): with e_t = v_t + Δℓ_t − v_{t+1}, h_0 = 0 and
// h_j = Σ_{t<j} e_t,
//
//	K_T·L_b = (T+1)·Σ_{j=0}^{T} h_j² − (Σ_j h_j)² = (T+1)·Σ_j (h_j − h̄)²,
//
// so L_b = (2/T)·Σ_{j=0}^{T} (h_j − h̄)². The centred form is used because it does not cancel
// catastrophically in float32.
//
// Inputs (all of the same float dtype):
//   - flows [B, Tmax]: v_t = F_t for t < T_b (learned residual + measured part; whatever
//     stop-gradient the measured part needs is the caller's job);
//   - deltaL [B, Tmax]: Δℓ_t = log π_θ(a_t|s_t) − log ρ(a_t|s_t);
//   - terminal [B]: v_T = F_T = log R_β(r) (the terminal override);
//   - mask [B, Tmax]: 1 for the real decisions t < T_b, 0 for padding. It must be a prefix
//     mask: T_b is taken as Σ_t mask[b,t] and positions t ≥ T_b are ignored whatever they hold
//     (padding values, even non-finite ones, never reach the loss or its gradient).
//
// A row with T_b = 0 is treated as a padding row (e.g. for bucketed batch sizes): its loss is 0
// and it is left out of the mean, which is Σ_b L_b / #{b : T_b ≥ 1} (the plain mean over b when
// every row holds a trajectory).
//
// Only elementwise ops, Where, reductions and broadcasts against fixed 0/1 matrices are used
// (no CumSum, Slice, Concatenate or DotGeneral), so reverse-mode autodiff works on simplego.
func AnchorTBLoss(flows, deltaL, terminal, mask *graph.Node) (perTraj, mean *graph.Node) {
	g := flows.Graph()
	dt := flows.DType()
	if flows.Rank() != 2 {
		panicf("AnchorTBLoss: flows must be [B, Tmax], got %s", flows.Shape())
	}
	B, Tmax := flows.Shape().Dimensions[0], flows.Shape().Dimensions[1]
	for _, n := range []*graph.Node{deltaL, mask} {
		if !n.Shape().Equal(flows.Shape()) {
			panicf("AnchorTBLoss: deltaL and mask must be %s like flows, got %s", flows.Shape(), n.Shape())
		}
	}
	if terminal.Rank() != 1 || terminal.Shape().Dimensions[0] != B || terminal.DType() != dt {
		panicf("AnchorTBLoss: terminal must be [%d] of %s, got %s", B, dt, terminal.Shape())
	}
	if mask.DType() != dt || deltaL.DType() != dt {
		panicf("AnchorTBLoss: all inputs must share dtype %s", dt)
	}

	// Lengths T_b and index grids (no gradient flows through these).
	maskPos := graph.ConvertDType(graph.GreaterThan(mask, graph.ScalarZero(g, dt)), dt)
	lengths := graph.ReduceSum(maskPos, 1) // [B]
	lenCol := graph.BroadcastToDims(graph.Reshape(lengths, B, 1), B, Tmax)
	tIdx := graph.BroadcastToDims(graph.Reshape(graph.Iota(g, shapes.Make(dt, Tmax), 0), 1, Tmax), B, Tmax)
	valid := graph.LessThan(tIdx, lenCol)                                          // t < T_b
	last := graph.ConvertDType(graph.Equal(tIdx, graph.AddScalar(lenCol, -1)), dt) // t == T_b − 1

	zeros := graph.ZerosLike(flows)
	f := graph.Where(valid, flows, zeros)
	dl := graph.Where(valid, deltaL, zeros)

	// v_{t+1}: the next flow for t < T_b − 1, the terminal value at t = T_b − 1.
	// fNext[b,t] = Σ_s f[b,s]·S[s,t] with S[s,t] = 1{s = t+1}.
	shift := make([][]float64, Tmax)
	for s := range shift {
		shift[s] = make([]float64, Tmax)
		if s >= 1 {
			shift[s][s-1] = 1
		}
	}
	fNext := rowTimesMatrix(f, graph.ConstAsDType(g, dt, shift)) // [B, Tmax]
	termCol := graph.BroadcastToDims(graph.Reshape(terminal, B, 1), B, Tmax)
	vNext := graph.Add(fNext, graph.Mul(termCol, last))
	e := graph.Where(valid, graph.Sub(graph.Add(f, dl), vNext), zeros) // [B, Tmax]

	// h_j = Σ_t e_t·1{t < j}, j = 0..Tmax, through a fixed lower-triangular 0/1 matrix [Tmax, Tmax+1].
	tri := make([][]float64, Tmax)
	for t := range tri {
		tri[t] = make([]float64, Tmax+1)
		for j := t + 1; j <= Tmax; j++ {
			tri[t][j] = 1
		}
	}
	h := rowTimesMatrix(e, graph.ConstAsDType(g, dt, tri)) // [B, Tmax+1]

	// Positions j ≤ T_b count; the loss is (2/T)·Σ_j (h_j − h̄)².
	jIdx := graph.BroadcastToDims(graph.Reshape(graph.Iota(g, shapes.Make(dt, Tmax+1), 0), 1, Tmax+1), B, Tmax+1)
	lenColH := graph.BroadcastToDims(graph.Reshape(lengths, B, 1), B, Tmax+1)
	hValid := graph.LessOrEqual(jIdx, lenColH)
	hZeros := graph.ZerosLike(h)
	hm := graph.Where(hValid, h, hZeros)
	hBar := graph.Div(graph.ReduceSum(hm, 1), graph.AddScalar(lengths, 1)) // [B]
	centred := graph.Where(hValid, graph.Sub(h, graph.BroadcastToDims(graph.Reshape(hBar, B, 1), B, Tmax+1)), hZeros)
	ss := graph.ReduceSum(graph.Square(centred), 1) // [B]
	perTraj = graph.Div(graph.MulScalar(ss, 2), graph.MaxScalar(lengths, 1))

	rows := graph.ReduceAllSum(graph.ConvertDType(graph.GreaterThan(lengths, graph.ScalarZero(g, dt)), dt))
	mean = graph.Div(graph.ReduceAllSum(perTraj), graph.MaxScalar(rows, 1))
	return perTraj, mean
}

// rowTimesMatrix returns x·M for x [B, n] and a constant M [n, m], as a broadcast product and a
// sum over n. It avoids DotGeneral, whose autodiff is slow on simplego; the [B, n, m]
// intermediate is small for the trajectory lengths used here.
func rowTimesMatrix(x, m *graph.Node) *graph.Node {
	B, n := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	cols := m.Shape().Dimensions[1]
	xb := graph.BroadcastToDims(graph.Reshape(x, B, n, 1), B, n, cols)
	mb := graph.BroadcastToDims(graph.Reshape(m, 1, n, cols), B, n, cols)
	return graph.ReduceSum(graph.Mul(xb, mb), 1)
}

func panicf(format string, args ...any) { panic(fmt.Errorf(format, args...)) }
