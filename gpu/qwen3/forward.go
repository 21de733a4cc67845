package qwen3

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// Model is a Qwen3 model's weights on a backend with the graphs that run it: the same graphs on
// the pure-Go CPU backend (github.com/gomlx/compute/gobackend) and on XLA. It is safe for
// concurrent use; SetAdapter must not race with calls that run the adapter.
type Model struct {
	cfg     Config
	backend compute.Backend
	dtype   dtypes.DType
	weights []*tensors.Tensor // embed, norm, lm_head, then layerTensors per layer

	mu       sync.Mutex
	execs    map[any]*graph.Exec
	adapter  *deviceAdapter       // nil: no adapter set
	prefixes map[prefixKey]*Cache // shared prompt prefixes (Decision.Shared), by tokens and adapter

	prefills, extensions, tokens, calls atomic.Int64
}

// Options are a Model's settings.
type Options struct {
	// DType of the graphs: dtypes.Float32 (the default when zero) or dtypes.Float64 (for tests
	// against an oracle, where the backend supports it).
	DType dtypes.DType
}

// Work counts a Model's forward work: prefill calls, cached extensions (the rows of an Extend
// call given tokens: one call can extend several), the tokens they fed (padding excluded) and the
// forward calls (prefills and Extend calls).
type Work struct {
	Prefills, Extensions, Tokens, Calls int64
}

// Sub is w − o.
func (w Work) Sub(o Work) Work {
	return Work{w.Prefills - o.Prefills, w.Extensions - o.Extensions, w.Tokens - o.Tokens, w.Calls - o.Calls}
}

// Work returns the model's counters so far.
func (m *Model) Work() Work {
	return Work{m.prefills.Load(), m.extensions.Load(), m.tokens.Load(), m.calls.Load()}
}

// layerTensors are a layer's tensors on the backend: input norm, q|k|v (the three projections'
// rows stacked, one matrix product), o, q norm, k norm, post-attention norm, gate|up (stacked),
// down.
const layerTensors = 8

// ModuleNames are the projections LoRA can adapt, as PEFT's target_modules and the checkpoint
// name them, in the order the graphs take them.
var ModuleNames = []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}

// GraphDType is the graphs' dtype by name: float32 or float64 (float64 is the checks' exact path).
func GraphDType(name string) (dtypes.DType, error) {
	switch name {
	case "float32":
		return dtypes.Float32, nil
	case "float64":
		return dtypes.Float64, nil
	}
	return dtypes.InvalidDType, fmt.Errorf("qwen3: graphs in %q are not implemented (float32 or float64)", name)
}

// New puts w on backend, after Validate of cfg and a check of every tensor's shape against it.
func New(backend compute.Backend, cfg Config, w Weights, opt Options) (*Model, error) {
	dt := opt.DType
	if dt == dtypes.InvalidDType {
		dt = dtypes.Float32
	}
	if dt != dtypes.Float32 && dt != dtypes.Float64 {
		return nil, fmt.Errorf("qwen3: graphs in %s are not implemented (float32 or float64)", dt)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkWeights(cfg, w); err != nil {
		return nil, err
	}
	m := &Model{cfg: cfg, backend: backend, dtype: dt, execs: map[any]*graph.Exec{}}
	head := w.LMHead
	if head.Data == nil && cfg.TieWordEmbeddings {
		head = w.Embed
	}
	put := func(ts ...Tensor) { // in the order splitWeights reads them
		for _, t := range ts {
			m.weights = append(m.weights, m.tensor(t.Data, t.Shape...))
		}
	}
	put(w.Embed, w.Norm, head)
	for _, l := range w.Layers {
		put(l.InputNorm, stackRows(l.QProj, l.KProj, l.VProj), l.OProj, l.QNorm, l.KNorm, l.PostAttnNorm, stackRows(l.GateProj, l.UpProj), l.DownProj)
	}
	return m, nil
}

// stackRows is the matrices [out_i, in] stacked into one [Σ out_i, in].
func stackRows(ts ...Tensor) Tensor {
	out := Tensor{Shape: []int{0, ts[0].Shape[1]}}
	for _, t := range ts {
		out.Data = append(out.Data, t.Data...)
		out.Shape[0] += t.Shape[0]
	}
	return out
}

// Config is the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// DType is the graphs' floating-point type.
func (m *Model) DType() dtypes.DType { return m.dtype }

// tensor makes a host tensor of the model's dtype from float32 or float64 values.
func (m *Model) tensor(data any, dims ...int) *tensors.Tensor {
	switch x := data.(type) {
	case []float32:
		if m.dtype == dtypes.Float32 {
			return tensors.FromFlatDataAndDimensions(slices.Clone(x), dims...)
		}
		y := make([]float64, len(x))
		for i, v := range x {
			y[i] = float64(v)
		}
		return tensors.FromFlatDataAndDimensions(y, dims...)
	case []float64:
		if m.dtype == dtypes.Float64 {
			return tensors.FromFlatDataAndDimensions(slices.Clone(x), dims...)
		}
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = float32(v)
		}
		return tensors.FromFlatDataAndDimensions(y, dims...)
	}
	panic(fmt.Sprintf("qwen3: tensor of %T", data))
}

