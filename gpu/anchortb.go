package gpu

import (
	"fmt"

	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
)

// The anchored subtrajectory-balance loss of the paper (Eq. subtb) for one trajectory of T ≥ 1
// decisions with flows v_0..v_{T−1}, terminal value v_T = log R_β(r) and log-ratios Δℓ_t:
//
//	L = (1/K_T) Σ_{0≤i<j≤T} (v_i + Σ_{t=i}^{j−1} Δℓ_t − v_j)²,   K_T = T(T+1)/2.
//
// With e_t = v_t + Δℓ_t − v_{t+1} and h_j = Σ_{t<j} e_t, every span residual is h_j − h_i
// (Lemma A.12) and K_T·L = (T+1)·Σ_j h_j² − (Σ_j h_j)² (Prop. A.14), so L = (2/T)·Σ_{j=0}^{T} (h_j − h̄)².
// Telescoping gives h_j = v_0 + a_j with a_j = P_j − v_j and P_j = Σ_{t<j} Δℓ_t, and the
// constant v_0 drops out of the centred sum:
//
//	L = (2/T)·Σ_{j=0}^{T} (a_j − ā)²,   ∂L/∂v_t = −(4/T)(a_t − ā),   ∂L/∂Δℓ_t = (4/T)·Σ_{j>t} (a_j − ā),
//
// the last being the coefficient Γ_t = (2/K_T)(G_T e)_t of Prop. A.14. One prefix sum and one
// suffix sum: O(T). The centred form does not cancel catastrophically.

// AnchorTB evaluates the loss of one trajectory in float64 in O(T) and returns it with
// ∂L/∂Δℓ_t (the coefficients Γ_t) and ∂L/∂v_t for t < T. flows and deltaL have length T ≥ 1.
func AnchorTB(flows, deltaL []float64, terminal float64) (loss float64, dDelta, dFlows []float64) {
	T := len(deltaL)
	if T == 0 || len(flows) != T {
		panic(fmt.Sprintf("gpu.AnchorTB: %d flows and %d log-ratios", len(flows), T))
	}
	a := make([]float64, T+1)
	p := 0.0
	for t := range T {
		a[t] = p - flows[t]
		p += deltaL[t]
	}
	a[T] = p - terminal
	mean := 0.0
	for _, x := range a {
		mean += x
	}
	mean /= float64(T + 1)
	for _, x := range a {
		loss += (x - mean) * (x - mean)
	}
	scale := 4 / float64(T)
	loss *= scale / 2
	dDelta, dFlows = make([]float64, T), make([]float64, T)
	suffix := 0.0
	for t := T - 1; t >= 0; t-- {
		suffix += a[t+1] - mean
		dDelta[t] = scale * suffix
		dFlows[t] = -scale * (a[t] - mean)
	}
	return loss, dDelta, dFlows
}

// AnchorTBLoss builds the same loss for a padded batch in graph g: per-trajectory losses [B] and
// their mean (scalar), differentiable with respect to every input.
//
// Inputs (all of one float dtype):
//   - flows [B, Tmax]: v_t = F_t for t < T_b (learned residual + measured part; whatever
//     stop-gradient the measured part needs is the caller's job);
//   - deltaL [B, Tmax]: Δℓ_t;
//   - terminal [B]: v_T = F_T = log R_β(r);
//   - mask [B, Tmax]: 1 for the real decisions t < T_b, 0 for padding. It must be a prefix mask:
//     T_b is taken as Σ_t mask[b,t] and positions t ≥ T_b are ignored whatever they hold
//     (padding values, even non-finite ones, never reach the loss or its gradient).
//
// A row with T_b = 0 is a padding row (bucketed batch sizes): its loss is 0 and it is left out
// of the mean, which is Σ_b L_b / #{b : T_b ≥ 1}.
//
// The prefix sum P is a Hillis–Steele scan (⌈log₂ Tmax⌉ shifted adds) whose gradient, the
// reverse scan of the adjoint, is supplied by hand: simplego has no gradient for the slices it
// needs, and its CumSum is a full-width window reduction, O(T²). So the graph is O(T log T).
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

	valid := graph.GreaterThan(mask, graph.ScalarZero(g, dt))
	lengths := graph.ReduceSum(graph.ConvertDType(valid, dt), 1) // T_b
	zeros := graph.ZerosLike(flows)
	f := graph.Where(valid, flows, zeros)
	dl := graph.Where(valid, deltaL, zeros)

	// a_t = P_t − F_t for t < T (P exclusive: inclusive scan minus the element), a_T = P_T − F_T.
	incl := prefixSum(dl)
	a := graph.Where(valid, graph.Sub(graph.Sub(incl, dl), f), zeros)
	aT := graph.Sub(graph.ReduceSum(dl, 1), terminal) // [B]
	count := graph.AddScalar(lengths, 1)
	abar := graph.Div(graph.Add(graph.ReduceSum(a, 1), aT), count)
	c := graph.Where(valid, graph.Sub(a, graph.BroadcastToDims(graph.Reshape(abar, B, 1), B, Tmax)), zeros)
	cT := graph.Sub(aT, abar)
	ss := graph.Add(graph.ReduceSum(graph.Square(c), 1), graph.Square(cT))
	perTraj = graph.Where(graph.GreaterThan(lengths, graph.ScalarZero(g, dt)),
		graph.Div(graph.MulScalar(ss, 2), graph.MaxScalar(lengths, 1)), graph.ZerosLike(lengths))

	rows := graph.ReduceAllSum(graph.ConvertDType(graph.GreaterThan(lengths, graph.ScalarZero(g, dt)), dt))
	mean = graph.Div(graph.ReduceAllSum(perTraj), graph.MaxScalar(rows, 1))
	return perTraj, mean
}

// prefixSum is the inclusive prefix sum along axis 1 of x [B, T], with the reverse prefix sum of
// the adjoint as its gradient (the custom-gradient pattern of MatMulCustomGrad).
func prefixSum(x *graph.Node) *graph.Node {
	var vy *graph.Node
	xi := graph.IdentityWithCustomGradient(x, func(_, _ *graph.Node) *graph.Node { return scan(vy, true) })
	y := graph.Add(scan(graph.StopGradient(x), false), graph.MulScalar(graph.ReduceAllSum(xi), 0))
	return graph.IdentityWithCustomGradient(y, func(_, v *graph.Node) *graph.Node {
		vy = v
		return v
	})
}

// scan is the Hillis–Steele inclusive scan along axis 1 of x [B, T]: forward sums Σ_{s≤t} x_s,
// reverse sums Σ_{s≥t} x_s, in ⌈log₂ T⌉ steps of adding x shifted by 1, 2, 4, … positions. Every
// step is under StopGradient: autodiff would otherwise still build the slices' adjoints (Pad,
// which simplego lacks) on the way to the stopped input; prefixSum supplies the gradient.
func scan(x *graph.Node, reverse bool) *graph.Node {
	B, T := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	for d := 1; d < T; d *= 2 {
		pad := graph.Zeros(x.Graph(), shapes.Make(x.DType(), B, d))
		var shifted *graph.Node
		if reverse {
			shifted = graph.Concatenate([]*graph.Node{graph.Slice(x, graph.AxisRange(), graph.AxisRange(d, T)), pad}, 1)
		} else {
			shifted = graph.Concatenate([]*graph.Node{pad, graph.Slice(x, graph.AxisRange(), graph.AxisRange(0, T-d))}, 1)
		}
		x = graph.StopGradient(graph.Add(x, shifted))
	}
	return x
}

func panicf(format string, args ...any) { panic(fmt.Errorf(format, args...)) }
