package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gomlx/gomlx/core/tensors"
)

// Param is one block of a model's parameters: float32 values, their dimensions and, when the
// block is trainable, its AdamW moments. Models keep their parameters as Params so that one
// optimizer, one gradient clip and one checkpoint format serve every model.
type Param struct {
	Name  string
	Dims  []int
	Value []float32
	M, V  []float32 // AdamW first and second moments; nil for a frozen block
	// Steps makes a trainable block row-sparse (the per-task tables): entry i moves only in
	// optimizer steps whose batch reaches it, and Steps[i] counts those steps (its bias
	// correction's t). nil for dense blocks, which take their clip group's step.
	Steps []int64
}

func newParam(name string, trainable bool, dims ...int) *Param {
	n := 1
	for _, d := range dims {
		n *= d
	}
	p := &Param{Name: name, Dims: dims, Value: make([]float32, n)}
	if trainable {
		p.M, p.V = make([]float32, n), make([]float32, n)
	}
	return p
}

// Trainable reports whether the block has optimizer state.
func (p *Param) Trainable() bool { return p.M != nil }

func (p *Param) tensor() *tensors.Tensor { return matrix(p.Value, p.Dims...) }

// clone is a deep copy.
func (p *Param) clone() *Param {
	return &Param{Name: p.Name, Dims: slices.Clone(p.Dims), Value: slices.Clone(p.Value), M: slices.Clone(p.M), V: slices.Clone(p.V), Steps: slices.Clone(p.Steps)}
}

// uniform fills the values from U(−1/√fanIn, 1/√fanIn), torch.nn.Linear's initialisation.
func (p *Param) uniform(r *rand.Rand, fanIn int) {
	bound := 1 / math.Sqrt(float64(fanIn))
	for i := range p.Value {
		p.Value[i] = float32((2*r.Float64() - 1) * bound)
	}
}

// check verifies that the value (and moments) hold exactly the dimensions' size.
func (p *Param) check() error {
	n := 1
	for _, d := range p.Dims {
		if d <= 0 {
			return fmt.Errorf("parameter %s: bad dimensions %v", p.Name, p.Dims)
		}
		n *= d
	}
	if len(p.Value) != n || (p.M != nil && (len(p.M) != n || len(p.V) != n)) || (p.M == nil) != (p.V == nil) ||
		(p.Steps != nil && (len(p.Steps) != n || p.M == nil)) {
		return fmt.Errorf("parameter %s: %d values (moments %d, %d) for dimensions %v", p.Name, len(p.Value), len(p.M), len(p.V), p.Dims)
	}
	return nil
}

func paramTensors(ps []*Param) []any {
	out := make([]any, len(ps))
	for i, p := range ps {
		out[i] = p.tensor()
	}
	return out
}

func cloneParams(ps []*Param) []*Param {
	out := make([]*Param, len(ps))
	for i, p := range ps {
		out[i] = p.clone()
	}
	return out
}
