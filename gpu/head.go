package gpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gomlx/gomlx/core/graph"

	"github.com/evosteer/evosteer-go/internal/seed"
)

// Head is a two-layer MLP head (METHOD.md §3.3),
//
//	y(x) = W2·GELU(x·W1 + b1) + b2,   optionally followed by a sigmoid,
//
// with the exact (erf) GELU of torch's nn.GELU(). The value head v̂ is Head{In: 36, Hidden: 32,
// Sigmoid: true} on [f; task-type one-hot]; the residual flow head b_ψ is Head{In: d_h+30,
// Hidden: 128} on [h_ρ(s); f] with its last layer zero-initialised; the two diagnostic outcome
// heads are that shape with a sigmoid.
type Head struct {
	Name       string
	In, Hidden int
	Sigmoid    bool
	W1         *Param // [In, Hidden], W1[i*Hidden+j] connects input i to unit j
	B1         *Param // [Hidden]
	W2         *Param // [Hidden, 1]
	B2         *Param // [1]
}

// NewHead builds a trainable head initialised like torch.nn.Linear (every weight and bias of a
// layer with fan-in n from U(−1/√n, 1/√n)) from a stream derived from (seed, name); zeroLast
// sets the last layer to zero, so the head starts at exactly 0 (or ½ with the sigmoid).
func NewHead(name string, in, hidden int, sigmoid, zeroLast bool, runSeed uint64) *Head {
	if in <= 0 || hidden <= 0 {
		panic(fmt.Sprintf("gpu.NewHead %s: bad sizes %d→%d", name, in, hidden))
	}
	h := &Head{Name: name, In: in, Hidden: hidden, Sigmoid: sigmoid,
		W1: newParam(name+"/w1", true, in, hidden), B1: newParam(name+"/b1", true, hidden),
		W2: newParam(name+"/w2", true, hidden, 1), B2: newParam(name+"/b2", true, 1)}
	s := seed.Derive(runSeed, "gpu/head", name)
	r := rand.New(rand.NewPCG(s, s^0x68656164))
	h.W1.uniform(r, in)
	h.B1.uniform(r, in)
	if !zeroLast {
		h.W2.uniform(r, hidden)
		h.B2.uniform(r, hidden)
	}
	return h
}

// Params lists the head's parameters in graph order (W1, b1, W2, b2).
func (h *Head) Params() []*Param { return []*Param{h.W1, h.B1, h.W2, h.B2} }

// Clone is a deep copy (weights and moments): a published snapshot that later fits leave alone.
func (h *Head) Clone() *Head {
	c := *h
	ps := cloneParams(h.Params())
	c.W1, c.B1, c.W2, c.B2 = ps[0], ps[1], ps[2], ps[3]
	return &c
}

func (h *Head) check() error {
	for _, p := range h.Params() {
		if err := p.check(); err != nil {
			return fmt.Errorf("head %s: %w", h.Name, err)
		}
	}
	if h.W1.Dims[0] != h.In || h.W1.Dims[1] != h.Hidden || h.B1.Dims[0] != h.Hidden || h.W2.Dims[0] != h.Hidden {
		return fmt.Errorf("head %s: parameters do not match %d→%d", h.Name, h.In, h.Hidden)
	}
	return nil
}

// key names the head's graphs: everything its forward closes over.
func (h *Head) key() string { return fmt.Sprintf("%d-%d-%v", h.In, h.Hidden, h.Sigmoid) }

// headForward is the head on x [N, In] with parameter nodes w (W1, b1, W2, b2); it returns [N].
func headForward(x *graph.Node, w []*graph.Node, sigmoid bool) *graph.Node {
	hid := gelu(graph.Add(MatMulCustomGrad(x, w[0]), graph.InsertAxes(w[1], 0)))
	y := graph.Add(MatMulCustomGrad(hid, w[2]), graph.InsertAxes(w[3], 0)) // [N, 1]
	y = graph.Reshape(y, x.Shape().Dimensions[0])
	if sigmoid {
		y = graph.Logistic(y)
	}
	return y
}

// packRows flattens rows of width w into a zero-padded [bucket(len), w] buffer.
func packRows(what string, rows [][]float32, w, n int) ([]float32, error) {
	flat := make([]float32, n*w)
	for i, r := range rows {
		if len(r) != w {
			return nil, fmt.Errorf("%s: row %d has %d values, want %d", what, i, len(r), w)
		}
		copy(flat[i*w:], r)
	}
	return flat, nil
}

// Predict returns the head's output for every row of x (In values each): plain-Go kernels on
// engines that run natively (each row computed from its own input alone), else a graph.
func (h *Head) Predict(e *Engine, x [][]float32) ([]float32, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	if len(x) == 0 {
		return []float32{}, nil
	}
	return e.kernels().predict(h, e, x)
}

// predict is Predict on the graph path.
func (graphKernels) predict(h *Head, e *Engine, x [][]float32) ([]float32, error) {
	n := bucket(len(x), 64)
	flat, err := packRows("head "+h.Name, x, h.In, n)
	if err != nil {
		return nil, err
	}
	sig := h.Sigmoid
	out, err := e.run("head/predict/"+h.key(), func(in []*graph.Node) []*graph.Node {
		return []*graph.Node{headForward(in[0], in[1:5], sig)}
	}, append([]any{matrix(flat, n, h.In)}, paramTensors(h.Params())...)...)
	if err != nil {
		return nil, fmt.Errorf("head %s: %w", h.Name, err)
	}
	return out[0][:len(x)], nil
}

