package gpu

import "fmt"

// PolicyModel is the orchestrator the learner trains (policy.kind): the compact network over the
// 30 features and the action descriptors (*PolicyNet), or a language model reading the controller
// prompt (*CausalLM). Either is a frozen base — ρ — and a LoRA adapter — θ = base + adapter — with
// B = 0 at step 0, so π_θ = π_ρ there; rollout, rescore, the update, the probe and evaluation
// reach it only through this interface and Learner.policyGradient.
type PolicyModel interface {
	// Score returns log π_θ and log π_ρ over each row's legal actions and h_ρ(s), HiddenWidth
	// values per row. A row's scores do not depend on the rest of the batch.
	Score(e *Engine, rows []PolicyRow) (*Scores, error)
	// Behaviour returns what a rollout samples each row from, log π_θ where theta[i] and log π_ρ
	// elsewhere, equal to Score's, and the token ids the policy fed a model for each row (nil
	// for the network).
	Behaviour(e *Engine, rows []PolicyRow, theta []bool) ([][]float32, []int64, error)
	// Encode returns h_ρ(s) of every row: the frozen base's reading of the state, which b_ψ
	// and the outcome heads read beside f(s).
	Encode(e *Engine, rows []PolicyRow) ([][]float32, error)
	// HiddenWidth is the width of h_ρ(s) (policy.encoder_dim).
	HiddenWidth() int
	// Params are every block the checkpoint keeps, with unique names; AdapterParams the
	// trainable ones, in the order of the policy gradient.
	Params() []*Param
	AdapterParams() []*Param
	// Describe names the model and its adapter for logs and the report.
	Describe() string
}

// PolicyText is a decision as a language model reads it: the controller's system prompt and the
// decision's user message (its controller prompt), and each legal action's canonical JSON, in the
// legal order. The compact network ignores it.
type PolicyText struct {
	System, User string
	Actions      []string
}

// Behaviour is Score's θ or ρ of each row.
func (p *PolicyNet) Behaviour(e *Engine, rows []PolicyRow, theta []bool) ([][]float32, []int64, error) {
	s, err := p.Score(e, rows)
	if err != nil {
		return nil, nil, err
	}
	out := s.Rho
	for i, th := range theta {
		if th {
			out[i] = s.Theta[i]
		}
	}
	return out, nil, nil
}

// AdapterParams are the network's trainable blocks.
func (p *PolicyNet) AdapterParams() []*Param { return p.Adapter }

// HiddenWidth is the encoder's output width.
func (p *PolicyNet) HiddenWidth() int { return p.EncoderDim }

// Describe names the compact network's sizes.
func (p *PolicyNet) Describe() string {
	return fmt.Sprintf("compact network (hidden %d, h_ρ %d, LoRA r %d, α %g)", p.Hidden, p.EncoderDim, p.Rank, p.Alpha)
}
