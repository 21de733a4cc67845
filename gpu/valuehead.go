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
)

// ValueHead is the runtime value head v̂ (design §6, reference §3.3–3.4):
//
//	v̂(x) = sigmoid(W2 · GELU(x·W1 + b1) + b2),   x = [30 features; task-type one-hot]
//
// with GELU the exact (erf) form, as gomlx's activations.Gelu and PyTorch's nn.GELU() define it.
// Weights live in plain float32 slices on the Go side, together with their AdamW moments and
// step count, so a head can be copied (Snapshot), checkpointed (MarshalBinary) and run on any
// gomlx backend. Each Predict/Fit call builds its graph on the backend it is given.
type ValueHead struct {
	Inputs, Hidden int
	W1             []float32 // [Inputs*Hidden], row-major: W1[i*Hidden+j] connects input i to unit j
	B1             []float32 // [Hidden]
	W2             []float32 // [Hidden]
	B2             float32
	// AdamW state: first (M*) and second (V*) moments, same layout as the weights.
	MW1, MB1, MW2 []float32
	MB2           float32
	VW1, VB1, VW2 []float32
	VB2           float32
	Step          uint64 // AdamW steps taken (bias correction uses Step after increment)

	lastGradNorm float64 // pre-clip gradient norm of the last Fit step (for tests/diagnostics)
}

// valueHeadSeedStream separates the value head's random stream from other users of the seed.
const valueHeadSeedStream = 0x76686561645f7631 // "vhead_v1"

// NewValueHead returns a head with inputs inputs and cfg.Hidden hidden units (32 when unset),
// initialised deterministically from seed like torch.nn.Linear: every weight and bias of a
// layer with fan-in n is drawn from U(−1/√n, 1/√n). AdamW moments start at zero.
func NewValueHead(cfg config.ValueHead, inputs int, seed uint64) *ValueHead {
	hidden := cfg.Hidden
	if hidden <= 0 {
		hidden = 32
	}
	if inputs <= 0 {
		panic(fmt.Sprintf("gpu.NewValueHead: inputs must be positive, got %d", inputs))
	}
	v := newZeroValueHead(inputs, hidden)
	r := rand.New(rand.NewPCG(seed, valueHeadSeedStream))
	uni := func(dst []float32, fanIn int) {
		bound := 1 / math.Sqrt(float64(fanIn))
		for i := range dst {
			dst[i] = float32((2*r.Float64() - 1) * bound)
		}
	}
	uni(v.W1, inputs)
	uni(v.B1, inputs)
	uni(v.W2, hidden)
	b2 := []float32{0}
	uni(b2, hidden)
	v.B2 = b2[0]
	return v
}

func newZeroValueHead(inputs, hidden int) *ValueHead {
	return &ValueHead{
		Inputs: inputs, Hidden: hidden,
		W1: make([]float32, inputs*hidden), B1: make([]float32, hidden), W2: make([]float32, hidden),
		MW1: make([]float32, inputs*hidden), MB1: make([]float32, hidden), MW2: make([]float32, hidden),
		VW1: make([]float32, inputs*hidden), VB1: make([]float32, hidden), VW2: make([]float32, hidden),
	}
}

// Snapshot returns a deep copy (weights, moments and step): the frozen head published for the
// next batch's rollouts. Later fits of v do not change it.
func (v *ValueHead) Snapshot() *ValueHead {
	c := *v
	for _, p := range []*[]float32{&c.W1, &c.B1, &c.W2, &c.MW1, &c.MB1, &c.MW2, &c.VW1, &c.VB1, &c.VW2} {
		*p = append([]float32(nil), (*p)...)
	}
	return &c
}

// valueHeadBucket pads a batch of n rows to one of a few fixed sizes (64, 128, 256, …) so a
// compiled graph is reused across calls and an Exec never sees more than a handful of shapes.
func valueHeadBucket(n int) int {
	b := 64
	for b < n {
		b *= 2
	}
	return b
}

// packRows flattens x into a zero-padded [rows, inputs] buffer, checking every row's width.
func (v *ValueHead) packRows(x [][]float32, rows int) ([]float32, error) {
	flat := make([]float32, rows*v.Inputs)
	for i, row := range x {
		if len(row) != v.Inputs {
			return nil, fmt.Errorf("value head: row %d has %d values, want %d", i, len(row), v.Inputs)
		}
		copy(flat[i*v.Inputs:], row)
	}
	return flat, nil
}

// valueHeadForward builds sigmoid(GELU(x·W1 + b1)·W2 + b2) for x [N, in]; it returns [N].
func valueHeadForward(x, w1, b1, w2, b2 *graph.Node) *graph.Node {
	h := graph.Add(graph.Dot(x, w1), graph.InsertAxes(b1, 0))
	// Exact GELU, as activations.Gelu: x·½·(1 + erf(x/√2)).
	h = graph.Mul(h, graph.MulScalar(graph.AddScalar(graph.Erf(graph.DivScalar(h, math.Sqrt2)), 1), 0.5))
	return graph.Logistic(graph.Add(graph.Dot(h, w2), b2))
}