// floats copies a float tensor's values out as float64.
func floats(t *tensors.Tensor) ([]float64, error) {
	var out []float64
	err := t.ConstFlatData(func(flat any) {
		switch x := flat.(type) {
		case []float32:
			out = make([]float64, len(x))
			for i, v := range x {
				out[i] = float64(v)
			}
		case []float64:
			out = slices.Clone(x)
		}
	})
	if err == nil && out == nil && t.Size() > 0 {
		err = fmt.Errorf("qwen3: tensor of %s is not float", t.DType())
	}
	return out, err
}

// exec returns the executor of key, building it with fn on first use.
func (m *Model) exec(key any, fn func([]*graph.Node) []*graph.Node) (*graph.Exec, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.execs[key]; ok {
		return e, nil
	}
	e, err := graph.NewExec(m.backend, fn)
	if err != nil {
		return nil, err
	}
	e.SetMaxCache(-1)
	m.execs[key] = e
	return e, nil
}

// weightNodes are the base weights inside a graph.
type weightNodes struct {
	embed, norm, head *graph.Node
	layers            [][]*graph.Node // [layer][layerTensors]
}

func (m *Model) splitWeights(in []*graph.Node) (weightNodes, []*graph.Node) {
	w := weightNodes{embed: in[0], norm: in[1], head: in[2]}
	in = in[3:]
	for range m.cfg.NumHiddenLayers {
		w.layers = append(w.layers, in[:layerTensors])
		in = in[layerTensors:]
	}
	return w, in
}

// rmsNorm is Qwen3RMSNorm over the last axis: w · x / √(mean(x²) + ε).
func rmsNorm(x, w *graph.Node, eps float64) *graph.Node {
	ms := graph.ReduceAndKeep(graph.Square(x), graph.ReduceMean, -1)
	// x / √·, not Rsqrt: gomlx has no gradient of Rsqrt.
	y := graph.Div(x, graph.Sqrt(graph.AddScalar(ms, eps)))
	return graph.Mul(graph.ExpandLeftToRank(w, x.Rank()), y)
}

// linear is x Wᵀ for x [b, n, in] and W [out, in], plus s·B(A x) where the adapter has the
// projection.
func linear(x, w *graph.Node, lora *loraNodes) *graph.Node {
	return linears(x, w, []int{w.Shape().Dimensions[0]}, []*loraNodes{lora})[0]
}

// linears are the projections whose matrices w stacks ([Σ outs, in], out_i rows each) from one
// matrix product x wᵀ cut into its parts, plus s·B(A x) on the parts the adapter has.
func linears(x, w *graph.Node, outs []int, loras []*loraNodes) []*graph.Node {
	y := graph.Einsum("bni,oi->bno", x, w)
	var parts []*graph.Node
	at := 0
	for i, o := range outs {
		p := y
		if len(outs) > 1 {
			p = graph.Slice(y, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(at, at+o))
		}
		at += o
		if lo := loras[i]; lo != nil {
			ax := graph.Einsum("bni,ri->bnr", x, lo.a)
			p = graph.Add(p, graph.MulScalar(graph.Einsum("bnr,or->bno", ax, lo.b), lo.scale))
		}
		parts = append(parts, p)
	}
	return parts
}

