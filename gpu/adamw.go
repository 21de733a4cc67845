package gpu

import (
	"fmt"
	"math"

	"github.com/evosteer/evosteer-go/internal/config"
)

// AdamW holds the hyperparameters of one parameter group, with torch.optim.AdamW's semantics:
//
//	p ← p·(1 − lr·wd);  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²;
//	p ← p − lr·(m/(1−β1ᵗ)) / (√(v/(1−β2ᵗ)) + ε)
//
// Decay applies to every weight and bias, as in torch's default group. Row-sparse blocks (the
// per-task tables, Param.Steps) take these steps entry by entry, only for the entries a batch
// reaches (ClipGroup.Apply). The update runs in Go on the host: the parameters are small, and it
// keeps one optimizer for every model and backend.
type AdamW struct {
	LR, Beta1, Beta2, Epsilon, WeightDecay float64
}

// AdapterAdamW and HeadsAdamW are the two parameter groups of METHOD.md §4.6.
func AdapterAdamW(o config.Optimizer) AdamW {
	return AdamW{LR: o.AdapterLR, Beta1: o.AdapterBeta1, Beta2: o.Beta2, Epsilon: o.Epsilon, WeightDecay: o.WeightDecay}
}

// HeadsAdamW is the group of the value, outcome and critic heads and of the objectives' extra
// parameters (at their own rates where the learner says so).
func HeadsAdamW(o config.Optimizer) AdamW {
	return AdamW{LR: o.HeadsLR, Beta1: o.HeadsBeta1, Beta2: o.Beta2, Epsilon: o.Epsilon, WeightDecay: o.WeightDecay}
}

// ResidualAdamW is the heads' group at optimizer.residual_lr, for the residual flow head b_ψ: it
// must follow flows that move with θ, and at heads_lr it learns little more than a constant
// (measured on the exact world, internal/exact).
func ResidualAdamW(o config.Optimizer) AdamW {
	h := HeadsAdamW(o)
	h.LR = o.ResidualLR
	return h
}

// step applies one AdamW update with bias-correction step t (≥ 1) to p, whose gradient is
// grad·scale (scale carries the gradient clip).
func (h AdamW) step(p *Param, grad []float32, scale float64, t int64) {
	bc1, bc2 := h.corrections(t)
	for i, g := range grad {
		h.update(p, i, float64(g)*scale, bc1, bc2)
	}
}

// stepRows is step for a row-sparse block (per-task tables): only the entries with rows[i] move,
// each with its own step count p.Steps[i] for the bias correction, as torch's SparseAdam does;
// the others keep their value and moments (no decay, no stale momentum).
func (h AdamW) stepRows(p *Param, grad []float32, scale float64, rows []bool) {
	for i, in := range rows {
		if in {
			p.Steps[i]++
			bc1, bc2 := h.corrections(p.Steps[i])
			h.update(p, i, float64(grad[i])*scale, bc1, bc2)
		}
	}
}

// corrections are AdamW's bias corrections 1 − β1ᵗ and 1 − β2ᵗ at step t.
func (h AdamW) corrections(t int64) (bc1, bc2 float64) {
	return 1 - math.Pow(h.Beta1, float64(t)), 1 - math.Pow(h.Beta2, float64(t))
}

// update moves entry i of p with gradient g.
func (h AdamW) update(p *Param, i int, g, bc1, bc2 float64) {
	m := h.Beta1*float64(p.M[i]) + (1-h.Beta1)*g
	v := h.Beta2*float64(p.V[i]) + (1-h.Beta2)*g*g
	w := float64(p.Value[i])*(1-h.LR*h.WeightDecay) - h.LR*(m/bc1)/(math.Sqrt(v/bc2)+h.Epsilon)
	p.M[i], p.V[i], p.Value[i] = float32(m), float32(v), float32(w)
}

// ClipGroup is a set of parameters whose gradients share one global-norm clip, each block with
// the AdamW group it belongs to. Step counts the updates taken (AdamW's t of its dense blocks).
type ClipGroup struct {
	Name   string
	Params []*Param
	Hyper  []AdamW // Hyper[i] updates Params[i]
	Step   int64
}

// Apply clips the gradients (aligned with g.Params) to global norm clip, as
// torch.nn.utils.clip_grad_norm_ does (scale min(1, clip/(‖g‖ + 1e-6)); no clip when clip ≤ 0),
// and takes one AdamW step. rows holds, for each row-sparse block of the group (Param.Steps
// set), the entries the batch reaches: only they move. It returns the norm before clipping.
func (g *ClipGroup) Apply(grads [][]float32, clip float64, rows map[*Param][]bool) (float64, error) {
	if len(grads) != len(g.Params) || len(g.Hyper) != len(g.Params) {
		return 0, fmt.Errorf("clip group %s: %d gradients, %d hyperparameter sets for %d parameters", g.Name, len(grads), len(g.Hyper), len(g.Params))
	}
	for i, p := range g.Params {
		if !p.Trainable() || len(grads[i]) != len(p.Value) {
			return 0, fmt.Errorf("clip group %s: parameter %s: %d gradient values for %d parameters (trainable %v)", g.Name, p.Name, len(grads[i]), len(p.Value), p.Trainable())
		}
		if p.Steps != nil && len(rows[p]) != len(p.Value) {
			return 0, fmt.Errorf("clip group %s: row-sparse parameter %s: %d row marks for %d entries", g.Name, p.Name, len(rows[p]), len(p.Value))
		}
	}
	norm := globalNorm(grads)
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return norm, fmt.Errorf("clip group %s: gradient norm is %v", g.Name, norm)
	}
	scale := 1.0
	if clip > 0 {
		scale = math.Min(1, clip/(norm+1e-6))
	}
	g.Step++
	for i, p := range g.Params {
		if p.Steps != nil {
			g.Hyper[i].stepRows(p, grads[i], scale, rows[p])
		} else {
			g.Hyper[i].step(p, grads[i], scale, g.Step)
		}
	}
	return norm, nil
}

func globalNorm(grads [][]float32) float64 {
	s := 0.0
	for _, gr := range grads {
		for _, v := range gr {
			s += float64(v) * float64(v)
		}
	}
	return math.Sqrt(s)
}
