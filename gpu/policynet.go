package gpu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/policy"
)

// Dense layers of the policy network, in the order of PolicyNet.Base and Adapter.Layers.
const (
	PolicyLayerS1 = iota // state encoder, first layer: stateWidth → Hidden
	PolicyLayerS2        // state encoder, second layer: Hidden → EncoderDim (its GELU output is h_ρ(s))
	PolicyLayerA         // action scorer hidden layer: [h; d_a] (EncoderDim+ActionWidth) → Hidden
	PolicyLayerO         // action scorer output: Hidden → 1 (zero-initialised in the base)
	policyLayers
)

// DenseLayer is one frozen base layer y = x·W + b. W is [In×Out] row-major: W[i*Out+j] connects
// input i to output j (the value head's layout).
type DenseLayer struct {
	In, Out int
	W       []float32 // [In*Out]
	B       []float32 // [Out]
}

// AdapterLayer is the low-rank adapter of one dense layer: the layer's effective weight, in the
// usual out×in orientation, is W_eff = W + (Alpha/Rank)·B·A, i.e. in DenseLayer's [In×Out] layout
// W_eff[i][j] = W[i][j] + (Alpha/Rank)·Σ_r A[r][i]·B[j][r].
type AdapterLayer struct {
	In, Out int
	A       []float32 // [Rank×In] row-major: A[r*In+i]
	B       []float32 // [Out×Rank] row-major: B[j*Rank+r]
}

// Adapter holds the trainable low-rank parameters θ − ρ of every dense layer (also the layout of
// the gradients AdapterGradient returns).
type Adapter struct {
	Rank   int
	Alpha  float64
	Layers [policyLayers]AdapterLayer
}

// Scale is Alpha/Rank, the factor on B·A.
func (a *Adapter) Scale() float64 { return a.Alpha / float64(a.Rank) }

// Clone returns a deep copy.
func (a *Adapter) Clone() *Adapter {
	c := *a
	for l := range c.Layers {
		c.Layers[l].A = append([]float32(nil), a.Layers[l].A...)
		c.Layers[l].B = append([]float32(nil), a.Layers[l].B...)
	}
	return &c
}

// PolicyNet is the compact orchestrator policy (design §6). The frozen base network is
//
//	h(s)   = GELU(GELU(s·W_s1 + b_s1)·W_s2 + b_s2)                         (h_ρ(s), EncoderDim wide)
//	z(s,a) = GELU([h; d_a]·W_a + b_a)·w_o + b_o                             (w_o, b_o start at zero)
//
// with exact (erf) GELU, and the reference prior logits p(s,a) are an input:
// logits_ρ = z_base + p, logits_θ = z_θ + p, where θ replaces every base weight W by
// W + (α/r)·B·A (Adapter). log π(a|s) is the log-softmax of the logits over the legal set.
// Only the adapter is trainable; the base is never differentiated nor changed.
type PolicyNet struct {
	StateWidth, Hidden, EncoderDim, K int
	Base                              [policyLayers]DenseLayer
	Adapter                           *Adapter
}

// Separate random streams for the frozen base and the adapter.
const (
	policyBaseSeedStream    = 0x706f6c626173655f // "polbase_"
	policyAdapterSeedStream = 0x706f6c6164617074 // "poladapt"
)

func policyLayerSizes(stateWidth, hidden, enc int) [policyLayers][2]int {
	return [policyLayers][2]int{
		{stateWidth, hidden}, {hidden, enc}, {enc + policy.ActionWidth, hidden}, {hidden, 1},
	}
}

func newZeroPolicyNet(stateWidth, hidden, enc, k, rank int, alpha float64) *PolicyNet {
	p := &PolicyNet{StateWidth: stateWidth, Hidden: hidden, EncoderDim: enc, K: k,
		Adapter: &Adapter{Rank: rank, Alpha: alpha}}
	for l, sz := range policyLayerSizes(stateWidth, hidden, enc) {
		in, out := sz[0], sz[1]
		p.Base[l] = DenseLayer{In: in, Out: out, W: make([]float32, in*out), B: make([]float32, out)}
		p.Adapter.Layers[l] = AdapterLayer{In: in, Out: out, A: make([]float32, rank*in), B: make([]float32, out*rank)}
	}
	return p
}

