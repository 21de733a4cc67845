package policy

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/evosteer/evosteer-go/internal/orchestra"
)

// Decision is what a policy sees at one decision: the runtime's state, its legal actions, and
// the published value head's estimate (0 until a value head has been fitted).
type Decision struct {
	RT          *orchestra.Runtime
	Legal       []orchestra.Action
	Families    []string // task-type one-hot order
	Value       float64
	ValueChange float64
}

// Policy scores the legal actions of a decision.
type Policy interface {
	// LogProbs returns log pi(a|s) for each legal action, in d.Legal's order.
	LogProbs(d *Decision) ([]float64, error)
}

// LogSoftmax normalises logits over the legal set; a single legal action gets log-prob 0
// exactly, as the paper's grammar mask gives it.
func LogSoftmax(logits []float64) []float64 {
	out := make([]float64, len(logits))
	if len(logits) == 1 {
		return out
	}
	m := math.Inf(-1)
	for _, l := range logits {
		m = max(m, l)
	}
	var z float64
	for _, l := range logits {
		z += math.Exp(l - m)
	}
	lz := m + math.Log(z)
	for i, l := range logits {
		out[i] = l - lz
	}
	return out
}

// Temper returns the log-probabilities of the tempered distribution p_i^(1/tau) / Σ_j p_j^(1/tau)
// (logits divided by tau, renormalised over the legal set): what the orchestrator samples at
// policy.temperature tau. At tau = 1 it returns logp itself, so sampling at the default is
// bit-for-bit sampling from the policy.
func Temper(logp []float64, tau float64) []float64 {
	if tau == 1 {
		return logp
	}
	scaled := make([]float64, len(logp))
	for i, l := range logp {
		scaled[i] = l / tau
	}
	return LogSoftmax(scaled)
}

// Sample draws an index from log-probabilities with the given generator.
func Sample(logp []float64, rng *rand.Rand) (int, error) {
	if len(logp) == 0 {
		return 0, fmt.Errorf("sample: no legal action")
	}
	u := rng.Float64()
	var c float64
	last := -1
	for i, l := range logp {
		p := math.Exp(l)
		c += p
		if u < c {
			return i, nil
		}
		if p > 0 {
			last = i
		}
	}
	if last < 0 {
		return 0, fmt.Errorf("sample: no legal action has positive probability")
	}
	// Rounding: the mass sums to 1 - epsilon. Fall back to the last action that can be drawn,
	// never to a masked one.
	return last, nil
}

// Barer is a scripted policy that plays the executor alone, outside the architecture (the direct
// baseline): its episodes' executions carry no role instruction (orchestra.Options.Bare).
type Barer interface {
	Bare() bool
}

// Programmed is a scripted policy that stands for a program, not a controller model: a fixed
// paradigm decides its team before execution, so most of its decisions cost the episode nothing.
// ControllerCall reports whether decision t stands for a call to a model that the budget pays
// for (plan-then-execute's planner writes the graph once, at the first decision). A policy that
// is not Programmed is a controller, and every sampled decision of it is charged.
type Programmed interface {
	ControllerCall(t int) bool
}