// runExec builds a one-off Exec for fn, runs it on args and returns the outputs, turning gomlx
// panics into errors.
func runExec(b backends.Backend, name string, fn func([]*graph.Node) []*graph.Node, args ...any) (out []*tensors.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("value head %s: %v", name, r)
		}
	}()
	e, err := graph.NewExec(b, fn)
	if err != nil {
		return nil, fmt.Errorf("value head %s: %w", name, err)
	}
	defer e.Finalize()
	out, err = e.Exec(args...)
	if err != nil {
		return nil, fmt.Errorf("value head %s: %w", name, err)
	}
	return out, nil
}

// weightTensors returns the four weight tensors in graph order (W1, b1, W2, b2).
func (v *ValueHead) weightTensors() []any {
	return []any{
		tensors.FromFlatDataAndDimensions(v.W1, v.Inputs, v.Hidden),
		tensors.FromFlatDataAndDimensions(v.B1, v.Hidden),
		tensors.FromFlatDataAndDimensions(v.W2, v.Hidden),
		tensors.FromScalar(v.B2),
	}
}

// Predict returns v̂ for every row of x (each of v.Inputs values), in (0, 1).
func (v *ValueHead) Predict(b backends.Backend, x [][]float32) ([]float32, error) {
	if len(x) == 0 {
		return []float32{}, nil
	}
	rows := valueHeadBucket(len(x))
	flat, err := v.packRows(x, rows)
	if err != nil {
		return nil, err
	}
	args := append(v.weightTensors(), tensors.FromFlatDataAndDimensions(flat, rows, v.Inputs))
	out, err := runExec(b, "predict", func(in []*graph.Node) []*graph.Node {
		return []*graph.Node{valueHeadForward(in[4], in[0], in[1], in[2], in[3])}
	}, args...)
	if err != nil {
		return nil, err
	}
	p, err := tensors.CopyFlatData[float32](out[0])
	if err != nil {
		return nil, err
	}
	return p[:len(x)], nil
}

// Fit takes steps full-batch AdamW steps on the MSE between v̂(x) and y, each with the gradient
// clipped to global norm opt.GradClip (no clip when ≤ 0), using the heads group's settings:
// lr opt.HeadsLR, β1 opt.HeadsBeta1, β2 opt.Beta2, ε opt.Epsilon and decoupled weight decay
// opt.WeightDecay (applied to every weight and bias, as torch.optim.AdamW's default group).
// The update is torch.optim.AdamW's: p ← p(1 − lr·wd); m ← β1m + (1−β1)g; v ← β2v + (1−β2)g²;
// p ← p − lr·(m/(1−β1ᵗ)) / (√(v/(1−β2ᵗ)) + ε).
//
// It returns the MSE of the head on (x, y) before the first and after the last step.
func (v *ValueHead) Fit(b backends.Backend, opt config.Optimizer, x [][]float32, y []float32, steps int) (lossBefore, lossAfter float64, err error) {
	if len(x) != len(y) {
		return 0, 0, fmt.Errorf("value head fit: %d rows but %d labels", len(x), len(y))
	}
	if len(x) == 0 {
		return 0, 0, errors.New("value head fit: no rows")
	}
	if steps < 0 {
		return 0, 0, fmt.Errorf("value head fit: negative steps %d", steps)
	}
	rows := valueHeadBucket(len(x))
	flat, err := v.packRows(x, rows)
	if err != nil {
		return 0, 0, err
	}
	yPad := make([]float32, rows)
	mask := make([]float32, rows)
	copy(yPad, y)
	for i := range y {
		mask[i] = 1
	}
	mse := func() (float64, error) {
		p, err := v.Predict(b, x)
		if err != nil {
			return 0, err
		}
		s := 0.0
		for i := range p {
			d := float64(p[i]) - float64(y[i])
			s += d * d
		}
		return s / float64(len(p)), nil
	}
	if lossBefore, err = mse(); err != nil {
		return 0, 0, err
	}
	if steps == 0 {
		return lossBefore, lossBefore, nil
	}

	clip := opt.GradClip
	if clip <= 0 {
		clip = math.MaxFloat32
	}
	e, err := graph.NewExec(b, valueHeadStepGraph)
	if err != nil {
		return 0, 0, fmt.Errorf("value head fit: %w", err)
	}
	defer e.Finalize()
	xT := tensors.FromFlatDataAndDimensions(flat, rows, v.Inputs)
	yT := tensors.FromFlatDataAndDimensions(yPad, rows)
	maskT := tensors.FromFlatDataAndDimensions(mask, rows)
	state := append(v.weightTensors(), v.momentTensors()...) // 12 tensors
	var gradNorm float64
	for s := 0; s < steps; s++ {
		t := float64(v.Step) + 1
		hp := []float32{
			float32(opt.HeadsLR), float32(opt.HeadsBeta1), float32(opt.Beta2), float32(opt.Epsilon),
			float32(opt.WeightDecay), float32(clip),
			float32(1 - math.Pow(opt.HeadsBeta1, t)), float32(1 - math.Pow(opt.Beta2, t)),
		}
		args := append([]any{}, state...)
		args = append(args, xT, yT, maskT)
		for _, h := range hp {
			args = append(args, h)
		}
		out, err := func() (out []*tensors.Tensor, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("value head fit: %v", r)
				}
			}()
			return e.Exec(args...)
		}()
		if err != nil {
			return 0, 0, fmt.Errorf("value head fit step %d: %w", s, err)
		}
		for i := range state {
			state[i] = out[i]
		}
		gradNorm = float64(tensors.ToScalar[float32](out[12]))
		v.Step++
	}
	if err := v.loadState(state); err != nil {
		return 0, 0, err
	}
	v.lastGradNorm = gradNorm
	if lossAfter, err = mse(); err != nil {
		return 0, 0, err
	}
	return lossBefore, lossAfter, nil
}