// NewPolicyNet builds the network for states of stateWidth values (policy.StateWidth) and
// cfg.MaxLegalActions padded actions, deterministically from seed: every base weight and bias of
// a layer with fan-in n is drawn from U(−1/√n, 1/√n) (torch.nn.Linear), except the output layer
// w_o, b_o, which is zero so the base scores every action 0; adapter A entries are drawn from
// U(−1/√in, 1/√in) (PEFT's LoRA init) and B is zero, so π_θ = π_ρ at step 0.
func NewPolicyNet(cfg config.Policy, stateWidth int, seed uint64) *PolicyNet {
	if stateWidth <= 0 || cfg.Hidden <= 0 || cfg.EncoderDim <= 0 || cfg.MaxLegalActions <= 0 ||
		cfg.AdapterRank <= 0 || !(cfg.AdapterAlpha > 0) {
		panic(fmt.Sprintf("gpu.NewPolicyNet: bad sizes (state %d, %+v)", stateWidth, cfg))
	}
	p := newZeroPolicyNet(stateWidth, cfg.Hidden, cfg.EncoderDim, cfg.MaxLegalActions, cfg.AdapterRank, cfg.AdapterAlpha)
	r := rand.New(rand.NewPCG(seed, policyBaseSeedStream))
	uni := func(r *rand.Rand, dst []float32, fanIn int) {
		bound := 1 / math.Sqrt(float64(fanIn))
		for i := range dst {
			dst[i] = float32((2*r.Float64() - 1) * bound)
		}
	}
	for l := range PolicyLayerO {
		uni(r, p.Base[l].W, p.Base[l].In)
		uni(r, p.Base[l].B, p.Base[l].In)
	}
	ra := rand.New(rand.NewPCG(seed, policyAdapterSeedStream))
	for l := range p.Adapter.Layers {
		uni(ra, p.Adapter.Layers[l].A, p.Adapter.Layers[l].In)
	}
	return p
}

// policyBucket pads a batch to 8, 16, 32, … rows so an Exec sees only a few shapes.
func policyBucket(n int) int {
	b := 8
	for b < n {
		b *= 2
	}
	return b
}

// MatMulCustomGrad returns x·w for x [N, in] and w [in, out] with a hand-supplied gradient
// (dx = v·wᵀ, dw = xᵀ·v), avoiding gomlx's DotGeneral autodiff, which on simplego materialises
// [N, in, out] tensors (design §11). The value is graph.Dot's; the gradient reaches x and w
// through custom-gradient identities on them, fed with the adjoint of the product, which a
// custom-gradient identity on the product captures first (reverse autodiff visits nodes in
// decreasing creation order).
func MatMulCustomGrad(x, w *graph.Node) *graph.Node {
	var vy *graph.Node // adjoint of the product, captured during the reverse pass
	xi := graph.IdentityWithCustomGradient(x, func(_, _ *graph.Node) *graph.Node {
		return graph.Dot(vy, graph.Transpose(w, 0, 1))
	})
	wi := graph.IdentityWithCustomGradient(w, func(_, _ *graph.Node) *graph.Node {
		return graph.Dot(graph.Transpose(x, 0, 1), vy)
	})
	y := graph.Dot(graph.StopGradient(x), graph.StopGradient(w))
	// A zero that depends on xi and wi, so the reverse pass visits them; its own gradient is
	// discarded by their custom gradients.
	link := graph.MulScalar(graph.Add(graph.ReduceAllSum(xi), graph.ReduceAllSum(wi)), 0)
	y = graph.Add(y, link)
	return graph.IdentityWithCustomGradient(y, func(_, v *graph.Node) *graph.Node {
		vy = v
		return v
	})
}

