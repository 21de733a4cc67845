package gpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/policy"
)

// TestNativeGELU checks the tabulated GELU and GELU′ against float64 erf and exp on a fine grid
// over the table and past its ends, and that NaN stays NaN.
func TestNativeGELU(t *testing.T) {
	var worstY, worstD float64
	for i := -1_100_000; i <= 1_100_000; i++ {
		x := float32(float64(i) * 1e-5)
		xd := float64(x)
		cdf := 0.5 * math.Erfc(-xd/math.Sqrt2)
		y, d := geluBoth(x)
		worstY = math.Max(worstY, math.Abs(float64(y)-xd*cdf)/math.Max(1, math.Abs(xd)))
		worstD = math.Max(worstD, math.Abs(float64(d)-(cdf+xd*math.Exp(-xd*xd/2)/math.Sqrt(2*math.Pi))))
		if g := gelu32(x); g != y {
			t.Fatalf("gelu32(%v) = %v, geluBoth %v", x, g, y)
		}
	}
	// float32 rounds Φ near 1 to within 6e-8 already; the graph's (erf + 1)·½ does no better.
	if worstY > 2e-7 || worstD > 2e-7 {
		t.Fatalf("GELU off by %.3g (relative to max(1, |x|)), GELU′ by %.3g", worstY, worstD)
	}
	if y, d := geluBoth(float32(math.NaN())); !math.IsNaN(float64(y)) || d != 0 {
		t.Fatalf("GELU(NaN) = %v, %v", y, d)
	}
}

// TestNativeGradientMatchesGraph compares the CPU kernels of the policy gradient with the graph
// on the default network over two groups of decisions (nativeGroup), with single-action
// decisions and many passes of the action layer (nativeActionRows) in each.
// nativeAndGraphs are two engines on simplego, one with the CPU kernels and one with the graphs,
// and a learner of the default configuration.
func nativeAndGraphs(t *testing.T) (native, graphs *Engine, l *Learner) {
	t.Helper()
	native, graphs = testEngine(t), testEngine(t)
	graphs.native = false
	def, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	return native, graphs, NewLearner(OptionsFromConfig(def, policy.StateWidth(6)), nil)
}

