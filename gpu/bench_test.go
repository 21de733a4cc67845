package gpu

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/policy"
)

// benchUpdateInput is one step of B trajectories with T ≤ maxT decisions (uniform) and up to
// maxK legal actions per decision, scored by the learner itself.
func benchUpdateInput(b *testing.B, e *Engine, l *Learner, B, maxT, maxK int) UpdateInput {
	r := rand.New(rand.NewPCG(1, 2))
	in := UpdateInput{Step: 1}
	for range B {
		T := 1 + r.IntN(maxT)
		rows := randomRows(l.Policy, T, maxK, r.Uint64())
		sc, err := l.Policy.Score(e, rows)
		if err != nil {
			b.Fatal(err)
		}
		tr := Trajectory{Task: "t", Reward: float64(r.IntN(2)), Anchor: 1.2}
		for i, row := range rows {
			s := Step{Row: row, Chosen: r.IntN(row.Legal()), Correction: 0.1}
			for j := range s.Features {
				s.Features[j] = r.Float32()
			}
			s.LogpTheta = float64(sc.Theta[i][s.Chosen])
			s.DeltaL = s.LogpTheta - float64(sc.Rho[i][s.Chosen])
			tr.Steps = append(tr.Steps, s)
			if i%2 == 0 {
				x := ValueInput(s.Features, make([]float32, 6))
				in.ValueX, in.ValueY = append(in.ValueX, x), append(in.ValueY, float32(tr.Reward))
				in.OutcomeStates = append(in.OutcomeStates, StateRef{len(in.Trajectories), i})
			}
		}
		in.Trajectories = append(in.Trajectories, tr)
	}
	in.ReplayX, in.ReplayY = in.ValueX, in.ValueY
	return in
}