func gelu(x *graph.Node) *graph.Node {
	return graph.Mul(x, graph.MulScalar(graph.AddScalar(graph.Erf(graph.DivScalar(x, math.Sqrt2)), 1), 0.5))
}

// policyWeights are the graph nodes of one set of effective weights; the action layer's weight
// is split into its h rows (wah) and descriptor rows (wad), so h is multiplied once per state.
type policyWeights struct {
	ws1, bs1, ws2, bs2, wah, wad, ba, wo, bo *graph.Node
}

// Graph inputs, in order.
const (
	inStates  = iota          // [N, stateWidth]
	inActs                    // [N*K, ActionWidth]
	inPrior                   // [N, K]
	inMask                    // [N, K] float32, 1 = legal
	inBase                    // 9 base tensors: Ws1 bs1 Ws2 bs2 Wah Wad ba wo bo
	inAdapter = inBase + 9    // 9 adapter tensors: As1 Bs1 As2 Bs2 Aah Aad Ba Ao Bo
	inOneHot  = inAdapter + 9 // (gradient graph) [N, K]
	inCoef    = inOneHot + 1  // (gradient graph) [N]
)

func baseWeights(in []*graph.Node) policyWeights {
	b := in[inBase : inBase+9]
	return policyWeights{b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8]}
}

// thetaWeights adds (α/r)·Aᵀ·Bᵀ to every base weight.
func thetaWeights(base policyWeights, ad []*graph.Node, scale float64) policyWeights {
	delta := func(a, b *graph.Node) *graph.Node {
		return graph.MulScalar(MatMulCustomGrad(graph.Transpose(a, 0, 1), graph.Transpose(b, 0, 1)), scale)
	}
	t := base
	t.ws1 = graph.Add(base.ws1, delta(ad[0], ad[1]))
	t.ws2 = graph.Add(base.ws2, delta(ad[2], ad[3]))
	t.wah = graph.Add(base.wah, delta(ad[4], ad[6]))
	t.wad = graph.Add(base.wad, delta(ad[5], ad[6]))
	t.wo = graph.Add(base.wo, delta(ad[7], ad[8]))
	return t
}

// policyLogits returns the logits [N, K] (network score + prior) and h [N, E].
func policyLogits(states, acts, prior *graph.Node, w policyWeights) (logits, h *graph.Node) {
	n, k := prior.Shape().Dimensions[0], prior.Shape().Dimensions[1]
	hid := w.ba.Shape().Dimensions[0]
	h1 := gelu(graph.Add(MatMulCustomGrad(states, w.ws1), graph.InsertAxes(w.bs1, 0)))
	h = gelu(graph.Add(MatMulCustomGrad(h1, w.ws2), graph.InsertAxes(w.bs2, 0)))
	ph := graph.Add(MatMulCustomGrad(h, w.wah), graph.InsertAxes(w.ba, 0)) // [N, H]
	pd := MatMulCustomGrad(acts, w.wad)                                    // [N*K, H]
	pre := graph.Add(graph.Reshape(pd, n, k, hid), graph.Reshape(ph, n, 1, hid))
	a := gelu(graph.Reshape(pre, n*k, hid))
	z := graph.Add(MatMulCustomGrad(a, w.wo), graph.InsertAxes(w.bo, 0)) // [N*K, 1]
	return graph.Add(graph.Reshape(z, n, k), prior), h
}

// maskedLogSoftmax returns log-softmax over the legal positions (mask true) of each row, and 0 at
// masked positions; no NaN or infinity flows into values or gradients from masked positions, and a
// row with one legal action gets exactly 0. Every row must have a legal position.
func maskedLogSoftmax(logits, mask *graph.Node) *graph.Node {
	zero := graph.ZerosLike(logits)
	lowest := graph.MulScalar(graph.OnesLike(logits), -math.MaxFloat32)
	m := graph.StopGradient(graph.ReduceAndKeep(graph.Where(mask, logits, lowest), graph.ReduceMax, 1))
	shifted := graph.Where(mask, graph.Sub(logits, m), zero)
	e := graph.Where(mask, graph.Exp(shifted), zero)
	lse := graph.Log(graph.ReduceAndKeep(e, graph.ReduceSum, 1))
	return graph.Where(mask, graph.Sub(shifted, lse), zero)
}