func (v *ValueHead) momentTensors() []any {
	return []any{
		tensors.FromFlatDataAndDimensions(v.MW1, v.Inputs, v.Hidden),
		tensors.FromFlatDataAndDimensions(v.MB1, v.Hidden),
		tensors.FromFlatDataAndDimensions(v.MW2, v.Hidden),
		tensors.FromScalar(v.MB2),
		tensors.FromFlatDataAndDimensions(v.VW1, v.Inputs, v.Hidden),
		tensors.FromFlatDataAndDimensions(v.VB1, v.Hidden),
		tensors.FromFlatDataAndDimensions(v.VW2, v.Hidden),
		tensors.FromScalar(v.VB2),
	}
}

// loadState copies the 12 state tensors (weights, first moments, second moments) back.
func (v *ValueHead) loadState(state []any) error {
	slices := []*[]float32{&v.W1, &v.B1, &v.W2, nil, &v.MW1, &v.MB1, &v.MW2, nil, &v.VW1, &v.VB1, &v.VW2, nil}
	scalars := map[int]*float32{3: &v.B2, 7: &v.MB2, 11: &v.VB2}
	for i, a := range state {
		t := a.(*tensors.Tensor)
		data, err := tensors.CopyFlatData[float32](t)
		if err != nil {
			return fmt.Errorf("value head fit: read state %d: %w", i, err)
		}
		if p := slices[i]; p != nil {
			if len(data) != len(*p) {
				return fmt.Errorf("value head fit: state %d has %d values, want %d", i, len(data), len(*p))
			}
			*p = data
		} else {
			*scalars[i] = data[0]
		}
	}
	return nil
}

// valueHeadStepGraph is one AdamW step. Inputs: W1, b1, W2, b2, their first moments, their
// second moments (12), x [N,in], y [N], mask [N], then scalars lr, β1, β2, ε, wd, clip,
// 1−β1ᵗ, 1−β2ᵗ. Outputs: the 12 updated state tensors, then the pre-clip gradient norm and the
// masked MSE before the step.
func valueHeadStepGraph(in []*graph.Node) []*graph.Node {
	params := in[0:4]
	m, vv := in[4:8], in[8:12]
	x, y, mask := in[12], in[13], in[14]
	lr, beta1, beta2, eps, wd, clip, bc1, bc2 := in[15], in[16], in[17], in[18], in[19], in[20], in[21], in[22]
	g := x.Graph()

	p := valueHeadForward(x, params[0], params[1], params[2], params[3])
	d := graph.Sub(p, y)
	count := graph.Max(graph.ReduceAllSum(mask), graph.ScalarOne(g, mask.DType()))
	loss := graph.Div(graph.ReduceAllSum(graph.Mul(mask, graph.Mul(d, d))), count)

	grads := graph.Gradient(loss, params...)
	sq := graph.ScalarZero(g, loss.DType())
	for _, gr := range grads {
		sq = graph.Add(sq, graph.ReduceAllSum(graph.Mul(gr, gr)))
	}
	norm := graph.Sqrt(sq)
	// torch.nn.utils.clip_grad_norm_: scale by min(1, clip/(norm + 1e-6)).
	coef := graph.Min(graph.ScalarOne(g, norm.DType()), graph.Div(clip, graph.AddScalar(norm, 1e-6)))

	one := graph.ScalarOne(g, lr.DType())
	decay := graph.Sub(one, graph.Mul(lr, wd))
	out := make([]*graph.Node, 12, 14)
	for i, w := range params {
		gr := graph.Mul(grads[i], coef)
		mi := graph.Add(graph.Mul(beta1, m[i]), graph.Mul(graph.Sub(one, beta1), gr))
		vi := graph.Add(graph.Mul(beta2, vv[i]), graph.Mul(graph.Sub(one, beta2), graph.Mul(gr, gr)))
		denom := graph.Add(graph.Sqrt(graph.Div(vi, bc2)), eps)
		upd := graph.Mul(lr, graph.Div(graph.Div(mi, bc1), denom))
		out[i] = graph.Sub(graph.Mul(w, decay), upd)
		out[4+i] = mi
		out[8+i] = vi
	}
	return append(out, norm, loss)
}