// mse is FitMSE's pass on the graph path: call(grad) returns each head's MSE, then (grad) the
// gradient of their sum with respect to params.
func (graphKernels) mse(e *Engine, heads []*Head, params []*Param, x [][]float32, y []float32) (func(grad bool) ([][]float32, error), error) {
	n := bucket(len(x), 64)
	flat, err := packRows("fit", x, heads[0].In, n)
	if err != nil {
		return nil, err
	}
	yPad, mask := make([]float32, n), make([]float32, n)
	copy(yPad, y)
	for i := range y {
		mask[i] = 1
	}
	nh, sig := len(heads), heads[0].Sigmoid
	key := fmt.Sprintf("head/mse-grad/%s/%d", heads[0].key(), nh)
	graphFn := func(in []*graph.Node) []*graph.Node {
		x, y, mask := in[0], in[1], in[2]
		g := x.Graph()
		count := graph.Max(graph.ReduceAllSum(mask), graph.ScalarOne(g, mask.DType()))
		var losses []*graph.Node
		total := graph.ScalarZero(g, mask.DType())
		for k := range nh {
			d := graph.Sub(headForward(x, in[3+4*k:7+4*k], sig), y)
			l := graph.Div(graph.ReduceAllSum(graph.Mul(mask, graph.Mul(d, d))), count)
			losses = append(losses, l)
			total = graph.Add(total, l)
		}
		return append(losses, graph.Gradient(total, in[3:3+4*nh]...)...)
	}
	// Each call sends the current parameters; the data tensors are rebuilt per call because
	// Engine.run frees its inputs. The gradient is computed whatever grad says.
	return func(bool) ([][]float32, error) {
		args := append([]any{matrix(flat, n, heads[0].In), matrix(yPad, n), matrix(mask, n)}, paramTensors(params)...)
		return e.run(key, graphFn, args...)
	}, nil
}

// FitMSE takes steps AdamW steps on weight × the sum over heads of the MSE between head(x) and
// y, all heads sharing x and y and one clip group (group.Params must be the heads' parameters in
// order). Each step clips the joint (weighted) gradient to norm clip; weight 0 takes no step. It
// returns each head's MSE before the first step and after the last, and the gradient norm of the
// last step before clipping.
func FitMSE(e *Engine, heads []*Head, group *ClipGroup, clip, weight float64, x [][]float32, y []float32, steps int) (before, after []float64, gradNorm float64, err error) {
	switch {
	case len(heads) == 0:
		return nil, nil, 0, errors.New("fit: no heads")
	case len(x) != len(y):
		return nil, nil, 0, fmt.Errorf("fit: %d rows but %d labels", len(x), len(y))
	case len(x) == 0:
		return nil, nil, 0, errors.New("fit: no rows")
	case steps < 0:
		return nil, nil, 0, fmt.Errorf("fit: negative steps %d", steps)
	}
	var params []*Param
	for _, h := range heads {
		if err := h.check(); err != nil {
			return nil, nil, 0, err
		}
		if h.key() != heads[0].key() {
			return nil, nil, 0, fmt.Errorf("fit: heads %s and %s differ in shape", heads[0].Name, h.Name)
		}
		params = append(params, h.Params()...)
	}
	if len(group.Params) != len(params) {
		return nil, nil, 0, fmt.Errorf("fit: clip group %s holds %d parameters, the heads %d", group.Name, len(group.Params), len(params))
	}
	for i := range params {
		if group.Params[i] != params[i] {
			return nil, nil, 0, fmt.Errorf("fit: clip group %s does not hold %s at %d", group.Name, params[i].Name, i)
		}
	}
	call, err := e.kernels().mse(e, heads, params, x, y)
	if err != nil {
		return nil, nil, 0, err
	}
	nh := len(heads)
	losses := func(out [][]float32) []float64 {
		l := make([]float64, nh)
		for k := range nh {
			l[k] = float64(out[k][0])
		}
		return l
	}
	if weight == 0 {
		steps = 0
	}
	out, err := call(steps > 0)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("fit %s: %w", group.Name, err)
	}
	before = losses(out)
	for s := range steps {
		if s > 0 {
			if out, err = call(true); err != nil {
				return nil, nil, 0, fmt.Errorf("fit %s step %d: %w", group.Name, s, err)
			}
		}
		if weight != 1 {
			for _, g := range out[nh:] {
				for i := range g {
					g[i] *= float32(weight)
				}
			}
		}
		if gradNorm, err = group.Apply(out[nh:], clip, nil); err != nil {
			return nil, nil, 0, err
		}
	}
	if steps == 0 {
		return before, before, 0, nil
	}
	if out, err = call(false); err != nil {
		return nil, nil, 0, fmt.Errorf("fit %s: %w", group.Name, err)
	}
	return before, losses(out), gradNorm, nil
}

func gelu(x *graph.Node) *graph.Node {
	return graph.Mul(x, graph.MulScalar(graph.AddScalar(graph.Erf(graph.DivScalar(x, math.Sqrt2)), 1), 0.5))
}