// packed are the Go-side inputs of one call, padded to a batch bucket.
type packed struct {
	n, rows int
	args    []any
	mask    [][]bool
}

func (p *PolicyNet) pack(states, actions [][]float32, mask [][]bool, prior [][]float32) (*packed, error) {
	n := len(states)
	if len(actions) != n || len(mask) != n || len(prior) != n {
		return nil, fmt.Errorf("policy net: %d states, %d action rows, %d masks, %d priors", n, len(actions), len(mask), len(prior))
	}
	k, sw, aw := p.K, p.StateWidth, policy.ActionWidth
	rows := policyBucket(n)
	st := make([]float32, rows*sw)
	ac := make([]float32, rows*k*aw)
	pr := make([]float32, rows*k)
	mk := make([]float32, rows*k)
	for i := range n {
		if len(states[i]) != sw {
			return nil, fmt.Errorf("policy net: state %d has %d values, want %d", i, len(states[i]), sw)
		}
		if len(actions[i]) != k*aw {
			return nil, fmt.Errorf("policy net: actions %d have %d values, want %d (K=%d padded)", i, len(actions[i]), k*aw, k)
		}
		if len(mask[i]) != k || len(prior[i]) != k {
			return nil, fmt.Errorf("policy net: row %d mask/prior have %d/%d entries, want %d", i, len(mask[i]), len(prior[i]), k)
		}
		legal := 0
		for j, ok := range mask[i] {
			if ok {
				mk[i*k+j] = 1
				legal++
			}
		}
		if legal == 0 {
			return nil, fmt.Errorf("policy net: row %d has no legal action", i)
		}
		copy(st[i*sw:], states[i])
		copy(ac[i*k*aw:], actions[i])
		copy(pr[i*k:], prior[i])
	}
	for i := n; i < rows; i++ {
		mk[i*k] = 1 // padding rows: one legal action, so nothing is empty
	}
	args := []any{
		tensors.FromFlatDataAndDimensions(st, rows, sw),
		tensors.FromFlatDataAndDimensions(ac, rows*k, aw),
		tensors.FromFlatDataAndDimensions(pr, rows, k),
		tensors.FromFlatDataAndDimensions(mk, rows, k),
	}
	args = append(args, p.baseTensors()...)
	args = append(args, p.adapterTensors()...)
	return &packed{n: n, rows: rows, args: args, mask: mask}, nil
}

func (p *PolicyNet) baseTensors() []any {
	E, H, aw := p.EncoderDim, p.Hidden, policy.ActionWidth
	la := p.Base[PolicyLayerA]
	return []any{
		tensors.FromFlatDataAndDimensions(p.Base[0].W, p.StateWidth, H),
		tensors.FromFlatDataAndDimensions(p.Base[0].B, H),
		tensors.FromFlatDataAndDimensions(p.Base[1].W, H, E),
		tensors.FromFlatDataAndDimensions(p.Base[1].B, E),
		tensors.FromFlatDataAndDimensions(append([]float32(nil), la.W[:E*H]...), E, H),
		tensors.FromFlatDataAndDimensions(append([]float32(nil), la.W[E*H:]...), aw, H),
		tensors.FromFlatDataAndDimensions(la.B, H),
		tensors.FromFlatDataAndDimensions(p.Base[3].W, H, 1),
		tensors.FromFlatDataAndDimensions(p.Base[3].B, 1),
	}
}

// splitCols splits a [rows×(c1+c2)] row-major matrix into its first c1 and last c2 columns.
func splitCols(m []float32, rows, c1, c2 int) (a, b []float32) {
	a, b = make([]float32, rows*c1), make([]float32, rows*c2)
	for r := range rows {
		copy(a[r*c1:(r+1)*c1], m[r*(c1+c2):r*(c1+c2)+c1])
		copy(b[r*c2:(r+1)*c2], m[r*(c1+c2)+c1:(r+1)*(c1+c2)])
	}
	return a, b
}

