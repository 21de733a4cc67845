package episode

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor/openai"
	"github.com/evosteer/evosteer-go/internal/executor/scoring"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/policy"
)

// reference gives ρ's logits over a decision's legal actions, which every decision row stores
// (prior_logits) and the network adds its residual to: logits_θ = logits_ρ + z_θ − z_base, so
// θ = ρ·exp(g) renormalised and, with the adapter at zero, θ = ρ exactly.
type reference interface {
	// logits scores d's legal actions; prompt renders the decision's controller prompt (the
	// user message a controller model reads).
	logits(ctx context.Context, d *policy.Decision, prompt func() string) ([]float64, error)
}

// priorReference is the calibrated prior: the weights of the indicators each action fires.
type priorReference struct{ prior *policy.Prior }

func (r priorReference) logits(_ context.Context, d *policy.Decision, _ func() string) ([]float64, error) {
	return r.prior.Logits(d), nil
}

// servedReference is a served model's log ρ(a|s): the masked likelihood of each legal action's
// canonical JSON after the controller's system prompt and the decision's controller prompt
// (docs/SERVED-REFERENCE.md). Log-probabilities are logits whose softmax is ρ itself.
type servedReference struct{ scorer *scoring.Scorer }

// errReference marks a served reference's failure: the episode is unhealthy with it as the
// reason, as an executor's failure makes it, and the stage goes on.
var errReference = errors.New("the served reference")

func (r servedReference) logits(ctx context.Context, d *policy.Decision, prompt func() string) ([]float64, error) {
	actions := make([]string, len(d.Legal))
	for i, a := range d.Legal {
		actions[i] = a.JSON()
	}
	scored, err := r.scorer.Score(ctx, orchestra.ControllerSystemPrompt, prompt(), actions)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errReference, err)
	}
	return scored.LogProbs, nil
}

// preflightTimeout bounds the check of a served reference before any episode runs.
const preflightTimeout = 10 * time.Second

// newServedReference is the served model sr names, checked before any episode runs (Preflight:
// the server answers, serves the model, returns prompt log-probabilities).
func newServedReference(ctx context.Context, sr *config.ServedReference) (reference, error) {
	key, err := openai.APIKeyFromEnv(sr.APIKeyEnv)
	if err != nil {
		return nil, fmt.Errorf("served_reference.api_key_env: %w", err)
	}
	seconds := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	client, err := openai.NewClient(openai.ClientConfig{BaseURL: sr.BaseURL, Model: sr.Model, APIKey: key,
		MaxConcurrency: sr.MaxConcurrency, Timeout: seconds(sr.TimeoutSeconds), Outage: seconds(sr.OutageSeconds),
		BackoffInitial: time.Second, BackoffMax: 30 * time.Second, BaseURLSetting: "served_reference.base_url"})
	if err != nil {
		return nil, fmt.Errorf("served_reference: %w", err)
	}
	var engine scoring.Engine
	switch sr.Dialect {
	case "sglang":
		engine = scoring.NewSGLang(client)
	case "vllm":
		if engine, err = scoring.NewVLLM(client); err != nil {
			return nil, fmt.Errorf("served_reference: %w", err)
		}
	default:
		return nil, fmt.Errorf("served_reference.dialect %q: want sglang or vllm", sr.Dialect)
	}
	pctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	if err := engine.Preflight(pctx); err != nil {
		return nil, fmt.Errorf("served_reference (within %v): %w", preflightTimeout, err)
	}
	scorer, err := scoring.NewScorer(pctx, engine, scoring.Templates[sr.Template], sr.CacheDecisions)
	if err != nil {
		return nil, fmt.Errorf("served_reference: %w", err)
	}
	return servedReference{scorer}, nil
}
