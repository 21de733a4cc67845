package gpu

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/gomlx/gomlx/core/graph"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/seed"
)

// PolicyNet is the compact orchestrator policy (METHOD.md §3.5). The frozen base network is
//
//	h(s)   = N(GELU(N(GELU(N(s)·W_s1 + b_s1))·W_s2 + b_s2))              h_ρ(s), EncoderDim wide
//	z(s,a) = GELU(h·W_ah + N(d_a)·W_ad + b_a)·w_o + b_o
//
// with N(x) = x/√(mean(x²) + 1e-6) the RMS normalisation (no gain), the exact (erf) GELU, and the
// action layer's weight split into the rows that read h and the rows that read the action
// descriptor d_a, so h is multiplied once per state. θ replaces every base weight W [in, out] by
// W + (α/r)·Aᵀ·Bᵀ with the adapter's A [r, in] and B [out, r] (PEFT's LoRA layout; the action
// layer's A is split like its weight). The reference prior's logit p(s,a) is an input, and
//
//	logits_ρ = p,   logits_θ = p + z_θ(s,a) − z_base(s,a),
//
// so ρ is the calibrated prior exactly and θ's departure from it is what the adapter changes in a
// random, nonzero base network, as LoRA changes a pretrained one. Two choices make the adapter
// learnable (measured on the exact world, internal/exact):
//   - the base output layer w_o is random, not zero: with w_o = 0 every hidden adapter's gradient
//     is scaled by the output adapter's tiny product, and AdamW turns those noisy gradients into
//     full-size steps, a random walk;
//   - every layer reads RMS-normalised inputs, so pre-activations are O(1), where GELU bends and
//     the state and action terms interact; with the raw inputs they are ~0.1, GELU is nearly
//     linear there and the state term cancels in the softmax.
//
// log π(a|s) is the log-softmax of the logits over the legal set, exactly 0 for a single legal
// action. Because B = 0 at initialisation, z_θ = z_base bit for bit and π_θ = π_ρ = softmax(p) at
// step 0.
//
// Only the adapter is trainable; the base is an input of every graph and is never
// differentiated or changed.
type PolicyNet struct {
	StateWidth, Hidden, EncoderDim int
	MaxLegal                       int // the legal-action axis is padded to at most this
	Rank                           int
	Alpha                          float64
	Base                           []*Param // Ws1 bs1 Ws2 bs2 Wah Wad ba wo bo (frozen)
	Adapter                        []*Param // As1 Bs1 As2 Bs2 Aah Aad Ba Ao Bo (trainable)

	mergeMu     sync.Mutex
	mergedCache *mergedTheta // θ's effective weights for scoreNative (merged)
}

// Indices into Base and Adapter.
const (
	baseWs1, baseBs1, baseWs2, baseBs2, baseWah, baseWad, baseBa, baseWo, baseBo = 0, 1, 2, 3, 4, 5, 6, 7, 8
	adAs1, adBs1, adAs2, adBs2, adAah, adAad, adBa, adAo, adBo                   = 0, 1, 2, 3, 4, 5, 6, 7, 8
)

// NewPolicyNet builds the network for states of stateWidth values, deterministically from the
// run seed: base weights and biases of a layer with fan-in n from U(−1/√n, 1/√n)
// (torch.nn.Linear), the output bias zero (it cancels in the softmax); adapter A from
// U(−1/√in, 1/√in) (PEFT's LoRA init) and B = 0.
func NewPolicyNet(cfg config.Policy, stateWidth int, runSeed uint64) *PolicyNet {
	if stateWidth <= 0 || cfg.Hidden <= 0 || cfg.EncoderDim <= 0 || cfg.MaxLegalActions <= 1 ||
		cfg.AdapterRank <= 0 || !(cfg.AdapterAlpha > 0) {
		panic(fmt.Sprintf("gpu.NewPolicyNet: bad sizes (state %d, %+v)", stateWidth, cfg))
	}
	S, H, E, A, r := stateWidth, cfg.Hidden, cfg.EncoderDim, policy.ActionWidth, cfg.AdapterRank
	p := &PolicyNet{StateWidth: S, Hidden: H, EncoderDim: E, MaxLegal: cfg.MaxLegalActions, Rank: r, Alpha: cfg.AdapterAlpha}
	b := func(name string, dims ...int) *Param { return newParam("policy/base/"+name, false, dims...) }
	a := func(name string, dims ...int) *Param { return newParam("policy/adapter/"+name, true, dims...) }
	p.Base = []*Param{b("s1/w", S, H), b("s1/b", H), b("s2/w", H, E), b("s2/b", E),
		b("a/w_h", E, H), b("a/w_d", A, H), b("a/b", H), b("o/w", H, 1), b("o/b", 1)}
	p.Adapter = []*Param{a("s1/A", r, S), a("s1/B", H, r), a("s2/A", r, H), a("s2/B", E, r),
		a("a/A_h", r, E), a("a/A_d", r, A), a("a/B", H, r), a("o/A", r, H), a("o/B", 1, r)}

	s := seed.Derive(runSeed, "gpu/policy", "base")
	rb := rand.New(rand.NewPCG(s, s^0x62617365))
	for _, l := range []struct{ i, fanIn int }{{baseWs1, S}, {baseBs1, S}, {baseWs2, H}, {baseBs2, H}, {baseWah, E + A}, {baseWad, E + A}, {baseBa, E + A}, {baseWo, H}} {
		p.Base[l.i].uniform(rb, l.fanIn)
	}
	s = seed.Derive(runSeed, "gpu/policy", "adapter")
	ra := rand.New(rand.NewPCG(s, s^0x6c6f7261))
	for _, l := range []struct{ i, fanIn int }{{adAs1, S}, {adAs2, H}, {adAah, E + A}, {adAad, E + A}, {adAo, H}} {
		p.Adapter[l.i].uniform(ra, l.fanIn)
	}
	return p
}