func (p *PolicyNet) adapterTensors() []any {
	ad := p.Adapter
	r := ad.Rank
	L := ad.Layers
	aah, aad := splitCols(L[PolicyLayerA].A, r, p.EncoderDim, policy.ActionWidth)
	t := func(d []float32, a, b int) any { return tensors.FromFlatDataAndDimensions(d, a, b) }
	return []any{
		t(L[0].A, r, L[0].In), t(L[0].B, L[0].Out, r),
		t(L[1].A, r, L[1].In), t(L[1].B, L[1].Out, r),
		t(aah, r, p.EncoderDim), t(aad, r, policy.ActionWidth), t(L[2].B, L[2].Out, r),
		t(L[3].A, r, L[3].In), t(L[3].B, L[3].Out, r),
	}
}

func (p *PolicyNet) check() error {
	ad := p.Adapter
	if ad == nil || ad.Rank <= 0 || p.K <= 0 {
		return errors.New("policy net: not initialised")
	}
	for l, sz := range policyLayerSizes(p.StateWidth, p.Hidden, p.EncoderDim) {
		b, a := p.Base[l], ad.Layers[l]
		if b.In != sz[0] || b.Out != sz[1] || len(b.W) != sz[0]*sz[1] || len(b.B) != sz[1] ||
			a.In != sz[0] || a.Out != sz[1] || len(a.A) != ad.Rank*sz[0] || len(a.B) != sz[1]*ad.Rank {
			return fmt.Errorf("policy net: layer %d has inconsistent sizes", l)
		}
	}
	return nil
}

func policyExec(b backends.Backend, name string, fn func([]*graph.Node) []*graph.Node, args ...any) (out []*tensors.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("policy net %s: %v", name, r)
		}
	}()
	e, err := graph.NewExec(b, fn)
	if err != nil {
		return nil, fmt.Errorf("policy net %s: %w", name, err)
	}
	defer e.Finalize()
	out, err = e.Exec(args...)
	if err != nil {
		return nil, fmt.Errorf("policy net %s: %w", name, err)
	}
	return out, nil
}

func unflatten(flat []float32, n, w int) [][]float32 {
	out := make([][]float32, n)
	for i := range out {
		out[i] = flat[i*w : (i+1)*w : (i+1)*w]
	}
	return out
}

// LogProbs returns log π_θ and log π_ρ of every padded action, [B][K] (−Inf at masked positions;
// exactly 0 where a row has a single legal action), and h_ρ(s), [B][EncoderDim].
// states[b] has StateWidth values, actions[b] K·ActionWidth (policy.Pad), mask[b] and prior[b] K
// entries (prior values at masked positions are ignored). Every row needs a legal action.
func (p *PolicyNet) LogProbs(b backends.Backend, states [][]float32, actions [][]float32, mask [][]bool, prior [][]float32) (theta, rho [][]float32, h [][]float32, err error) {
	if err := p.check(); err != nil {
		return nil, nil, nil, err
	}
	if len(states) == 0 {
		return [][]float32{}, [][]float32{}, [][]float32{}, nil
	}
	pk, err := p.pack(states, actions, mask, prior)
	if err != nil {
		return nil, nil, nil, err
	}
	scale := p.Adapter.Scale()
	out, err := policyExec(b, "log-probs", func(in []*graph.Node) []*graph.Node {
		mask := graph.GreaterThan(in[inMask], graph.ScalarZero(in[inMask].Graph(), in[inMask].DType()))
		base := baseWeights(in)
		lr, hr := policyLogits(in[inStates], in[inActs], in[inPrior], base)
		lt, _ := policyLogits(in[inStates], in[inActs], in[inPrior], thetaWeights(base, in[inAdapter:inAdapter+9], scale))
		return []*graph.Node{maskedLogSoftmax(lt, mask), maskedLogSoftmax(lr, mask), hr}
	}, pk.args...)
	if err != nil {
		return nil, nil, nil, err
	}
	var flats [3][]float32
	for i := range flats {
		if flats[i], err = tensors.CopyFlatData[float32](out[i]); err != nil {
			return nil, nil, nil, fmt.Errorf("policy net log-probs: %w", err)
		}
	}
	n, k := pk.n, p.K
	theta, rho = unflatten(flats[0][:n*k], n, k), unflatten(flats[1][:n*k], n, k)
	negInf := float32(math.Inf(-1))
	for i := range n {
		for j, ok := range mask[i] {
			if !ok {
				theta[i][j], rho[i][j] = negInf, negInf
			}
		}
	}
	return theta, rho, unflatten(flats[2][:n*p.EncoderDim], n, p.EncoderDim), nil
}

