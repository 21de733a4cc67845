package scoring

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
	client, err := openai.NewClient(openai.ClientConfig{BaseURL: sr.BaseURL, Replicas: sr.Replicas, Model: sr.Model, APIKey: key,
		MaxConcurrency: sr.MaxConcurrency, Timeout: seconds(sr.TimeoutSeconds), Outage: seconds(sr.OutageSeconds),
		BackoffInitial: time.Second, BackoffMax: 30 * time.Second, BaseURLSetting: "served_reference.base_url"})
	if err != nil {
		return nil, fmt.Errorf("served_reference: %w", err)
	}
	engine, err := dialect(sr.Dialect, client)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, PreflightTimeout)
	defer cancel()
	// Every replica is checked, at once: one that is down or serves another model would fail
	// the decisions routed to it.
	endpoints := client.Endpoints()
	errs := make([]error, len(endpoints))
	var wg sync.WaitGroup
	for i, base := range endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one, err := client.Only(base)
			if err == nil {
				var e Engine
				if e, err = dialect(sr.Dialect, one); err == nil {
					err = e.Preflight(pctx)
				}
			}
			if err != nil {
				errs[i] = fmt.Errorf("served_reference (within %v): %w", PreflightTimeout, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	scorer, err := NewScorer(pctx, engine, Templates[sr.Template], sr.CacheDecisions)
	if err != nil {
		return nil, fmt.Errorf("served_reference: %w", err)
	}
	return scorer, nil
}

// dialect is the engine of sr's dialect over client.
func dialect(name string, client *openai.Client) (Engine, error) {
	switch name {
	case "sglang":
		return NewSGLang(client), nil
	case "vllm":
		v, err := NewVLLM(client)
		if err != nil {
			return nil, fmt.Errorf("served_reference: %w", err)
		}
		return v, nil
	default:
		return nil, fmt.Errorf("served_reference.dialect %q: want sglang or vllm", name)
	}
}