// Scale is α/r, the factor on the adapter's product.
func (p *PolicyNet) Scale() float64 { return p.Alpha / float64(p.Rank) }

// Params lists every block, base first.
func (p *PolicyNet) Params() []*Param { return append(append([]*Param{}, p.Base...), p.Adapter...) }

// key names the graphs of this architecture: everything their closures read.
func (p *PolicyNet) key() string {
	return fmt.Sprintf("%d-%d-%d-%d-%g", p.StateWidth, p.Hidden, p.EncoderDim, p.Rank, p.Scale())
}

func (p *PolicyNet) check() error {
	if len(p.Base) != 9 || len(p.Adapter) != 9 {
		return errors.New("policy net: not initialised")
	}
	for _, q := range p.Params() {
		if err := q.check(); err != nil {
			return fmt.Errorf("policy net: %w", err)
		}
	}
	if p.Base[baseWs1].Dims[0] != p.StateWidth || p.Base[baseWs1].Dims[1] != p.Hidden || p.Base[baseWah].Dims[0] != p.EncoderDim ||
		p.Base[baseWad].Dims[0] != policy.ActionWidth || p.Adapter[adAs1].Dims[0] != p.Rank {
		return errors.New("policy net: parameters do not match the declared sizes")
	}
	return nil
}

// MatMulCustomGrad returns x·w for x [N, in] and w [in, out] with a hand-supplied gradient
// (dx = v·wᵀ, dw = xᵀ·v), avoiding gomlx's DotGeneral autodiff, which on simplego materialises
// [N, in, out] tensors (ARCHITECTURE.md §10). The value is graph.Dot's; the gradient reaches x and
// w through custom-gradient identities on them, fed with the adjoint of the product, which a
// custom-gradient identity on the product captures first (reverse autodiff visits nodes in
// decreasing creation order).
func MatMulCustomGrad(x, w *graph.Node) *graph.Node {
	var vy *graph.Node // adjoint of the product, captured during the reverse pass
	xi := graph.IdentityWithCustomGradient(x, func(_, _ *graph.Node) *graph.Node {
		return graph.DotProduct(vy, graph.Transpose(w, 0, 1))
	})
	wi := graph.IdentityWithCustomGradient(w, func(_, _ *graph.Node) *graph.Node {
		return graph.DotProduct(graph.Transpose(x, 0, 1), vy)
	})
	y := graph.DotProduct(graph.StopGradient(x), graph.StopGradient(w))
	// A zero that depends on xi and wi, so the reverse pass visits them; its own gradient is
	// discarded by their custom gradients.
	link := graph.MulScalar(graph.Add(graph.ReduceAllSum(xi), graph.ReduceAllSum(wi)), 0)
	y = graph.Add(y, link)
	return graph.IdentityWithCustomGradient(y, func(_, v *graph.Node) *graph.Node {
		vy = v
		return v
	})
}