func TestNativeGradientMatchesGraph(t *testing.T) {
	native, graphs, l := nativeAndGraphs(t)
	perturb(l, 4)
	rows := randomRows(l.Policy.(*PolicyNet), nativeGroup+37, 24, 5)
	r := rand.New(rand.NewPCG(7, 8))
	tr := Trajectory{Task: "t"}
	refs := make([]StateRef, len(rows))
	cTheta, cResid := make([]float32, len(rows)), make([]float32, len(rows))
	for i, row := range rows {
		tr.Steps = append(tr.Steps, Step{Row: row, Chosen: r.IntN(row.Legal())})
		refs[i] = StateRef{0, i}
		cTheta[i], cResid[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	trajs := []Trajectory{tr}
	resIn, err := l.residualInputs(native, rows, refs, trajs)
	if err != nil {
		t.Fatal(err)
	}
	wantRes, err := l.residualInputs(graphs, rows, refs, trajs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range resIn {
		for j, v := range resIn[i] {
			if math.Abs(float64(v-wantRes[i][j])) > 1e-5 {
				t.Fatalf("h_ρ of row %d [%d]: %v, graph %v", i, j, v, wantRes[i][j])
			}
		}
	}
	got, gotLogp, err := l.policyGradient(native, rows, refs, trajs, resIn, cTheta, cResid)
	if err != nil {
		t.Fatal(err)
	}
	want, wantLogp, err := l.policyGradient(graphs, rows, refs, trajs, resIn, cTheta, cResid)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		scale := 0.0
		for _, v := range w {
			scale = math.Max(scale, math.Abs(float64(v)))
		}
		for j, v := range w {
			if math.Abs(float64(got[i][j]-v)) > 1e-5*scale {
				t.Fatalf("%s[%d]: %v, graph %v (block max %v)", l.PolicyGroup.Params[i].Name, j, got[i][j], v, scale)
			}
		}
	}
	for i, w := range wantLogp {
		if math.Abs(gotLogp[i]-w) > 1e-5 || (rows[i].Legal() == 1 && gotLogp[i] != 0) {
			t.Fatalf("log π of row %d (%d legal): %v, graph %v", i, rows[i].Legal(), gotLogp[i], w)
		}
	}
}

// TestNativeUpdateIndependentOfCores: the update's parameters are bit-identical on one core and
// on several (the kernels split the batch into fixed groups and add their partials in order).
func TestNativeUpdateIndependentOfCores(t *testing.T) {
	e := testEngine(t)
	def, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	o := OptionsFromConfig(def, policy.StateWidth(6))
	o.ValueFitSteps = 3
	l := NewLearner(o, nil)
	in := benchUpdateInput(t, e, l, 40, 30, 8)
	if rows, _, _ := flatten(in); len(rows) <= max(nativeGroup, nativeHeadRows) {
		t.Fatalf("test setup: %d decisions fill one group", len(rows))
	}
	var params [][]*Param
	for _, procs := range []int{1, 3} {
		old := runtime.GOMAXPROCS(procs)
		m := NewLearner(o, nil)
		_, err := m.Update(e, in)
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatal(err)
		}
		params = append(params, m.Params())
	}
	for i, p := range params[0] {
		if !slices.Equal(p.Value, params[1][i].Value) {
			t.Fatalf("%s differs between 1 and 3 cores", p.Name)
		}
	}
}

// TestNativeScoreMatchesGraph: the CPU kernels score decisions as the graph does, within
// 1e-5·(1 + |value|) in log-probability (θ and ρ) and in h_ρ — float32 rounding in another
// order — with exactly 0 for a single legal action; and after the
// adapter changes in place, the next call scores with the new adapter (the merge is redone).
func TestNativeScoreMatchesGraph(t *testing.T) {
	native, graphs, l := nativeAndGraphs(t)
	rows := randomRows(l.Policy.(*PolicyNet), nativeGroup+37, 24, 5)
	for round := range 2 {
		perturb(l, uint64(4+round)) // the second round changes the adapter in place
		got, err := l.Policy.Score(native, rows)
		if err != nil {
			t.Fatal(err)
		}
		want, err := l.Policy.Score(graphs, rows)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rows {
			for _, c := range []struct {
				what      string
				got, want []float32
			}{{"log π_θ", got.Theta[i], want.Theta[i]}, {"log π_ρ", got.Rho[i], want.Rho[i]}, {"h_ρ", got.H[i], want.H[i]}} {
				if len(c.got) != len(c.want) {
					t.Fatalf("round %d row %d %s: %d values, graph %d", round, i, c.what, len(c.got), len(c.want))
				}
				for j, v := range c.want {
					if math.Abs(float64(c.got[j]-v)) > 1e-5*(1+math.Abs(float64(v))) {
						t.Fatalf("round %d row %d %s[%d]: %v, graph %v", round, i, c.what, j, c.got[j], v)
					}
				}
			}
			if r.Legal() == 1 && (got.Theta[i][0] != 0 || got.Rho[i][0] != 0) {
				t.Fatalf("row %d has one legal action but log π %v, %v", i, got.Theta[i][0], got.Rho[i][0])
			}
		}
	}
}

// TestNativeScoreIndependentOfBatchAndCores: a row's scores are bit-identical whatever batch it
// is scored in (alone, reversed, among others) and on one core or several — what lets rescore
// reproduce the rollout's behaviour log-probabilities exactly.
func TestNativeScoreIndependentOfBatchAndCores(t *testing.T) {
	e := testEngine(t)
	def, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	l := NewLearner(OptionsFromConfig(def, policy.StateWidth(6)), nil)
	perturb(l, 9)
	rows := randomRows(l.Policy.(*PolicyNet), 2*nativeGroup+11, 30, 3)
	whole, err := l.Policy.Score(e, rows)
	if err != nil {
		t.Fatal(err)
	}
	same := func(what string, i int, s *Scores, k int) {
		if !slices.Equal(s.Theta[k], whole.Theta[i]) || !slices.Equal(s.Rho[k], whole.Rho[i]) || !slices.Equal(s.H[k], whole.H[i]) {
			t.Fatalf("row %d scored %s differs from the whole batch's", i, what)
		}
	}
	reversed := slices.Clone(rows)
	slices.Reverse(reversed)
	old := runtime.GOMAXPROCS(1)
	rev, err := l.Policy.Score(e, reversed)
	runtime.GOMAXPROCS(old)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		same("reversed on one core", i, rev, len(rows)-1-i)
	}
	for _, i := range []int{0, nativeGroup - 1, nativeGroup, len(rows) - 1} {
		alone, err := l.Policy.Score(e, rows[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		same("alone", i, alone, 0)
	}
}