// BenchmarkUpdate is one AnchorTB update of the default network (hidden 128, d_h 64, rank 64)
// on 192 trajectories with T ≤ 64 and K ≤ 128, value fit (50 steps) included; it reports
// trajectories per second.
func BenchmarkUpdate(b *testing.B) {
	e := testEngine(b)
	def, err := config.Default()
	if err != nil {
		b.Fatal(err)
	}
	o := OptionsFromConfig(def, policy.StateWidth(6))
	l := NewLearner(o, nil)
	in := benchUpdateInput(b, e, l, 192, 64, 128)
	decisions := 0
	for _, tr := range in.Trajectories {
		decisions += len(tr.Steps)
	}
	b.ResetTimer()
	for range b.N {
		m := NewLearner(o, nil) // the same θ every time, so the scores stay valid
		if _, err := m.Update(e, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(192*b.N)/b.Elapsed().Seconds(), "episodes/s")
	b.ReportMetric(float64(decisions*b.N)/b.Elapsed().Seconds(), "decisions/s")
}

// naiveAnchorTBLoss is the definition evaluated over every pair (i, j) at once, O(T²) per
// trajectory: prefix sums P of Δℓ, then δ_{i:j} = F_i + P_j − P_i − F_j on a [T+1, T+1] grid,
// the upper triangle squared, summed and divided by K_T. v holds F_0..F_{T−1} and F_T.
func naiveAnchorTBLoss(v, dl *graph.Node) *graph.Node {
	g := v.Graph()
	B, T := dl.Shape().Dimensions[0], dl.Shape().Dimensions[1]
	// P_j = Σ_{t<j} Δℓ_t for j = 0..T: the inclusive scan behind a leading zero.
	P := graph.Concatenate([]*graph.Node{graph.Zeros(g, shapes.Make(dl.DType(), B, 1)), prefixSum(dl)}, 1)
	a := graph.Sub(v, P) // F_k − P_k
	col := graph.BroadcastToDims(graph.Reshape(a, B, T+1, 1), B, T+1, T+1)
	row := graph.BroadcastToDims(graph.Reshape(a, B, 1, T+1), B, T+1, T+1)
	d := graph.Sub(col, row) // δ_{i:j} = a_i − a_j
	upper := make([][]float64, T+1)
	for i := range upper {
		upper[i] = make([]float64, T+1)
		for j := i + 1; j <= T; j++ {
			upper[i][j] = 1
		}
	}
	u := graph.BroadcastToDims(graph.Reshape(graph.ConstAsDType(g, dl.DType(), upper), 1, T+1, T+1), B, T+1, T+1)
	s := graph.ReduceSum(graph.Mul(graph.Square(d), u), 1, 2)
	return graph.DivScalar(s, float64(T*(T+1)/2))
}

// BenchmarkAnchorTBLossT256 compares the O(T) loss (cumulative-sum identity, Prop. A.14) with the
// naive all-pairs O(T²) loss at T = 256, 64 trajectories, both with their gradient with respect
// to Δℓ and the flows, on the same engine; it reports the time ratio naive / O(T).
func BenchmarkAnchorTBLossT256(b *testing.B) {
	e := testEngine(b)
	const B, T = 64, 256
	r := rand.New(rand.NewPCG(3, 4))
	flows, dl, v := make([]float32, B*T), make([]float32, B*T), make([]float32, B*(T+1))
	term, mask := make([]float32, B), make([]float32, B*T)
	for i := range flows {
		flows[i], dl[i], mask[i] = float32(r.NormFloat64()), float32(r.NormFloat64()), 1
	}
	for b := range B {
		term[b] = 2
		copy(v[b*(T+1):], flows[b*T:(b+1)*T])
		v[b*(T+1)+T] = term[b]
	}
	var lossFast, lossNaive float32
	fast := func() time.Duration {
		start := time.Now()
		out, err := e.run("bench/anchortb", func(in []*graph.Node) []*graph.Node {
			_, mean := AnchorTBLoss(in[0], in[1], in[2], in[3])
			return append([]*graph.Node{mean}, graph.Gradient(mean, in[1], in[0])...)
		}, matrix(flows, B, T), matrix(dl, B, T), matrix(term, B), matrix(mask, B, T))
		if err != nil {
			b.Fatal(err)
		}
		lossFast = out[0][0]
		return time.Since(start)
	}
	naive := func() time.Duration {
		start := time.Now()
		out, err := e.run("bench/naive", func(in []*graph.Node) []*graph.Node {
			mean := graph.ReduceAllMean(naiveAnchorTBLoss(in[0], in[1]))
			return append([]*graph.Node{mean}, graph.Gradient(mean, in[1], in[0])...)
		}, matrix(v, B, T+1), matrix(dl, B, T))
		if err != nil {
			b.Fatal(err)
		}
		lossNaive = out[0][0]
		return time.Since(start)
	}
	fast() // compile both once, and check they compute the same loss
	naive()
	if math.Abs(float64(lossFast-lossNaive)) > 1e-3*math.Abs(float64(lossNaive)) {
		b.Fatalf("O(T) loss %v, naive %v", lossFast, lossNaive)
	}
	var tf, tn time.Duration
	b.ResetTimer()
	for range b.N {
		tf += fast()
		tn += naive()
	}
	b.ReportMetric(float64(tf.Microseconds())/float64(b.N), "µs/O(T)")
	b.ReportMetric(float64(tn.Microseconds())/float64(b.N), "µs/naive")
	b.ReportMetric(float64(tn)/float64(tf), "naive/O(T)")
}

// naivePairs is the all-pairs loss in O(T²) with prefix sums: the baseline of BenchmarkAnchorTBGoT256.
func naivePairs(v, dl []float64) float64 {
	T := len(dl)
	P := make([]float64, T+1)
	for t, x := range dl {
		P[t+1] = P[t] + x
	}
	s := 0.0
	for i := 0; i < T; i++ {
		for j := i + 1; j <= T; j++ {
			d := v[i] + P[j] - P[i] - v[j]
			s += d * d
		}
	}
	return s / float64(T*(T+1)/2)
}

// BenchmarkAnchorTBGoT256 compares the update's float64 O(T) loss and coefficients (AnchorTB)
// with the naive all-pairs O(T²) loss alone, at T = 256; it reports the time ratio.
func BenchmarkAnchorTBGoT256(b *testing.B) {
	const T = 256
	r := rand.New(rand.NewPCG(1, 1))
	v, dl := make([]float64, T+1), make([]float64, T)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	for i := range dl {
		dl[i] = r.NormFloat64()
	}
	if l, _, _ := AnchorTB(v[:T], dl, v[T]); math.Abs(l-naivePairs(v, dl)) > 1e-9*l {
		b.Fatalf("O(T) %v, naive %v", l, naivePairs(v, dl))
	}
	var tf, tn time.Duration
	sink := 0.0
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		for range 100 {
			l, _, _ := AnchorTB(v[:T], dl, v[T])
			sink += l
		}
		tf += time.Since(start)
		start = time.Now()
		for range 100 {
			sink += naivePairs(v, dl)
		}
		tn += time.Since(start)
	}
	b.ReportMetric(float64(tf.Nanoseconds())/float64(100*b.N), "ns/O(T)")
	b.ReportMetric(float64(tn.Nanoseconds())/float64(100*b.N), "ns/naive")
	b.ReportMetric(float64(tn)/float64(tf), "naive/O(T)")
	if sink == 0 {
		b.Fatal("no work")
	}
}
