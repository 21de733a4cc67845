package episode

import (
	"context"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor/scoring/fakeengine"
	"github.com/evosteer/evosteer-go/internal/sim"
)

// servedConfig points the configuration's reference at a fake SGLang server of model.
func servedConfig(cfg *config.Config, url, model string) {
	cfg.Served = &config.ServedReference{Dialect: "sglang", BaseURL: url, Model: model, Template: "qwen3",
		MaxConcurrency: 8, TimeoutSeconds: 10, OutageSeconds: 1, CacheDecisions: 256}
}

// servedJobs are a θ and a ρ episode of one training task of each of two families.
func servedJobs(cfg *config.Config) []Job {
	var jobs []Job
	for _, f := range cfg.Families[:2] {
		task := sim.Tasks(cfg.Sim, cfg.Seed, f, f, "train", 1)[0]
		jobs = append(jobs, Job{Task: task, Source: "current", ID: task.ID + "/current", Seed: 11, Theta: true},
			Job{Task: task, Source: "natural_reference", ID: task.ID + "/reference", Seed: 12})
	}
	return jobs
}

// TestServedReferenceIsRho: with served_reference set, every decision's ρ logits are the served
// model's masked log-likelihood of the legal actions (a distribution: Σ ρ = 1), the untrained θ
// is ρ exactly (each behaviour log-probability is ρ's of the choice), and a decision costs at
// most one scoring request.
func TestServedReferenceIsRho(t *testing.T) {
	cfg, l, eng := untrained(t)
	fake := fakeengine.NewSGLang(fakeengine.Model{Name: "fake/qwen"}, fakeengine.SGLangOptions{})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	servedConfig(cfg, srv.URL, "fake/qwen")
	exec, err := NewExecutor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	played, err := Play(context.Background(), cfg, exec, l, eng, servedJobs(cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	scored := 0
	for _, p := range played {
		if !p.Episode.Healthy {
			t.Fatalf("episode %s unhealthy: %s", p.Episode.EpisodeID, *p.Episode.UnhealthyReason)
		}
		for _, d := range p.Decisions {
			if len(d.PriorLogits) < 2 {
				continue
			}
			scored++
			total := 0.0
			for _, v := range d.PriorLogits {
				total += math.Exp(float64(v))
			}
			if math.Abs(total-1) > 1e-5 {
				t.Fatalf("%s t=%d: Σ ρ = %v over %d actions", p.Episode.EpisodeID, d.T, total, len(d.PriorLogits))
			}
			if !d.Forced && math.Abs(d.LogpBehavior-float64(d.PriorLogits[d.Chosen])) > 1e-5 {
				t.Fatalf("%s t=%d: behaviour log-prob %v, log ρ of the choice %v: the untrained θ is not ρ",
					p.Episode.EpisodeID, d.T, d.LogpBehavior, d.PriorLogits[d.Chosen])
			}
		}
	}
	if scored == 0 || fake.Generates() > scored+1 { // +1: the preflight's request
		t.Fatalf("%d scoring requests for %d decisions with a choice", fake.Generates(), scored)
	}
}

// TestServedReferenceFaults: a server that does not serve the model is refused before any
// episode, in one line naming it; a reply with a NaN after the preflight makes the episodes
// unhealthy with the reason, and the step goes on.
func TestServedReferenceFaults(t *testing.T) {
	cfg, l, eng := untrained(t)
	srv := httptest.NewServer(fakeengine.NewSGLang(fakeengine.Model{Name: "fake/qwen"}, fakeengine.SGLangOptions{}))
	defer srv.Close()
	exec, err := NewExecutor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	servedConfig(cfg, srv.URL, "other/model")
	began := time.Now()
	_, err = Play(context.Background(), cfg, exec, l, eng, servedJobs(cfg), nil)
	if err == nil || !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), "other/model") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("an unserved model: %v", err)
	}
	if time.Since(began) > preflightTimeout+5*time.Second {
		t.Fatalf("the preflight took %v", time.Since(began))
	}

	nan := httptest.NewServer(fakeengine.NewSGLang(fakeengine.Model{Name: "fake/qwen"}, fakeengine.SGLangOptions{Fault: fakeengine.SGLangNaN, FaultAfter: 1}))
	defer nan.Close()
	servedConfig(cfg, nan.URL, "fake/qwen")
	played, err := Play(context.Background(), cfg, exec, l, eng, servedJobs(cfg), nil)
	if err != nil {
		t.Fatalf("a malformed reply failed the step: %v", err)
	}
	for _, p := range played {
		if p.Episode.Healthy || !strings.Contains(*p.Episode.UnhealthyReason, "the served reference") {
			t.Fatalf("episode %s: healthy %v, reason %v", p.Episode.EpisodeID, p.Episode.Healthy, p.Episode.UnhealthyReason)
		}
	}
}