// decoder runs the embedding and the layers on tokens [b, n] at positions [b, n]; mask [b, n, u]
// says which key columns each token attends to. With caches (2 per layer, [b, kv_heads, c,
// head_dim], zero from column offset on) the new keys and values are written into them at column
// offset and attention reads the updated caches' first u columns (u ≤ c: the used ones, bucketed);
// without (nil) attention reads the n new keys and values (u = n) and, where capacity > 0, they
// are returned as caches of capacity columns (a prefill's). It returns the final-norm hidden
// states [b, n, hidden] and the updated caches.
func (m *Model) decoder(tokens, positions, mask *graph.Node, caches []*graph.Node, offset *graph.Node, capacity int, w weightNodes, ad *adapterNodes) (*graph.Node, []*graph.Node) {
	cfg := m.cfg
	g := tokens.Graph()
	b, n := tokens.Shape().Dimensions[0], tokens.Shape().Dimensions[1]
	H, K, D := cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim
	G := H / K
	x := graph.Gather(w.embed, graph.ExpandAxes(tokens, -1)) // [b, n, hidden]
	cos, sin := m.rotary(positions)
	mask5 := graph.ExpandAxes(mask, 1, 2) // [b, 1, 1, n, c]
	negInf := graph.Infinity(g, m.dtype, -1)
	var out []*graph.Node
	for l, lw := range w.layers {
		lo := func(name string) *loraNodes { return ad.get(l, name) }
		hn := rmsNorm(x, lw[0], cfg.RMSNormEps)
		qkv := linears(hn, lw[1], []int{H * D, K * D, K * D}, []*loraNodes{lo("q_proj"), lo("k_proj"), lo("v_proj")})
		q := graph.Reshape(qkv[0], b, n, H, D)
		k := graph.Reshape(qkv[1], b, n, K, D)
		v := graph.Reshape(qkv[2], b, n, K, D)
		q, k = rmsNorm(q, lw[3], cfg.RMSNormEps), rmsNorm(k, lw[4], cfg.RMSNormEps)
		q, k = rotate(q, cos, sin), rotate(k, cos, sin)
		keys, values := graph.TransposeAllAxes(k, 0, 2, 1, 3), graph.TransposeAllAxes(v, 0, 2, 1, 3) // [b, K, n, D]
		switch {
		case caches != nil:
			ck, cv := place(caches[2*l], keys, offset), place(caches[2*l+1], values, offset)
			out = append(out, ck, cv)
			if u := mask.Shape().Dimensions[2]; u < ck.Shape().Dimensions[2] {
				ck = graph.Slice(ck, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(0, u))
				cv = graph.Slice(cv, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(0, u))
			}
			keys, values = ck, cv
		case capacity > n:
			z := graph.Zeros(g, shapeOf(m.dtype, b, K, capacity-n, D))
			out = append(out, graph.Concatenate([]*graph.Node{keys, z}, 2), graph.Concatenate([]*graph.Node{values, z}, 2))
		case capacity == n:
			out = append(out, keys, values)
		}
		qg := graph.Reshape(q, b, n, K, G, D)
		scores := graph.MulScalar(graph.Einsum("bnkgd,bkcd->bkgnc", qg, keys), 1/math.Sqrt(float64(D)))
		scores = graph.Where(graph.BroadcastToShape(mask5, scores.Shape()), scores, negInf)
		att := graph.Einsum("bkgnc,bkcd->bnkgd", graph.Softmax(scores, -1), values)
		x = graph.Add(x, linear(graph.Reshape(att, b, n, H*D), lw[2], lo("o_proj")))
		hn = rmsNorm(x, lw[5], cfg.RMSNormEps)
		im := cfg.IntermediateSize
		gu := linears(hn, lw[6], []int{im, im}, []*loraNodes{lo("gate_proj"), lo("up_proj")})
		gate, up := gu[0], gu[1]
		x = graph.Add(x, linear(graph.Mul(graph.Mul(gate, graph.Sigmoid(gate)), up), lw[7], lo("down_proj")))
	}
	return rmsNorm(x, w.norm, cfg.RMSNormEps), out
}