// Binary checkpoint format (little-endian):
//
//	"EVVH" | version u32 (=1) | inputs u32 | hidden u32 | step u64 |
//	W1 b1 W2 b2 | MW1 MB1 MW2 MB2 | VW1 VB1 VW2 VB2   (float32 each, in that order) |
//	CRC-32 (IEEE) u32 of everything before it.
const (
	valueHeadMagic   = "EVVH"
	valueHeadVersion = 1
)

func (v *ValueHead) floatSections() []*[]float32 {
	b2, mb2, vb2 := []float32{v.B2}, []float32{v.MB2}, []float32{v.VB2}
	return []*[]float32{&v.W1, &v.B1, &v.W2, &b2, &v.MW1, &v.MB1, &v.MW2, &mb2, &v.VW1, &v.VB1, &v.VW2, &vb2}
}

// MarshalBinary encodes the head (weights, AdamW moments and step) for checkpoints.
func (v *ValueHead) MarshalBinary() ([]byte, error) {
	if len(v.W1) != v.Inputs*v.Hidden || len(v.B1) != v.Hidden || len(v.W2) != v.Hidden ||
		len(v.MW1) != len(v.W1) || len(v.VW1) != len(v.W1) || len(v.MB1) != v.Hidden ||
		len(v.VB1) != v.Hidden || len(v.MW2) != v.Hidden || len(v.VW2) != v.Hidden {
		return nil, fmt.Errorf("value head marshal: inconsistent sizes for %d inputs, %d hidden", v.Inputs, v.Hidden)
	}
	var buf bytes.Buffer
	buf.WriteString(valueHeadMagic)
	le := binary.LittleEndian
	buf.Write(le.AppendUint32(nil, valueHeadVersion))
	buf.Write(le.AppendUint32(nil, uint32(v.Inputs)))
	buf.Write(le.AppendUint32(nil, uint32(v.Hidden)))
	buf.Write(le.AppendUint64(nil, v.Step))
	for _, s := range v.floatSections() {
		for _, f := range *s {
			buf.Write(le.AppendUint32(nil, math.Float32bits(f)))
		}
	}
	buf.Write(le.AppendUint32(nil, crc32.ChecksumIEEE(buf.Bytes())))
	return buf.Bytes(), nil
}

// UnmarshalBinary decodes what MarshalBinary wrote, rejecting anything malformed.
func (v *ValueHead) UnmarshalBinary(data []byte) error {
	le := binary.LittleEndian
	const header = 4 + 4 + 4 + 4 + 8
	if len(data) < header+4 || string(data[:4]) != valueHeadMagic {
		return errors.New("value head unmarshal: not a value-head checkpoint")
	}
	if ver := le.Uint32(data[4:]); ver != valueHeadVersion {
		return fmt.Errorf("value head unmarshal: unsupported version %d", ver)
	}
	inputs, hidden := int(le.Uint32(data[8:])), int(le.Uint32(data[12:]))
	if inputs <= 0 || hidden <= 0 || inputs > 1<<20 || hidden > 1<<20 {
		return fmt.Errorf("value head unmarshal: bad sizes %d×%d", inputs, hidden)
	}
	nFloats := 3 * (inputs*hidden + 2*hidden + 1)
	if len(data) != header+4*nFloats+4 {
		return fmt.Errorf("value head unmarshal: %d bytes, want %d", len(data), header+4*nFloats+4)
	}
	body := data[:len(data)-4]
	if crc32.ChecksumIEEE(body) != le.Uint32(data[len(data)-4:]) {
		return errors.New("value head unmarshal: checksum mismatch")
	}
	n := newZeroValueHead(inputs, hidden)
	n.Step = le.Uint64(data[16:])
	sections := n.floatSections()
	off := header
	for _, s := range sections {
		for i := range *s {
			(*s)[i] = math.Float32frombits(le.Uint32(data[off:]))
			off += 4
		}
	}
	n.B2, n.MB2, n.VB2 = (*sections[3])[0], (*sections[7])[0], (*sections[11])[0]
	*v = *n
	return nil
}
