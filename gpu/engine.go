package gpu

import (
	"fmt"
	"github.com/evosteer/evosteer-go/gpu/backend"
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/gobackend"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// execCacheShapes bounds the compilations one graph keeps (gomlx's default is 32). Callers pad
// batches to power-of-two buckets in two dimensions (rows and legal actions, or episodes and
// trajectory length), which stays well below it.
const execCacheShapes = 64

// Engine runs the package's graphs on one gomlx backend. Models keep their parameters in Go
// slices; every computation goes through an Engine, which compiles each graph once (per input
// shape) and reuses it, so a rollout that scores thousands of decisions pays for compilation
// only a few times. It is safe for concurrent use.
type Engine struct {
	backend compute.Backend
	mu      sync.Mutex
	execs   map[string]*graph.Exec
	// native selects the engine's kernels (kernels.go): scoring (Score, Predict) and the
	// update's passes (Encode, the policy gradient, FitMSE) as plain-Go kernels instead of
	// graphs. Set on the simplego backend, where they are an order of magnitude faster; the graphs
	// serve XLA.
	native bool
}

// OpenEngine opens the named backend (see backend.New) and returns an engine on it.
func OpenEngine(name string) (*Engine, error) {
	b, err := backend.New(name)
	if err != nil {
		return nil, err
	}
	return &Engine{backend: b, execs: map[string]*graph.Exec{}, native: b.String() == gobackend.BackendName}, nil
}

// BackendName is the gomlx name of the engine's backend.
func (e *Engine) BackendName() string { return e.backend.Name() }

// Close releases the compiled graphs and the backend.
func (e *Engine) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, x := range e.execs {
		x.Finalize()
	}
	e.execs = nil
	e.backend.Finalize()
}

// run executes the graph fn, compiled once under key, on args (tensors or scalars), and returns
// every output as a flat float32 slice. key must name everything fn closes over. Panics inside
// gomlx become errors; input and output tensors are freed before it returns.
func (e *Engine) run(key string, fn func([]*graph.Node) []*graph.Node, args ...any) ([][]float32, error) {
	return runAs[float32](e, key, fn, args...)
}

// runAs is run for graphs whose outputs all have dtype T.
func runAs[T float32 | float64](e *Engine, key string, fn func([]*graph.Node) []*graph.Node, args ...any) (out [][]T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("graph %s: %v", key, r)
		}
		for _, a := range args {
			if t, ok := a.(*tensors.Tensor); ok {
				t.FinalizeAll()
			}
		}
	}()
	x, err := e.exec(key, fn)
	if err != nil {
		return nil, err
	}
	res, err := x.Call(args...)
	if err != nil {
		return nil, fmt.Errorf("graph %s: %w", key, err)
	}
	out = make([][]T, len(res))
	for i, t := range res {
		if out[i], err = tensors.CopyFlatData[T](t); err != nil {
			return nil, fmt.Errorf("graph %s: output %d: %w", key, i, err)
		}
		t.FinalizeAll()
	}
	return out, nil
}

func (e *Engine) exec(key string, fn func([]*graph.Node) []*graph.Node) (*graph.Exec, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.execs == nil {
		return nil, fmt.Errorf("graph %s: engine is closed", key)
	}
	if x, ok := e.execs[key]; ok {
		return x, nil
	}
	x, err := graph.NewExec(e.backend, fn)
	if err != nil {
		return nil, fmt.Errorf("graph %s: %w", key, err)
	}
	x.SetMaxCache(execCacheShapes)
	e.execs[key] = x
	return x, nil
}

// bucket rounds n up to the next power of two, at least lo: the padded size of a batch axis.
func bucket(n, lo int) int {
	b := lo
	for b < n {
		b *= 2
	}
	return b
}

func matrix[T float32 | float64](data []T, dims ...int) *tensors.Tensor {
	return tensors.FromFlatDataAndDimensions(data, dims...)
}