// attendMask is mask[b, i, c] = (valid[b, c] ∧ c ≤ offset+i) ∨ c = offset+i for new token i:
// causal over the valid columns, and every token (padding too) sees itself so that no softmax is
// empty.
func attendMask(valid *graph.Node, offset *graph.Node, n int) *graph.Node {
	g := valid.Graph()
	b, c := valid.Shape().Dimensions[0], valid.Shape().Dimensions[1]
	col := graph.Iota(g, shapeOf(dtypes.Int32, 1, n, c), 2)
	row := graph.Add(graph.Iota(g, shapeOf(dtypes.Int32, 1, n, c), 1), offset)
	causal := graph.LessOrEqual(col, row)
	self := graph.Equal(col, row)
	v := graph.BroadcastToDims(graph.ExpandAxes(valid, 1), b, n, c)
	return graph.LogicalOr(graph.LogicalAnd(v, graph.BroadcastToDims(causal, b, n, c)), graph.BroadcastToDims(self, b, n, c))
}

// maskedLogSoftmax is the log-softmax of logits over the last axis restricted to mask; masked
// entries come out as a large negative finite number (never NaN, nor in gradients).
func maskedLogSoftmax(logits, mask *graph.Node) *graph.Node {
	z := graph.Where(mask, logits, graph.Scalar(logits.Graph(), logits.DType(), -1e9))
	mx := graph.StopGradient(graph.ReduceAndKeep(z, graph.ReduceMax, -1))
	s := graph.Sub(z, mx)
	return graph.Sub(s, graph.Log(graph.ReduceAndKeep(graph.Exp(s), graph.ReduceSum, -1)))
}

// rotary is RoPE's cos and sin [b, n, 1, head_dim] at positions [b, n]: angle p·θ^(−2i/d) for
// i < d/2, repeated over both halves (HF's emb = cat(freqs, freqs)). gomlx's pos.RoPE would do
// for one sequence of positions, but it does not broadcast positions of shape [batch, seq].
func (m *Model) rotary(positions *graph.Node) (cos, sin *graph.Node) {
	D := m.cfg.HeadDim
	inv := make([]float64, D)
	for i := range D / 2 {
		inv[i] = 1 / math.Pow(m.cfg.RopeTheta, float64(2*i)/float64(D))
		inv[i+D/2] = inv[i]
	}
	g := positions.Graph()
	b, n := positions.Shape().Dimensions[0], positions.Shape().Dimensions[1]
	freq := graph.ConvertDType(graph.Const(g, inv), m.dtype)
	if m.dtype == dtypes.Float32 {
		// As HF: the inverse frequencies in float32.
		f32 := make([]float32, D)
		for i, v := range inv {
			f32[i] = float32(v)
		}
		freq = graph.Const(g, f32)
	}
	p := graph.ConvertDType(graph.Reshape(positions, b, n, 1, 1), m.dtype)
	ang := graph.Mul(p, graph.Reshape(freq, 1, 1, 1, D))
	return graph.Cos(ang), graph.Sin(ang)
}

// rotate is x·cos + rotate_half(x)·sin for x [b, n, heads, head_dim], rotate_half(x) = [−x₂, x₁]
// of x's halves (not interleaved), as HF's apply_rotary_pos_emb.
func rotate(x, cos, sin *graph.Node) *graph.Node {
	d := x.Shape().Dimensions
	D := d[3]
	x1 := graph.Slice(x, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(), graph.AxisRange(0, D/2))
	x2 := graph.Slice(x, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(), graph.AxisRange(D/2, D))
	half := graph.Concatenate([]*graph.Node{graph.Neg(x2), x1}, 3)
	c, s := graph.BroadcastToDims(cos, d...), graph.BroadcastToDims(sin, d...)
	return graph.Add(graph.Mul(x, c), graph.Mul(half, s))
}

// place writes x [b, kv_heads, n, head_dim] into cache [b, kv_heads, c, head_dim] at columns
// offset … offset+n−1, which are zero in cache (a column is written once: later extensions start
// past it, a branch starts from a cache where it is still zero). The CPU backend has no
// DynamicUpdateSlice, so the rows are added by a scatter, exact since 0 + x = x; it copies the
// cache once, no one-hot product.
func place(cache, x, offset *graph.Node) *graph.Node {
	g := x.Graph()
	d := x.Shape().Dimensions
	b, k, n := d[0], d[1], d[2]
	idx := shapeOf(dtypes.Int32, b, k, n, 1)
	col := graph.Add(graph.Iota(g, idx, 2), offset)
	indices := graph.Concatenate([]*graph.Node{graph.Iota(g, idx, 0), graph.Iota(g, idx, 1), col}, 3) // [b, k, n, 3]
	return graph.ScatterSum(cache, indices, x, true, true)
}
