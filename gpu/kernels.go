package gpu

import "fmt"

// kernels are the passes that have two implementations: plain-Go kernels over each decision's
// exact legal actions (native*.go), which the CPU engine runs, and the graphs, which XLA runs.
// An engine picks one here (Engine.kernels), and no caller branches on the engine.
type kernels interface {
	score(p *PolicyNet, e *Engine, batch []PolicyRow) (*Scores, error)
	encode(p *PolicyNet, e *Engine, batch []PolicyRow) ([][]float32, error)
	predict(h *Head, e *Engine, x [][]float32) ([]float32, error)
	policyGradient(l *Learner, e *Engine, rows []PolicyRow, refs []StateRef, trajs []Trajectory, resIn [][]float32, cTheta, cResid []float32) ([][]float32, []float64, error)
	// mse prepares FitMSE's pass: call(grad) returns each head's MSE, then, when grad (the graphs
	// always), the gradient of their sum with respect to params.
	mse(e *Engine, heads []*Head, params []*Param, x [][]float32, y []float32) (call func(grad bool) ([][]float32, error), err error)
}

// graphKernels run the gomlx graphs (policynet.go, head.go, update.go).
type graphKernels struct{}

// nativeKernels run the plain-Go kernels.
type nativeKernels struct{}

// kernels is the engine's implementation of the passes: native on simplego, graphs elsewhere.
func (e *Engine) kernels() kernels {
	if e.native {
		return nativeKernels{}
	}
	return graphKernels{}
}

func (nativeKernels) score(p *PolicyNet, _ *Engine, batch []PolicyRow) (*Scores, error) {
	if _, err := p.checkRows(batch); err != nil {
		return nil, err
	}
	return p.scoreNative(batch), nil
}

func (nativeKernels) encode(p *PolicyNet, _ *Engine, batch []PolicyRow) ([][]float32, error) {
	if _, err := p.checkRows(batch); err != nil {
		return nil, fmt.Errorf("policy net encode: %w", err)
	}
	return p.encodeRowsNative(batch), nil
}

func (nativeKernels) predict(h *Head, _ *Engine, x [][]float32) ([]float32, error) {
	flat, err := packRows("head "+h.Name, x, h.In, len(x))
	if err != nil {
		return nil, err
	}
	y, _ := h.runNative(flat, len(x), nil)
	return y, nil
}

func (nativeKernels) policyGradient(l *Learner, _ *Engine, rows []PolicyRow, refs []StateRef, trajs []Trajectory, resIn [][]float32, cTheta, cResid []float32) ([][]float32, []float64, error) {
	return l.policyGradientNative(rows, refs, trajs, resIn, cTheta, cResid)
}

// mse needs no padding (there is no graph to reuse), and skips the gradient where only the
// losses are read (grad false).
func (nativeKernels) mse(_ *Engine, heads []*Head, _ []*Param, x [][]float32, y []float32) (func(grad bool) ([][]float32, error), error) {
	flat, err := packRows("fit", x, heads[0].In, len(x))
	if err != nil {
		return nil, err
	}
	return func(grad bool) ([][]float32, error) { return mseNative(heads, flat, y, grad), nil }, nil
}
