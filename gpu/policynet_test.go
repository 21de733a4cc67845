package gpu

import (
	"cmp"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/gomlx/gomlx/core/graph"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/policy"
)

// testEngine opens the simplego engine for a test and closes it after.
// testEngine opens simplego, or the backend EVOSTEER_TEST_BACKEND names (scripts/gpu-check.sh
// runs the benchmarks on xla:cuda this way).
func testEngine(t testing.TB) *Engine {
	t.Helper()
	e, err := OpenEngine(cmp.Or(os.Getenv("EVOSTEER_TEST_BACKEND"), "simplego"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// smallPolicyCfg is the gradient-check size: hidden 8, encoder 4, rank 2, K up to 20.
func smallPolicyCfg() config.Policy {
	return config.Policy{Hidden: 8, EncoderDim: 4, MaxLegalActions: 20, AdapterRank: 2, AdapterAlpha: 4}
}

// randomRows draws n decisions: legal counts 1..maxLegal (row 0 a singleton), descriptors in the
// encoding's ranges, priors in ±2.
func randomRows(p *PolicyNet, n, maxLegal int, seed uint64) []PolicyRow {
	r := rand.New(rand.NewPCG(seed, 7))
	rows := make([]PolicyRow, n)
	for i := range rows {
		legal := 1 + r.IntN(maxLegal)
		if i == 0 {
			legal = 1
		}
		s := make([]float32, p.StateWidth)
		for j := range s {
			s[j] = float32(r.Float64())
		}
		acts := make([]float32, legal*policy.ActionWidth)
		for j := range acts {
			acts[j] = float32(r.IntN(2)) * float32(r.Float64())
		}
		pr := make([]float32, legal)
		for j := range pr {
			pr[j] = float32(4*r.Float64() - 2)
		}
		rows[i] = PolicyRow{State: s, Actions: acts, Prior: pr}
	}
	return rows
}

// randomiseAdapter sets every adapter B so that θ ≠ ρ.
func randomiseAdapter(p *PolicyNet, seed uint64, scale float64) {
	r := rand.New(rand.NewPCG(seed, 11))
	for _, i := range []int{adBs1, adBs2, adBa, adBo} {
		for j := range p.Adapter[i].Value {
			p.Adapter[i].Value[j] = float32(r.NormFloat64() * scale)
		}
	}
}

func gelu64(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

// plainNet is the float64 oracle of the network: effective weights with the adapter applied
// (theta) or not, and the forward pass in plain Go.
type plainNet struct {
	p     *PolicyNet
	ad    [][]float64 // adapter values in float64 (perturbed by finite differences)
	theta bool
}

func newPlainNet(p *PolicyNet, theta bool) *plainNet {
	n := &plainNet{p: p, theta: theta}
	for _, a := range p.Adapter {
		v := make([]float64, len(a.Value))
		for i, x := range a.Value {
			v[i] = float64(x)
		}
		n.ad = append(n.ad, v)
	}
	return n
}

// weight returns base weight bi [in, out] plus (α/r)·Aᵀ·Bᵀ of adapter blocks ai, bj.
func (n *plainNet) weight(bi, ai, bj int) []float64 {
	w := n.p.Base[bi]
	in, out, r := w.Dims[0], w.Dims[1], n.p.Rank
	eff := make([]float64, in*out)
	for i := range in {
		for j := range out {
			v := float64(w.Value[i*out+j])
			if n.theta {
				d := 0.0
				for k := range r {
					d += n.ad[ai][k*in+i] * n.ad[bj][j*r+k]
				}
				v += n.p.Scale() * d
			}
			eff[i*out+j] = v
		}
	}
	return eff
}

func dense(x, w []float64, b *Param, out int) []float64 {
	y := make([]float64, out)
	for j := range out {
		s := float64(b.Value[j])
		for i := range x {
			s += x[i] * w[i*out+j]
		}
		y[j] = s
	}
	return y
}

func geluAll(x []float64) []float64 {
	for i := range x {
		x[i] = gelu64(x[i])
	}
	return x
}

// rms64 is N(x) = x/√(mean(x²) + 1e-6).
func rms64(x []float64) []float64 {
	ms := 0.0
	for _, v := range x {
		ms += v * v / float64(len(x))
	}
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v / math.Sqrt(ms+1e-6)
	}
	return out
}

// scores returns z(s,a) of the row's legal actions and h(s), with the adapter applied when
// theta is set.
func (n *plainNet) scores(row PolicyRow, theta bool) (z, h []float64) {
	p, saved := n.p, n.theta
	n.theta = theta
	defer func() { n.theta = saved }()
	s := make([]float64, len(row.State))
	for i, v := range row.State {
		s[i] = float64(v)
	}
	h1 := geluAll(dense(rms64(s), n.weight(baseWs1, adAs1, adBs1), p.Base[baseBs1], p.Hidden))
	h = rms64(geluAll(dense(rms64(h1), n.weight(baseWs2, adAs2, adBs2), p.Base[baseBs2], p.EncoderDim)))
	wah, wad, wo := n.weight(baseWah, adAah, adBa), n.weight(baseWad, adAad, adBa), n.weight(baseWo, adAo, adBo)
	aw := policy.ActionWidth
	z = make([]float64, row.Legal())
	for k := range z {
		x := dense(h, wah, p.Base[baseBa], p.Hidden)
		d := make([]float64, aw)
		for i := range aw {
			d[i] = float64(row.Actions[k*aw+i])
		}
		d = rms64(d)
		for j := range x {
			for i := range aw {
				x[j] += d[i] * wad[i*p.Hidden+j]
			}
		}
		z[k] = dense(geluAll(x), wo, p.Base[baseBo], 1)[0]
	}
	return z, h
}

// forward returns log π over the row's legal actions, logits p + z_θ − z_base (θ) or p (ρ), and
// h_ρ(s), the base encoder's.
func (n *plainNet) forward(row PolicyRow) (logp, h []float64) {
	zb, h := n.scores(row, false)
	logits := make([]float64, row.Legal())
	for k := range logits {
		logits[k] = float64(row.Prior[k])
	}
	if n.theta {
		zt, _ := n.scores(row, true)
		for k := range logits {
			logits[k] += zt[k] - zb[k]
		}
	}
	return plainLogSoftmax(logits), h
}

func plainLogSoftmax(logits []float64) []float64 {
	mx := math.Inf(-1)
	for _, l := range logits {
		mx = max(mx, l)
	}
	sum := 0.0
	for _, l := range logits {
		sum += math.Exp(l - mx)
	}
	out := make([]float64, len(logits))
	if len(logits) == 1 {
		return out
	}
	for i, l := range logits {
		out[i] = l - mx - math.Log(sum)
	}
	return out
}

func TestPolicyNetInitThetaEqualsRho(t *testing.T) {
	e := testEngine(t)
	cfg := config.Policy{Hidden: 16, EncoderDim: 8, MaxLegalActions: 40, AdapterRank: 4, AdapterAlpha: 8}
	p := NewPolicyNet(cfg, policy.StateWidth(3), 1)
	nonzero := 0
	for _, w := range p.Base[baseWo].Value {
		if w != 0 {
			nonzero++
		}
	}
	if nonzero != len(p.Base[baseWo].Value) {
		t.Fatalf("base output layer: %d of %d weights nonzero; the adapter's gradient needs a random base", nonzero, len(p.Base[baseWo].Value))
	}
	rows := randomRows(p, 13, 30, 2)
	s, err := p.Score(e, rows)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		want := plainLogSoftmax(toF64(r.Prior))
		for k := range r.Prior {
			if math.Float32bits(s.Theta[i][k]) != math.Float32bits(s.Rho[i][k]) {
				t.Fatalf("row %d action %d: θ %v ≠ ρ %v at init", i, k, s.Theta[i][k], s.Rho[i][k])
			}
			if r.Legal() == 1 && s.Rho[i][k] != 0 {
				t.Fatalf("row %d singleton: log-prob %v, want exactly 0", i, s.Rho[i][k])
			}
			if math.Abs(float64(s.Rho[i][k])-want[k]) > 1e-6 {
				t.Fatalf("row %d action %d: log π_ρ %v, want the prior's log-softmax %v", i, k, s.Rho[i][k], want[k])
			}
		}
	}
}

func toF64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

func TestPolicyNetScoreMatchesPlainGo(t *testing.T) {
	e := testEngine(t)
	for _, cfg := range []config.Policy{
		smallPolicyCfg(),
		{Hidden: 32, EncoderDim: 16, MaxLegalActions: 64, AdapterRank: 8, AdapterAlpha: 16},
	} {
		p := NewPolicyNet(cfg, policy.StateWidth(4), 3)
		randomiseAdapter(p, 4, 0.3)
		// 11 rows (bucket 16) and up to 40 legal actions (K bucket 64) exercise both paddings.
		rows := randomRows(p, 11, min(40, cfg.MaxLegalActions), 5)
		s, err := p.Score(e, rows)
		if err != nil {
			t.Fatal(err)
		}
		th, rh := newPlainNet(p, true), newPlainNet(p, false)
		differ := false
		for i, r := range rows {
			wantT, _ := th.forward(r)
			wantR, wantH := rh.forward(r)
			for k := range wantT {
				if math.Abs(float64(s.Theta[i][k])-wantT[k]) > 1e-5 || math.Abs(float64(s.Rho[i][k])-wantR[k]) > 1e-5 {
					t.Fatalf("%+v row %d action %d: θ %v ρ %v, plain Go %v %v", cfg, i, k, s.Theta[i][k], s.Rho[i][k], wantT[k], wantR[k])
				}
				differ = differ || math.Abs(wantT[k]-wantR[k]) > 1e-3
			}
			for j := range wantH {
				if math.Abs(float64(s.H[i][j])-wantH[j]) > 1e-5 {
					t.Fatalf("row %d h[%d] = %v, want %v", i, j, s.H[i][j], wantH[j])
				}
			}
		}
		if !differ {
			t.Fatalf("%+v: the adapter did not move θ away from ρ", cfg)
		}
	}
}

// TestPolicyNetRowIndependence checks that a row's scores do not depend on the batch around it
// (its position, the other rows, or the padded sizes) beyond float32 rounding.
func TestPolicyNetRowIndependence(t *testing.T) {
	e := testEngine(t)
	p := NewPolicyNet(smallPolicyCfg(), policy.StateWidth(2), 8)
	randomiseAdapter(p, 9, 0.4)
	rows := randomRows(p, 30, 20, 10)
	all, err := p.Score(e, rows)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 7, 29} {
		one, err := p.Score(e, rows[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		for k := range rows[i].Prior {
			if math.Abs(float64(one.Theta[0][k]-all.Theta[i][k])) > 1e-6 {
				t.Fatalf("row %d action %d: alone %v, in a batch %v", i, k, one.Theta[0][k], all.Theta[i][k])
			}
		}
	}
}

func TestPolicyNetRejectsBadRows(t *testing.T) {
	e := testEngine(t)
	p := NewPolicyNet(smallPolicyCfg(), policy.StateWidth(2), 8)
	good := randomRows(p, 2, 5, 1)
	for name, bad := range map[string]PolicyRow{
		"no legal action": {State: good[0].State},
		"short state":     {State: good[0].State[:3], Actions: good[0].Actions, Prior: good[0].Prior},
		"actions/prior":   {State: good[1].State, Actions: good[1].Actions[:1], Prior: good[1].Prior},
		"too many legal":  {State: good[0].State, Actions: make([]float32, 21*policy.ActionWidth), Prior: make([]float32, 21)},
	} {
		if _, err := p.Score(e, []PolicyRow{good[1], bad}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestMatMulCustomGradMatchesAutodiff(t *testing.T) {
	e := testEngine(t)
	r := rand.New(rand.NewPCG(9, 9))
	randM := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	x, w, c := randM(18), randM(12), randM(24)
	run := func(name string, mm func(a, b *graph.Node) *graph.Node) [][]float32 {
		out, err := e.run("matmul-check/"+name, func(in []*graph.Node) []*graph.Node {
			// A nonlinear loss that uses x twice, so gradients must accumulate correctly.
			y := mm(graph.Tanh(in[0]), in[1])
			loss := graph.ReduceAllSum(graph.Mul(graph.Sin(y), in[2]))
			loss = graph.Add(loss, graph.ReduceAllSum(graph.Square(in[0])))
			return append([]*graph.Node{y}, graph.Gradient(loss, in[0], in[1])...)
		}, matrix(x, 6, 3), matrix(w, 3, 4), matrix(c, 6, 4))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	got, want := run("custom", MatMulCustomGrad), run("dot", graph.DotProduct)
	for i, name := range []string{"value", "d/dx", "d/dw"} {
		for j := range want[i] {
			if math.Abs(float64(got[i][j]-want[i][j])) > 1e-5*(1+math.Abs(float64(want[i][j]))) {
				t.Fatalf("%s[%d]: custom %v, autodiff %v", name, j, got[i][j], want[i][j])
			}
		}
	}
}

// BenchmarkPolicyNetScore scores a rollout wave: 128 episodes' decisions, K bucket 64 (under
// -short: 8 decisions), with the CPU kernels (what every CPU run uses), and reports decisions/s
// and x-graph, the speed-up over the graph path timed in the same run on the same rows.
func BenchmarkPolicyNetScore(bm *testing.B) {
	native, graphs := testEngine(bm), testEngine(bm)
	graphs.native = false
	def, err := config.Default()
	if err != nil {
		bm.Fatal(err)
	}
	p := NewPolicyNet(def.Policy, policy.StateWidth(6), 1)
	randomiseAdapter(p, 2, 0.01)
	n := 128
	if testing.Short() {
		n = 8
	}
	rows := randomRows(p, n, 46, 3)
	for _, e := range []*Engine{native, graphs} { // compile the graph, merge the adapter
		if _, err := p.Score(e, rows); err != nil {
			bm.Fatal(err)
		}
	}
	bm.ResetTimer()
	for range bm.N {
		if _, err := p.Score(native, rows); err != nil {
			bm.Fatal(err)
		}
	}
	bm.StopTimer()
	sec := bm.Elapsed().Seconds()
	start := time.Now()
	for range bm.N {
		if _, err := p.Score(graphs, rows); err != nil {
			bm.Fatal(err)
		}
	}
	bm.ReportMetric(float64(len(rows)*bm.N)/sec, "decisions/s")
	bm.ReportMetric(time.Since(start).Seconds()/sec, "x-graph")
}

// TestPolicyNetBatchInvariant: a row's scores are bit-identical alone and in a batch of 300 of
// varied legal counts, so rescore reproduces a rollout wave's log-probabilities exactly: the CPU
// kernels by construction; the graph on the Go backend is checked too: gomlx v0.28's Go backend
// takes its large matmul kernel for the batch and its small one for a row (there is no option to
// pin one, as v0.26.0's dotgeneral_small did), and here the two agree bit for bit (each product's
// contraction, at most 128 long, fits one 512-long panel of the large kernel).
func TestPolicyNetBatchInvariant(t *testing.T) {
	def, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	p := NewPolicyNet(def.Policy, policy.StateWidth(6), 8)
	randomiseAdapter(p, 9, 0.4)
	rows := randomRows(p, 300, 40, 10)
	for _, native := range []bool{true, false} { // the CPU kernels, and the graph (what XLA runs)
		e := testEngine(t)
		e.native = native
		all, err := p.Score(e, rows)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range []int{0, 7, 29, 150, 299} {
			one, err := p.Score(e, rows[i:i+1])
			if err != nil {
				t.Fatal(err)
			}
			for k := range rows[i].Prior {
				if one.Theta[0][k] != all.Theta[i][k] || one.Rho[0][k] != all.Rho[i][k] {
					t.Fatalf("native %v row %d action %d: alone (%v, %v), in a batch (%v, %v)", native, i, k, one.Theta[0][k], one.Rho[0][k], all.Theta[i][k], all.Rho[i][k])
				}
			}
		}
	}
}
