package gpu

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/policy"
)

// policyTestBackend is simplego with graph ops run one at a time. With the default (parallel)
// op scheduling, gomlx v0.26.0's simplego deadlocks on graphs with several independent matmuls
// when its worker pool (2×NumCPU) is full: each scheduled DotGeneral waits for a free worker
// from inside a worker (backends/simplego/dotgeneral_small.go WaitToStart). Seen here on 2 cores.
func policyTestBackend(t *testing.T) backends.Backend {
	t.Helper()
	b, err := simplego.New("ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Finalize)
	return b
}

// smallPolicyCfg is the gradient-check size: hidden 8, encoder 4, rank 2, K 5.
func smallPolicyCfg() config.Policy {
	return config.Policy{Hidden: 8, EncoderDim: 4, MaxLegalActions: 5, AdapterRank: 2, AdapterAlpha: 4}
}

type policyBatch struct {
	states, actions, prior [][]float32
	mask                   [][]bool
	chosen                 []int
	coef                   []float32
}

// policyTestBatch draws n decisions for net p: legal counts 1..K (row 0 is a singleton), action
// descriptors in the encoding's ranges, priors in ±2, and garbage (NaN, ±1e30, +Inf) in the prior
// and descriptors of masked positions.
func policyTestBatch(p *PolicyNet, n int, seed uint64) policyBatch {
	r := rand.New(rand.NewPCG(seed, 7))
	k, aw := p.K, policy.ActionWidth
	var pb policyBatch
	garbage := []float32{float32(math.NaN()), 1e30, -1e30, float32(math.Inf(1))}
	for i := range n {
		s := make([]float32, p.StateWidth)
		for j := range s {
			s[j] = float32(r.Float64())
		}
		legal := 1 + r.IntN(k)
		if i == 0 {
			legal = 1
		}
		acts := make([]float32, 0, legal*aw)
		for range legal {
			for range aw {
				acts = append(acts, float32(r.IntN(2))*float32(r.Float64()))
			}
		}
		padded, mask, ok := policy.Pad(acts, k)
		if !ok {
			panic("pad")
		}
		// Shuffle the legal positions so masked ones are not only at the end.
		perm := r.Perm(k)
		pa, pm := make([]float32, k*aw), make([]bool, k)
		for j, q := range perm {
			copy(pa[q*aw:(q+1)*aw], padded[j*aw:(j+1)*aw])
			pm[q] = mask[j]
		}
		pr := make([]float32, k)
		for j := range pr {
			if pm[j] {
				pr[j] = float32(4*r.Float64() - 2)
			} else {
				pr[j] = garbage[r.IntN(len(garbage))]
				if j%2 == 0 {
					pa[j*aw] = 1e30
				}
			}
		}
		var legalIdx []int
		for j, ok := range pm {
			if ok {
				legalIdx = append(legalIdx, j)
			}
		}
		pb.states = append(pb.states, s)
		pb.actions = append(pb.actions, pa)
		pb.mask = append(pb.mask, pm)
		pb.prior = append(pb.prior, pr)
		pb.chosen = append(pb.chosen, legalIdx[r.IntN(len(legalIdx))])
		pb.coef = append(pb.coef, float32(2*r.Float64()-1))
	}
	return pb
}

// randomiseAdapterB sets every adapter B (and perturbs A) so θ ≠ ρ.
func randomiseAdapterB(p *PolicyNet, seed uint64, scale float64) {
	r := rand.New(rand.NewPCG(seed, 11))
	for l := range p.Adapter.Layers {
		for i := range p.Adapter.Layers[l].B {
			p.Adapter.Layers[l].B[i] = float32(r.NormFloat64() * scale)
		}
	}
}

// adapter64 is a float64 copy of the adapter, for the plain-Go oracle and finite differences.
type adapter64 struct{ A, B [policyLayers][]float64 }

func toAdapter64(a *Adapter) *adapter64 {
	var c adapter64
	for l := range a.Layers {
		for _, f := range a.Layers[l].A {
			c.A[l] = append(c.A[l], float64(f))
		}
		for _, f := range a.Layers[l].B {
			c.B[l] = append(c.B[l], float64(f))
		}
	}
	return &c
}

func gelu64(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

// plainPolicy is the float64 oracle: log π over the legal set (−Inf at masked positions) and h,
// with the adapter applied when ad != nil.
func plainPolicy(p *PolicyNet, ad *adapter64, state, acts []float32, mask []bool, prior []float32) (logp, h []float64) {
	rank := p.Adapter.Rank
	scale := p.Adapter.Scale()
	weff := func(l int) []float64 {
		b := p.Base[l]
		w := make([]float64, len(b.W))
		for i := range b.In {
			for j := range b.Out {
				v := float64(b.W[i*b.Out+j])
				if ad != nil {
					d := 0.0
					for r := range rank {
						d += ad.A[l][r*b.In+i] * ad.B[l][j*rank+r]
					}
					v += scale * d
				}
				w[i*b.Out+j] = v
			}
		}
		return w
	}
	dense := func(l int, w []float64, x []float64) []float64 {
		b := p.Base[l]
		y := make([]float64, b.Out)
		for j := range b.Out {
			s := float64(b.B[j])
			for i := range b.In {
				s += x[i] * w[i*b.Out+j]
			}
			y[j] = s
		}
		return y
	}
	geluAll := func(x []float64) []float64 {
		for i := range x {
			x[i] = gelu64(x[i])
		}
		return x
	}
	s := make([]float64, len(state))
	for i, v := range state {
		s[i] = float64(v)
	}
	h = geluAll(dense(PolicyLayerS2, weff(PolicyLayerS2), geluAll(dense(PolicyLayerS1, weff(PolicyLayerS1), s))))
	wa, wo := weff(PolicyLayerA), weff(PolicyLayerO)
	aw := policy.ActionWidth
	logits := make([]float64, p.K)
	mx := math.Inf(-1)
	for k := range p.K {
		if !mask[k] {
			continue
		}
		x := append(append([]float64(nil), h...), make([]float64, aw)...)
		for i := range aw {
			x[len(h)+i] = float64(acts[k*aw+i])
		}
		a := geluAll(dense(PolicyLayerA, wa, x))
		logits[k] = dense(PolicyLayerO, wo, a)[0] + float64(prior[k])
		mx = max(mx, logits[k])
	}
	sum := 0.0
	for k := range p.K {
		if mask[k] {
			sum += math.Exp(logits[k] - mx)
		}
	}
	logp = make([]float64, p.K)
	for k := range p.K {
		if mask[k] {
			logp[k] = logits[k] - mx - math.Log(sum)
		} else {
			logp[k] = math.Inf(-1)
		}
	}
	return logp, h
}

func TestPolicyNetInitThetaEqualsRho(t *testing.T) {
	b := policyTestBackend(t)
	cfg := config.Policy{Hidden: 16, EncoderDim: 8, MaxLegalActions: 12, AdapterRank: 4, AdapterAlpha: 8}
	p := NewPolicyNet(cfg, policy.StateWidth(3), 1)
	for _, w := range append(p.Base[PolicyLayerO].W, p.Base[PolicyLayerO].B...) {
		if w != 0 {
			t.Fatalf("base output layer not zero-initialised")
		}
	}
	pb := policyTestBatch(p, 13, 2)
	theta, rho, h, err := p.LogProbs(b, pb.states, pb.actions, pb.mask, pb.prior)
	if err != nil {
		t.Fatal(err)
	}
	if len(theta) != 13 || len(rho) != 13 || len(h) != 13 {
		t.Fatalf("got %d/%d/%d rows", len(theta), len(rho), len(h))
	}
	for i := range theta {
		legal := 0
		for _, ok := range pb.mask[i] {
			if ok {
				legal++
			}
		}
		// log-softmax of the prior alone over the legal set.
		mx := math.Inf(-1)
		for k, ok := range pb.mask[i] {
			if ok {
				mx = max(mx, float64(pb.prior[i][k]))
			}
		}
		sum := 0.0
		for k, ok := range pb.mask[i] {
			if ok {
				sum += math.Exp(float64(pb.prior[i][k]) - mx)
			}
		}
		for k, ok := range pb.mask[i] {
			if math.Float32bits(theta[i][k]) != math.Float32bits(rho[i][k]) {
				t.Fatalf("row %d action %d: θ %v ≠ ρ %v at init", i, k, theta[i][k], rho[i][k])
			}
			v := float64(rho[i][k])
			if math.IsNaN(v) {
				t.Fatalf("row %d action %d: NaN", i, k)
			}
			if !ok {
				if !math.IsInf(v, -1) {
					t.Fatalf("row %d masked action %d: %v, want -Inf", i, k, v)
				}
				continue
			}
			if legal == 1 && rho[i][k] != 0 {
				t.Fatalf("row %d singleton: log-prob %v, want exactly 0", i, rho[i][k])
			}
			want := float64(pb.prior[i][k]) - mx - math.Log(sum)
			if math.Abs(v-want) > 1e-6 {
				t.Fatalf("row %d action %d: log π_ρ %v, want prior log-softmax %v", i, k, v, want)
			}
		}
		_, hWant := plainPolicy(p, nil, pb.states[i], pb.actions[i], pb.mask[i], pb.prior[i])
		for j := range hWant {
			if math.Abs(float64(h[i][j])-hWant[j]) > 1e-5 {
				t.Fatalf("row %d h[%d] = %v, want %v", i, j, h[i][j], hWant[j])
			}
		}
	}
	// At init B = 0: the gradient w.r.t. every A is zero, w.r.t. B not, and never NaN.
	g, norm, err := p.AdapterGradient(b, pb.states, pb.actions, pb.mask, pb.prior, pb.chosen, pb.coef)
	if err != nil {
		t.Fatal(err)
	}
	if !(norm > 0) || math.IsNaN(norm) || math.IsInf(norm, 0) {
		t.Fatalf("gradient norm at init %v", norm)
	}
	for l := range g.Layers {
		for _, v := range g.Layers[l].A {
			if v != 0 {
				t.Fatalf("layer %d: nonzero gradient %v w.r.t. A while B = 0", l, v)
			}
		}
	}
}

func TestPolicyNetLogProbsMatchPlainGo(t *testing.T) {
	b := policyTestBackend(t)
	for _, cfg := range []config.Policy{
		smallPolicyCfg(),
		{Hidden: 32, EncoderDim: 16, MaxLegalActions: 24, AdapterRank: 8, AdapterAlpha: 16},
	} {
		p := NewPolicyNet(cfg, policy.StateWidth(4), 3)
		randomiseAdapterB(p, 4, 0.3)
		pb := policyTestBatch(p, 11, 5)
		theta, rho, h, err := p.LogProbs(b, pb.states, pb.actions, pb.mask, pb.prior)
		if err != nil {
			t.Fatal(err)
		}
		ad := toAdapter64(p.Adapter)
		differ := false
		for i := range pb.states {
			wantT, _ := plainPolicy(p, ad, pb.states[i], pb.actions[i], pb.mask[i], pb.prior[i])
			wantR, wantH := plainPolicy(p, nil, pb.states[i], pb.actions[i], pb.mask[i], pb.prior[i]) // h is h_ρ
			for k := range wantT {
				for _, c := range []struct {
					got  float32
					want float64
					name string
				}{{theta[i][k], wantT[k], "θ"}, {rho[i][k], wantR[k], "ρ"}} {
					if math.IsInf(c.want, -1) {
						if !math.IsInf(float64(c.got), -1) {
							t.Fatalf("%+v row %d action %d %s: %v, want -Inf", cfg, i, k, c.name, c.got)
						}
						continue
					}
					if math.Abs(float64(c.got)-c.want) > 1e-5 {
						t.Fatalf("%+v row %d action %d %s: %v, want %v", cfg, i, k, c.name, c.got, c.want)
					}
				}
				if !math.IsInf(wantT[k], -1) && math.Abs(wantT[k]-wantR[k]) > 1e-3 {
					differ = true
				}
			}
			for j := range wantH {
				if math.Abs(float64(h[i][j])-wantH[j]) > 1e-5 {
					t.Fatalf("row %d h[%d] = %v, want %v", i, j, h[i][j], wantH[j])
				}
			}
		}
		if !differ {
			t.Fatalf("%+v: the adapter did not move θ away from ρ", cfg)
		}
	}
}

// plainObjective is Σ_b coef[b]·log π_θ(chosen[b]|s_b) in float64.
func plainObjective(p *PolicyNet, ad *adapter64, pb policyBatch) float64 {
	j := 0.0
	for i := range pb.states {
		lp, _ := plainPolicy(p, ad, pb.states[i], pb.actions[i], pb.mask[i], pb.prior[i])
		j += float64(pb.coef[i]) * lp[pb.chosen[i]]
	}
	return j
}

func TestPolicyNetAdapterGradientFiniteDifferences(t *testing.T) {
	b := policyTestBackend(t)
	p := NewPolicyNet(smallPolicyCfg(), policy.StateWidth(2), 6)
	randomiseAdapterB(p, 7, 0.5)
	pb := policyTestBatch(p, 9, 8)
	g, norm, err := p.AdapterGradient(b, pb.states, pb.actions, pb.mask, pb.prior, pb.chosen, pb.coef)
	if err != nil {
		t.Fatal(err)
	}
	ad := toAdapter64(p.Adapter)
	const eps = 1e-5
	sq, checked := 0.0, 0
	for l := range ad.A {
		for _, part := range []struct {
			vals []float64
			grad []float32
			name string
		}{{ad.A[l], g.Layers[l].A, "A"}, {ad.B[l], g.Layers[l].B, "B"}} {
			if len(part.grad) != len(part.vals) {
				t.Fatalf("layer %d %s: %d gradients for %d parameters", l, part.name, len(part.grad), len(part.vals))
			}
			for i := range part.vals {
				orig := part.vals[i]
				part.vals[i] = orig + eps
				up := plainObjective(p, ad, pb)
				part.vals[i] = orig - eps
				down := plainObjective(p, ad, pb)
				part.vals[i] = orig
				fd := (up - down) / (2 * eps)
				got := float64(part.grad[i])
				if math.Abs(got-fd) > 1e-3*math.Abs(fd)+2e-6 {
					t.Fatalf("layer %d %s[%d]: gradient %v, finite difference %v", l, part.name, i, got, fd)
				}
				sq += fd * fd
				checked++
			}
		}
	}
	if fdNorm := math.Sqrt(sq); math.Abs(norm-fdNorm) > 1e-3*fdNorm || fdNorm < 1e-2 {
		t.Fatalf("gradient norm %v, finite-difference norm %v", norm, fdNorm)
	}
	t.Logf("checked %d adapter parameters, norm %.6f", checked, norm)
}

func TestPolicyNetMatMulCustomGradMatchesAutodiff(t *testing.T) {
	b := policyTestBackend(t)
	r := rand.New(rand.NewPCG(9, 9))
	randT := func(dims ...int) *tensors.Tensor {
		n := 1
		for _, d := range dims {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return tensors.FromFlatDataAndDimensions(v, dims...)
	}
	x, w, c := randT(6, 3), randT(3, 4), randT(6, 4)
	run := func(mm func(a, b *graph.Node) *graph.Node) [][]float32 {
		out, err := policyExec(b, "matmul check", func(in []*graph.Node) []*graph.Node {
			// A nonlinear loss that uses x twice, so gradients must accumulate correctly.
			y := mm(graph.Tanh(in[0]), in[1])
			loss := graph.ReduceAllSum(graph.Mul(graph.Sin(y), in[2]))
			loss = graph.Add(loss, graph.ReduceAllSum(graph.Square(in[0])))
			return append([]*graph.Node{y}, graph.Gradient(loss, in[0], in[1])...)
		}, x, w, c)
		if err != nil {
			t.Fatal(err)
		}
		res := make([][]float32, len(out))
		for i, o := range out {
			res[i] = tensors.MustCopyFlatData[float32](o)
		}
		return res
	}
	got, want := run(MatMulCustomGrad), run(graph.Dot)
	for i, name := range []string{"value", "d/dx", "d/dw"} {
		for j := range want[i] {
			if math.Abs(float64(got[i][j]-want[i][j])) > 1e-5*(1+math.Abs(float64(want[i][j]))) {
				t.Fatalf("%s[%d]: custom %v, autodiff %v", name, j, got[i][j], want[i][j])
			}
		}
	}
}

func TestPolicyNetBaseFrozen(t *testing.T) {
	b := policyTestBackend(t)
	p := NewPolicyNet(smallPolicyCfg(), policy.StateWidth(2), 10)
	randomiseAdapterB(p, 11, 0.5)
	before, _ := p.MarshalBinary()
	adBefore := p.Adapter.Clone()
	pb := policyTestBatch(p, 7, 12)
	g, norm, err := p.AdapterGradient(b, pb.states, pb.actions, pb.mask, pb.prior, pb.chosen, pb.coef)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := p.MarshalBinary()
	if !bytes.Equal(before, after) {
		t.Fatal("AdapterGradient changed the network")
	}
	if g == p.Adapter || g.Rank != adBefore.Rank || g.Alpha != adBefore.Alpha || !(norm > 0) {
		t.Fatalf("bad gradient container (rank %d, norm %v)", g.Rank, norm)
	}
	for l := range g.Layers {
		gl, al := g.Layers[l], adBefore.Layers[l]
		if gl.In != al.In || gl.Out != al.Out || len(gl.A) != len(al.A) || len(gl.B) != len(al.B) {
			t.Fatalf("layer %d: gradient shapes %d×%d (%d, %d), adapter %d×%d (%d, %d)", l,
				gl.In, gl.Out, len(gl.A), len(gl.B), al.In, al.Out, len(al.A), len(al.B))
		}
		for _, v := range append(append([]float32(nil), gl.A...), gl.B...) {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("layer %d: non-finite gradient %v", l, v)
			}
		}
	}
	// Illegal choices and mismatched inputs are errors.
	bad := append([]int(nil), pb.chosen...)
	for k, ok := range pb.mask[0] {
		if !ok {
			bad[0] = k
			break
		}
	}
	if _, _, err := p.AdapterGradient(b, pb.states, pb.actions, pb.mask, pb.prior, bad, pb.coef); err == nil {
		t.Fatal("a masked chosen action was accepted")
	}
	if _, _, _, err := p.LogProbs(b, pb.states, pb.actions[:3], pb.mask, pb.prior); err == nil {
		t.Fatal("mismatched batch was accepted")
	}
}

func TestPolicyNetMarshal(t *testing.T) {
	cfg := smallPolicyCfg()
	sw := policy.StateWidth(2)
	a, _ := NewPolicyNet(cfg, sw, 42).MarshalBinary()
	a2, _ := NewPolicyNet(cfg, sw, 42).MarshalBinary()
	c, _ := NewPolicyNet(cfg, sw, 43).MarshalBinary()
	if !bytes.Equal(a, a2) {
		t.Fatal("same seed, different bytes")
	}
	if bytes.Equal(a, c) {
		t.Fatal("different seeds, same bytes")
	}
	p := NewPolicyNet(cfg, sw, 42)
	randomiseAdapterB(p, 1, 0.2)
	data, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var q PolicyNet
	if err := q.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	back, _ := q.MarshalBinary()
	if !bytes.Equal(data, back) {
		t.Fatal("round trip changed the bytes")
	}
	b := policyTestBackend(t)
	pb := policyTestBatch(p, 4, 2)
	t1, r1, _, err1 := p.LogProbs(b, pb.states, pb.actions, pb.mask, pb.prior)
	t2, r2, _, err2 := q.LogProbs(b, pb.states, pb.actions, pb.mask, pb.prior)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	for i := range t1 {
		for k := range t1[i] {
			if math.Float32bits(t1[i][k]) != math.Float32bits(t2[i][k]) || math.Float32bits(r1[i][k]) != math.Float32bits(r2[i][k]) {
				t.Fatalf("restored net differs at %d,%d", i, k)
			}
		}
	}
	flip := append([]byte(nil), data...)
	flip[len(flip)/2] ^= 1
	ver := append([]byte(nil), data...)
	ver[4] = 2
	for name, bad := range map[string][]byte{
		"empty": nil, "short": data[:10], "magic": append([]byte("EVVH"), data[4:]...),
		"flipped": flip, "truncated": data[:len(data)-5], "version": ver,
		"extended": append(append([]byte(nil), data...), 0, 0, 0, 0),
	} {
		var z PolicyNet
		if err := z.UnmarshalBinary(bad); err == nil {
			t.Fatalf("%s checkpoint accepted", name)
		}
	}
}

func BenchmarkPolicyNetLogProbs(bm *testing.B) {
	be, err := simplego.New("ops_sequential")
	if err != nil {
		bm.Fatal(err)
	}
	defer be.Finalize()
	def, err := config.Default()
	if err != nil {
		bm.Fatal(err)
	}
	p := NewPolicyNet(def.Policy, policy.StateWidth(8), 1)
	randomiseAdapterB(p, 2, 0.01)
	pb := policyTestBatch(p, 256, 3)
	bm.ResetTimer()
	start := time.Now()
	for range bm.N {
		if _, _, _, err := p.LogProbs(be, pb.states, pb.actions, pb.mask, pb.prior); err != nil {
			bm.Fatal(err)
		}
	}
	bm.ReportMetric(time.Since(start).Seconds()/float64(bm.N), "s/call")
}

func BenchmarkPolicyNetAdapterGradient(bm *testing.B) {
	be, err := simplego.New("ops_sequential")
	if err != nil {
		bm.Fatal(err)
	}
	defer be.Finalize()
	def, err := config.Default()
	if err != nil {
		bm.Fatal(err)
	}
	p := NewPolicyNet(def.Policy, policy.StateWidth(8), 1)
	randomiseAdapterB(p, 2, 0.01)
	pb := policyTestBatch(p, 256, 3)
	bm.ResetTimer()
	start := time.Now()
	for range bm.N {
		if _, _, err := p.AdapterGradient(be, pb.states, pb.actions, pb.mask, pb.prior, pb.chosen, pb.coef); err != nil {
			bm.Fatal(err)
		}
	}
	bm.ReportMetric(time.Since(start).Seconds()/float64(bm.N), "s/call")
}
