package scoring

import (
	"context"
	"fmt"
	"time"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor/openai"
)

// PreflightTimeout bounds the check of a served reference before it scores anything.
const PreflightTimeout = 10 * time.Second

// FromConfig is the scorer of the served model sr names, the one constructor of every served ρ
// (internal/episode's rollouts, evaluation and probe, rescore's drift check): the client with
// sr's concurrency, timeout and outage tolerance, the dialect's engine, checked by its Preflight
// (the server answers, serves the model, returns prompt log-probabilities) within
// PreflightTimeout, and sr's chat template.
func FromConfig(ctx context.Context, sr *config.ServedReference) (*Scorer, error) {
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
	var engine Engine
	switch sr.Dialect {
	case "sglang":
		engine = NewSGLang(client)
	case "vllm":
		if engine, err = NewVLLM(client); err != nil {
			return nil, fmt.Errorf("served_reference: %w", err)
		}
	default:
		return nil, fmt.Errorf("served_reference.dialect %q: want sglang or vllm", sr.Dialect)
	}
	pctx, cancel := context.WithTimeout(ctx, PreflightTimeout)
	defer cancel()
	if err := engine.Preflight(pctx); err != nil {
		return nil, fmt.Errorf("served_reference (within %v): %w", PreflightTimeout, err)
	}
	scorer, err := NewScorer(pctx, engine, Templates[sr.Template], sr.CacheDecisions)
	if err != nil {
		return nil, fmt.Errorf("served_reference: %w", err)
	}
	return scorer, nil
}