// AdapterGradient returns the gradient of J = Σ_b coef[b] · log π_θ(chosen[b] | s_b) with respect
// to the adapter parameters (A and B of every layer), in the adapter's layout, and its global L2
// norm. chosen[b] indexes the padded action axis and must be legal. The base network is an
// input of the graph only: no gradient with respect to it is formed, and p is not modified.
func (p *PolicyNet) AdapterGradient(b backends.Backend, states, actions [][]float32, mask [][]bool, prior [][]float32, chosen []int, coef []float32) (grads *Adapter, norm float64, err error) {
	if err := p.check(); err != nil {
		return nil, 0, err
	}
	if len(chosen) != len(states) || len(coef) != len(states) {
		return nil, 0, fmt.Errorf("policy net gradient: %d states, %d chosen, %d coefficients", len(states), len(chosen), len(coef))
	}
	grads = newZeroPolicyNet(p.StateWidth, p.Hidden, p.EncoderDim, p.K, p.Adapter.Rank, p.Adapter.Alpha).Adapter
	if len(states) == 0 {
		return grads, 0, nil
	}
	pk, err := p.pack(states, actions, mask, prior)
	if err != nil {
		return nil, 0, err
	}
	k := p.K
	oh := make([]float32, pk.rows*k)
	cf := make([]float32, pk.rows)
	for i, c := range chosen {
		if c < 0 || c >= k || !mask[i][c] {
			return nil, 0, fmt.Errorf("policy net gradient: row %d chose %d, not a legal action", i, c)
		}
		oh[i*k+c] = 1
		cf[i] = coef[i]
	}
	args := append(pk.args, tensors.FromFlatDataAndDimensions(oh, pk.rows, k), tensors.FromFlatDataAndDimensions(cf, pk.rows))
	scale := p.Adapter.Scale()
	out, err := policyExec(b, "adapter gradient", func(in []*graph.Node) []*graph.Node {
		mask := graph.GreaterThan(in[inMask], graph.ScalarZero(in[inMask].Graph(), in[inMask].DType()))
		ad := in[inAdapter : inAdapter+9]
		lt, _ := policyLogits(in[inStates], in[inActs], in[inPrior], thetaWeights(baseWeights(in), ad, scale))
		lp := maskedLogSoftmax(lt, mask)
		picked := graph.ReduceSum(graph.Mul(lp, in[inOneHot]), 1)
		j := graph.ReduceAllSum(graph.Mul(picked, in[inCoef]))
		return graph.Gradient(j, ad...)
	}, args...)
	if err != nil {
		return nil, 0, err
	}
	flat := make([][]float32, len(out))
	for i, t := range out {
		if flat[i], err = tensors.CopyFlatData[float32](t); err != nil {
			return nil, 0, fmt.Errorf("policy net gradient: %w", err)
		}
	}
	L := &grads.Layers
	L[0].A, L[0].B, L[1].A, L[1].B = flat[0], flat[1], flat[2], flat[3]
	r, E, aw := grads.Rank, p.EncoderDim, policy.ActionWidth
	for i := range r {
		copy(L[2].A[i*(E+aw):], flat[4][i*E:(i+1)*E])
		copy(L[2].A[i*(E+aw)+E:], flat[5][i*aw:(i+1)*aw])
	}
	L[2].B, L[3].A, L[3].B = flat[6], flat[7], flat[8]
	sq := 0.0
	for l := range L {
		for _, s := range [][]float32{L[l].A, L[l].B} {
			for _, g := range s {
				sq += float64(g) * float64(g)
			}
		}
	}
	return grads, math.Sqrt(sq), nil
}

