package episode

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor/scoring"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/textrules"
	"github.com/evosteer/evosteer-go/schema"
)

// reference gives ρ's logits over a decision's legal actions, which every decision row stores
// (prior_logits) and the network adds its residual to: logits_θ = logits_ρ + z_θ − z_base, so
// θ = ρ·exp(g) renormalised and, with the adapter at zero, θ = ρ exactly.
type reference interface {
	// logits scores d's legal actions; prompt renders the decision's controller prompt (the
	// user message a controller model reads). A served reference also returns the prompt it
	// sent, as a prompts row without its episode_id and t (nil where no request was needed:
	// the prior, or a single legal action).
	logits(ctx context.Context, d *policy.Decision, prompt func() string) ([]float64, *schema.PromptRow, error)
	// count is what a controller call on the user message costs the episode budget: the
	// prompt's tokens and the longest of the actions' (the reservation), or of the one chosen
	// (the settlement). It is counted as the episodes' controller_count says.
	count(ctx context.Context, user string, actions []orchestra.Action) (prompt, longest int64, err error)
	// counted is how count counts: schema.ControllerCountEstimated or …Served.
	counted() string
}

// priorReference is the calibrated prior: the weights of the indicators each action fires.
type priorReference struct{ prior *policy.Prior }

func (r priorReference) logits(_ context.Context, d *policy.Decision, _ func() string) ([]float64, *schema.PromptRow, error) {
	return r.prior.Logits(d), nil, nil
}

// count is the simulated charge of a controller that no model runs: the user message's and the
// actions' lengths at about four characters a token, as the reference release charges its own
// tokenised prompt and action paths.
func (priorReference) count(_ context.Context, user string, actions []orchestra.Action) (int64, int64, error) {
	return textrules.Tokens(user), orchestra.LongestActionTokens(actions), nil
}

func (priorReference) counted() string { return schema.ControllerCountEstimated }

// servedReference is a served model's log ρ(a|s): the masked likelihood of each legal action's
// canonical JSON after the controller's system prompt and the decision's controller prompt
// (docs/SERVED-REFERENCE.md). Log-probabilities are logits whose softmax is ρ itself.
type servedReference struct {
	scorer *scoring.Scorer
	model  string // served_reference.model, recorded with each prompt
}

// errReference marks a served reference's failure: the episode is unhealthy with it as the
// reason, as an executor's failure makes it, and the stage goes on.
var errReference = errors.New("the served reference")

func (r servedReference) logits(ctx context.Context, d *policy.Decision, prompt func() string) ([]float64, *schema.PromptRow, error) {
	if len(d.Legal) == 1 {
		return []float64{0}, nil, nil // log ρ = 0: no request, and no prompt to render
	}
	actions := make([]string, len(d.Legal))
	for i, a := range d.Legal {
		actions[i] = a.JSON()
	}
	user := prompt()
	scored, err := r.scorer.Score(ctx, orchestra.ControllerSystemPrompt, user, actions)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errReference, err)
	}
	tmpl := r.scorer.Template()
	return scored.LogProbs, &schema.PromptRow{SystemPromptID: orchestra.ControllerSystemPromptID, Template: tmpl.Name, Model: r.model,
		PromptSHA256: tmpl.PromptSHA256(orchestra.ControllerSystemPrompt, user), PromptTokens: int32(scored.PromptTokens),
		Requests: int32(scored.Requests), TokensSent: int64(scored.TokensSent), UserMessage: user}, nil
}

// count is the served model's own lengths: the rendered chat prompt (system prompt, template
// and user message) and the actions' token paths with the end of turn, which the model reads
// and would write. Tokenising them now is what scoring the decision reuses.
func (r servedReference) count(ctx context.Context, user string, actions []orchestra.Action) (int64, int64, error) {
	texts := make([]string, len(actions))
	for i, a := range actions {
		texts[i] = a.JSON()
	}
	c, err := r.scorer.Count(ctx, orchestra.ControllerSystemPrompt, user, texts)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", errReference, err)
	}
	longest := 0
	for _, n := range c.Actions {
		longest = max(longest, n)
	}
	return int64(c.Prompt), int64(longest), nil
}

func (servedReference) counted() string { return schema.ControllerCountServed }

// newServedReference is the served model sr names (scoring.FromConfig), checked before any
// episode runs.
func newServedReference(ctx context.Context, sr *config.ServedReference) (reference, error) {
	scorer, err := scoring.FromConfig(ctx, sr)
	if err != nil {
		return nil, err
	}
	return servedReference{scorer: scorer, model: sr.Model}, nil
}

// modelReference is ρ as the causal-LM policy's own model with its adapter off (policy.kind
// causal_lm): the learner scores both θ and ρ of a decision through its batches, so the decision
// row keeps the calibrated prior's logits (the compact network's input, which the model ignores),
// and what this adds is the decision's prompts row: the controller prompt the model reads, with
// its length in the model's tokens, for every decision (h_ρ(s) is read at every state). Tokens
// are counted with the model's tokenizer as the served reference counts with the server's.
type modelReference struct {
	prior priorReference
	lm    *gpu.CausalLM
}

func (r modelReference) logits(ctx context.Context, d *policy.Decision, prompt func() string) ([]float64, *schema.PromptRow, error) {
	logits, _, _ := r.prior.logits(ctx, d, prompt)
	user := prompt()
	n, _, err := r.lm.CountTokens(orchestra.ControllerSystemPrompt, user, nil)
	if err != nil {
		return nil, nil, err
	}
	tmpl := r.lm.Template()
	return logits, &schema.PromptRow{SystemPromptID: orchestra.ControllerSystemPromptID, Template: tmpl.Name, Model: r.lm.BaseModel(),
		PromptSHA256: tmpl.PromptSHA256(orchestra.ControllerSystemPrompt, user), PromptTokens: int32(n), UserMessage: user}, nil
}

func (r modelReference) count(_ context.Context, user string, actions []orchestra.Action) (int64, int64, error) {
	texts := make([]string, len(actions))
	for i, a := range actions {
		texts[i] = a.JSON()
	}
	n, lens, err := r.lm.CountTokens(orchestra.ControllerSystemPrompt, user, texts)
	if err != nil {
		return 0, 0, err
	}
	return int64(n), int64(slices.Max(append(lens, 0))), nil
}

func (modelReference) counted() string { return schema.ControllerCountServed }
