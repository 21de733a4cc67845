package episode

import (
	"context"
	"errors"
	"runtime"
	"sync"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/cpuslot"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/policy"
)

// newEnv is the environment of a step's episodes: the executor, the run's orchestration options
// and ablations, and the learner's network for the network jobs.
func newEnv(cfg *config.Config, exec executor.Executor, l *gpu.Learner, eng *gpu.Engine) *env {
	return &env{exec: exec, families: cfg.Families, ref: priorReference{policy.NewPrior(cfg.Prior)},
		options: orchestra.Options{Budget: cfg.Budget, Interleaved: !cfg.Ablated("interleaved-execution"),
			Repair: !cfg.Ablated("learnable-repair")},
		batches: newBatches(l, eng), useValue: !cfg.Ablated("value-head"), zeroFeatures: cfg.Ablated("execution-features"),
		policyVersion: l.PolicyVersion, valueVersion: l.ValueVersion, temperature: cfg.Policy.Temperature}
}

func workers(cfg *config.Config) int {
	if cfg.Rollout.Workers > 0 {
		return cfg.Rollout.Workers
	}
	return 4 * runtime.NumCPU()
}

// runAll plays every job, all in flight at once, with at most n doing CPU work at a time: an
// episode waiting on a server or a network batch holds no CPU slot, so the requests in flight
// are bounded by each endpoint's cap (executor.openai.max_concurrency), not by n. Results keep
// the jobs' order, and no episode's output depends on scheduling. e.finished, when set, is told
// each finished episode as it finishes (from its goroutine); its error fails the play.
func runAll(ctx context.Context, e *env, jobs []Job, n int, progress Progress) ([]*Played, error) {
	e.cpu = cpuslot.NewPool(n)
	out := make([]*Played, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j := jobs[i]
			j.order = i
			out[i], errs[i] = e.run(ctx, j)
			if errs[i] == nil && e.finished != nil {
				errs[i] = e.finished(i, *out[i])
			}
			mu.Lock()
			done++
			if progress != nil {
				progress(done, len(jobs))
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}
