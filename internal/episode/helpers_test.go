package episode

import (
	"fmt"
	"testing"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/sim"
)

// untrained is the default configuration with the untrained learner (π_θ = ρ) and an engine.
func untrained(t testing.TB) (*config.Config, *gpu.Learner, *gpu.Engine) {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	eng, err := gpu.OpenEngine(cfg.Compute.Backend)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	return cfg, gpu.NewLearner(gpu.OptionsFromConfig(cfg, policy.StateWidth(len(cfg.Families))), nil), eng
}

// testBatch is 12 training tasks of the simulated world (two per family), each with the
// configured π_θ and π_ρ episodes as a rollout names and seeds them, and their environment on
// exec with the untrained learner.
func testBatch(t testing.TB, exec func(*config.Config) executor.Executor) ([]Job, *env) {
	cfg, l, eng := untrained(t)
	var jobs []Job
	for _, f := range cfg.Families {
		for _, task := range sim.Tasks(cfg.Sim, cfg.Seed, f, f, "train", 2) {
			for _, src := range []struct {
				name string
				n    int
			}{{"current", cfg.Batch.CurrentRollouts}, {"natural_reference", cfg.Batch.ReferenceRollouts}} {
				for k := range src.n {
					id := fmt.Sprintf("1/%s/%s/%d", task.ID, src.name, k)
					jobs = append(jobs, Job{Task: task, Source: src.name, ID: id, Seed: seed.Derive(cfg.Seed, id), Theta: src.name == "current"})
				}
			}
		}
	}
	return jobs, newEnv(cfg, exec(cfg), l, eng)
}