// Binary checkpoint format (little-endian):
//
//	"EVPN" | version u32 (=1) | stateWidth hidden encoderDim K rank u32 | alpha f64 |
//	base W, b of layers s1 s2 a o | adapter A, B of layers s1 s2 a o   (float32 each) |
//	CRC-32 (IEEE) u32 of everything before it.
const (
	policyNetMagic   = "EVPN"
	policyNetVersion = 1
)

func (p *PolicyNet) floatSections() []*[]float32 {
	var s []*[]float32
	for l := range p.Base {
		s = append(s, &p.Base[l].W, &p.Base[l].B)
	}
	for l := range p.Adapter.Layers {
		s = append(s, &p.Adapter.Layers[l].A, &p.Adapter.Layers[l].B)
	}
	return s
}

// MarshalBinary encodes the network (base and adapter) for checkpoints.
func (p *PolicyNet) MarshalBinary() ([]byte, error) {
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("policy net marshal: %w", err)
	}
	le := binary.LittleEndian
	var buf bytes.Buffer
	buf.WriteString(policyNetMagic)
	for _, v := range []int{policyNetVersion, p.StateWidth, p.Hidden, p.EncoderDim, p.K, p.Adapter.Rank} {
		buf.Write(le.AppendUint32(nil, uint32(v)))
	}
	buf.Write(le.AppendUint64(nil, math.Float64bits(p.Adapter.Alpha)))
	for _, s := range p.floatSections() {
		for _, f := range *s {
			buf.Write(le.AppendUint32(nil, math.Float32bits(f)))
		}
	}
	buf.Write(le.AppendUint32(nil, crc32.ChecksumIEEE(buf.Bytes())))
	return buf.Bytes(), nil
}

// UnmarshalBinary decodes what MarshalBinary wrote, rejecting anything malformed.
func (p *PolicyNet) UnmarshalBinary(data []byte) error {
	le := binary.LittleEndian
	const header = 4 + 6*4 + 8
	if len(data) < header+4 || string(data[:4]) != policyNetMagic {
		return errors.New("policy net unmarshal: not a policy-net checkpoint")
	}
	if ver := le.Uint32(data[4:]); ver != policyNetVersion {
		return fmt.Errorf("policy net unmarshal: unsupported version %d", ver)
	}
	var dims [5]int
	for i := range dims {
		dims[i] = int(le.Uint32(data[8+4*i:]))
		if dims[i] <= 0 || dims[i] > 1<<20 {
			return fmt.Errorf("policy net unmarshal: bad size %d", dims[i])
		}
	}
	alpha := math.Float64frombits(le.Uint64(data[28:]))
	if !(alpha > 0) || math.IsInf(alpha, 0) {
		return fmt.Errorf("policy net unmarshal: bad adapter alpha %v", alpha)
	}
	if crc32.ChecksumIEEE(data[:len(data)-4]) != le.Uint32(data[len(data)-4:]) {
		return errors.New("policy net unmarshal: checksum mismatch")
	}
	n := newZeroPolicyNet(dims[0], dims[1], dims[2], dims[3], dims[4], alpha)
	sections := n.floatSections()
	nFloats := 0
	for _, s := range sections {
		nFloats += len(*s)
	}
	if len(data) != header+4*nFloats+4 {
		return fmt.Errorf("policy net unmarshal: %d bytes, want %d", len(data), header+4*nFloats+4)
	}
	off := header
	for _, s := range sections {
		for i := range *s {
			(*s)[i] = math.Float32frombits(le.Uint32(data[off:]))
			off += 4
		}
	}
	*p = *n
	return nil
}