// thetaWeights adds (α/r)·Aᵀ·Bᵀ to every base weight; base and adapter are the 9-node lists.
func thetaWeights(base, ad []*graph.Node, scale float64) []*graph.Node {
	delta := func(a, b *graph.Node) *graph.Node {
		return graph.MulScalar(MatMulCustomGrad(graph.Transpose(a, 0, 1), graph.Transpose(b, 0, 1)), scale)
	}
	t := append([]*graph.Node{}, base...)
	t[baseWs1] = graph.Add(base[baseWs1], delta(ad[adAs1], ad[adBs1]))
	t[baseWs2] = graph.Add(base[baseWs2], delta(ad[adAs2], ad[adBs2]))
	t[baseWah] = graph.Add(base[baseWah], delta(ad[adAah], ad[adBa]))
	t[baseWad] = graph.Add(base[baseWad], delta(ad[adAad], ad[adBa]))
	t[baseWo] = graph.Add(base[baseWo], delta(ad[adAo], ad[adBo]))
	return t
}

// rmsNorm is N(x) = x/√(mean(x²) + 1e-6) along the last axis; an all-zero row stays zero.
func rmsNorm(x *graph.Node) *graph.Node {
	ms := graph.ReduceAndKeep(graph.Square(x), graph.ReduceMean, -1)
	return graph.Div(x, graph.Sqrt(graph.AddScalar(ms, 1e-6))) // Rsqrt has no gradient in gomlx
}

// encode is the state encoder h [N, E] on states [N, S] with weights w.
func encode(states *graph.Node, w []*graph.Node) *graph.Node {
	h1 := gelu(graph.Add(MatMulCustomGrad(rmsNorm(states), w[baseWs1]), graph.InsertAxes(w[baseBs1], 0)))
	return rmsNorm(gelu(graph.Add(MatMulCustomGrad(rmsNorm(h1), w[baseWs2]), graph.InsertAxes(w[baseBs2], 0))))
}

// actionScores returns z(s,a) [N, K] and h [N, E] with weights w; acts is [N·K, ActionWidth] and
// k the legal-action axis.
func actionScores(states, acts *graph.Node, k int, w []*graph.Node) (z, h *graph.Node) {
	n := states.Shape().Dimensions[0]
	hid := w[baseBa].Shape().Dimensions[0]
	h = encode(states, w)
	ph := graph.Add(MatMulCustomGrad(h, w[baseWah]), graph.InsertAxes(w[baseBa], 0)) // [N, H]
	pd := MatMulCustomGrad(rmsNorm(acts), w[baseWad])                                // [N·K, H]
	pre := graph.Add(graph.Reshape(pd, n, k, hid), graph.Reshape(ph, n, 1, hid))
	a := gelu(graph.Reshape(pre, n*k, hid))
	z = graph.Add(MatMulCustomGrad(a, w[baseWo]), graph.InsertAxes(w[baseBo], 0)) // [N·K, 1]
	return graph.Reshape(z, n, k), h
}

// thetaLogits returns π_θ's logits p + z_θ − z_base [N, K] for the base and adapter nodes, and
// h_ρ(s) [N, E], which the base pass computes anyway.
func thetaLogits(states, acts, prior *graph.Node, base, ad []*graph.Node, scale float64) (logits, h *graph.Node) {
	k := prior.Shape().Dimensions[1]
	zt, _ := actionScores(states, acts, k, thetaWeights(base, ad, scale))
	zb, h := actionScores(states, acts, k, base)
	return graph.Add(prior, graph.Sub(zt, zb)), h
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

// PolicyRow is the network's input for one decision, as the rollout stores it: the state vector
// (policy_input), one descriptor per legal action (action_inputs, ActionWidth values each) and
// the reference prior's logit of each legal action (prior_logits).
type PolicyRow struct {
	State   []float32
	Actions []float32
	Prior   []float32
	// Text is the decision as the language-model policy reads it (nil for the compact network,
	// which ignores it).
	Text *PolicyText
}

// Legal is the number of legal actions of the row.
func (r PolicyRow) Legal() int { return len(r.Prior) }

// policyInputs are the padded graph inputs of a batch: rows padded to a power-of-two bucket (at
// least 8) and the legal-action axis to a power-of-two K (at least 16, at most MaxLegal), so one
// compiled graph serves many batches. Padding rows get one legal action.
type policyInputs struct {
	n, rows, k              int
	states, acts, prior, mk []float32
}

func (p *PolicyNet) pack(batch []PolicyRow) (*policyInputs, error) {
	maxLegal, err := p.checkRows(batch)
	if err != nil {
		return nil, err
	}
	in := &policyInputs{n: len(batch), rows: bucket(len(batch), 8), k: min(bucket(maxLegal, 16), p.MaxLegal)}
	sw, aw, k := p.StateWidth, policy.ActionWidth, in.k
	in.states = make([]float32, in.rows*sw)
	in.acts = make([]float32, in.rows*k*aw)
	in.prior = make([]float32, in.rows*k)
	in.mk = make([]float32, in.rows*k)
	for i, r := range batch {
		copy(in.states[i*sw:], r.State)
		copy(in.acts[i*k*aw:], r.Actions)
		copy(in.prior[i*k:], r.Prior)
		for j := range r.Legal() {
			in.mk[i*k+j] = 1
		}
	}
	for i := in.n; i < in.rows; i++ {
		in.mk[i*k] = 1
	}
	return in, nil
}

// checkRows checks every row's sizes and returns the largest legal count.
func (p *PolicyNet) checkRows(batch []PolicyRow) (int, error) {
	maxLegal := 1
	for i, r := range batch {
		if r.Legal() < 1 {
			return 0, fmt.Errorf("policy net: row %d has no legal action", i)
		}
		if len(r.State) != p.StateWidth {
			return 0, fmt.Errorf("policy net: row %d: state has %d values, want %d", i, len(r.State), p.StateWidth)
		}
		if len(r.Actions) != r.Legal()*policy.ActionWidth {
			return 0, fmt.Errorf("policy net: row %d: %d action values for %d legal actions of width %d", i, len(r.Actions), r.Legal(), policy.ActionWidth)
		}
		maxLegal = max(maxLegal, r.Legal())
	}
	if maxLegal > p.MaxLegal {
		return 0, fmt.Errorf("policy net: a decision has %d legal actions, more than policy.max_legal_actions = %d", maxLegal, p.MaxLegal)
	}
	return maxLegal, nil
}

func (in *policyInputs) tensors(sw int) []any {
	return []any{
		matrix(in.states, in.rows, sw), matrix(in.acts, in.rows*in.k, policy.ActionWidth),
		matrix(in.prior, in.rows, in.k), matrix(in.mk, in.rows, in.k),
	}
}

// Scores are the network's outputs for a batch of decisions.
type Scores struct {
	Theta, Rho [][]float32 // log π_θ and log π_ρ of each legal action, per row
	H          [][]float32 // h_ρ(s), EncoderDim per row
	// Tokens are the token ids the causal-LM policy fed its model for each row (prefills and
	// extensions of both θ and ρ); nil for the network.
	Tokens []int64
}

// scoreChunk is the most decisions one graph call scores: it bounds the [rows·K, hidden]
// intermediates.
const scoreChunk = 256

// Score returns log π_θ, log π_ρ over each row's legal actions and h_ρ(s). Rows are scored in
// chunks of similar legal counts (a stable sort by count), so each chunk pads to a small K.
func (p *PolicyNet) Score(e *Engine, batch []PolicyRow) (*Scores, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return e.kernels().score(p, e, batch)
}

// score is Score on the graph path.
func (graphKernels) score(p *PolicyNet, e *Engine, batch []PolicyRow) (*Scores, error) {
	s := &Scores{Theta: make([][]float32, len(batch)), Rho: make([][]float32, len(batch)), H: make([][]float32, len(batch))}
	order := make([]int, len(batch))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(batch[a].Legal(), batch[b].Legal()) })
	for lo := 0; lo < len(order); lo += scoreChunk {
		idx := order[lo:min(lo+scoreChunk, len(order))]
		chunk := make([]PolicyRow, len(idx))
		for k, i := range idx {
			chunk[k] = batch[i]
		}
		if err := p.scoreChunk(e, chunk, idx, s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// scoreChunk scores one chunk; row k of the chunk is row idx[k] of the result.
func (p *PolicyNet) scoreChunk(e *Engine, chunk []PolicyRow, idx []int, s *Scores) error {
	in, err := p.pack(chunk)
	if err != nil {
		return err
	}
	scale := p.Scale()
	args := append(in.tensors(p.StateWidth), paramTensors(p.Params())...)
	out, err := e.run("policy/score/"+p.key(), func(x []*graph.Node) []*graph.Node {
		mask := graph.GreaterThan(x[3], graph.ScalarZero(x[3].Graph(), x[3].DType()))
		base, ad := x[4:13], x[13:22]
		lt, h := thetaLogits(x[0], x[1], x[2], base, ad, scale)
		return []*graph.Node{maskedLogSoftmax(lt, mask), maskedLogSoftmax(x[2], mask), h}
	}, args...)
	if err != nil {
		return fmt.Errorf("policy net: %w", err)
	}
	E := p.EncoderDim
	for k, r := range chunk {
		i := idx[k]
		s.Theta[i] = out[0][k*in.k : k*in.k+r.Legal() : k*in.k+r.Legal()]
		s.Rho[i] = out[1][k*in.k : k*in.k+r.Legal() : k*in.k+r.Legal()]
		s.H[i] = out[2][k*E : (k+1)*E : (k+1)*E]
	}
	return nil
}
