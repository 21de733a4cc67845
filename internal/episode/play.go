package episode

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/executor/openai"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// Job is one episode to play: a task, the episode's id, source and seed, and who decides — the
// learner's network (Script nil: π_θ when Theta, else π_ρ, shown the published value head) or a
// scripted policy (tests, a fixed paradigm).
type Job struct {
	Task   tasks.Task
	ID     string // the episode_id (the rollout's: {step}/{task_id}/{source}/{index})
	Source string // recorded as the episode's source (current, natural_reference, a policy's name)
	Seed   uint64
	Theta  bool
	Script policy.Policy
	Menu   skills.Menu // the frozen skill menu of the task's family
	// First, when set, forces the episode's first action exactly as a paired arm's is forced:
	// taken with certainty (the decision row is marked forced, behaviour log-prob 0) and not
	// charged to the budget, the rest of the episode decided as above. When it is not among the
	// first decision's legal actions the episode ends unhealthy, with no decision row, saying so.
	First *orchestra.Action
	// ChargeFirst charges the forced first action as a sampled decision is charged: for an
	// episode that stands for one whose first action was sampled (the probe's).
	ChargeFirst bool
	Pair        *Pair // set on the rollout's paired arms, recorded in the episode row

	order int // position in the job list: the order of network batches (set by runAll)
}

// Pair identifies a paired arm.
type Pair struct{ PairID, ComparisonID, SkillID string }

// Played is everything one episode produced.
type Played struct {
	Episode    schema.EpisodeRow
	Decisions  []schema.DecisionRow
	Executions []schema.ExecutionRow
	// Prompts are the controller prompts a served reference scored, one per decision with more
	// than one legal action (none with the prior).
	Prompts []schema.PromptRow
}

// Progress is told, after every finished episode, how many of the total are done.
type Progress func(done, total int)

// Play plays the jobs with the run's orchestration semantics and ablations: the rollout stage's
// decision loop, budget charging and seeding, the network jobs scored in batches as they ask. l and eng may
// be nil when every job is scripted. Results keep the jobs' order.
func Play(ctx context.Context, cfg *config.Config, exec executor.Executor, l *gpu.Learner, eng *gpu.Engine, jobs []Job, progress Progress) ([]Played, error) {
	return PlayKeeping(ctx, cfg, exec, l, eng, jobs, progress, nil)
}

// Finished is told an episode as soon as it has finished: its index in the jobs and what it
// produced. It may be called from several goroutines at once; an error fails the play.
type Finished func(i int, p Played) error

// PlayKeeping is Play that also tells finished (when not nil) each episode as it finishes, so
// that a caller can keep finished work before the whole play ends (the rollout's parts). A
// finished episode is the same whichever other jobs are played with it.
func PlayKeeping(ctx context.Context, cfg *config.Config, exec executor.Executor, l *gpu.Learner, eng *gpu.Engine, jobs []Job, progress Progress, finished Finished) ([]Played, error) {
	js := make([]Job, len(jobs))
	for i, j := range jobs {
		if j.Script == nil && (l == nil || eng == nil) {
			return nil, errors.New("play: a network job needs a learner and an engine")
		}
		js[i] = j
		if j.First != nil {
			first := *j.First
			js[i].First = &first
		}
	}
	if l == nil {
		l = &gpu.Learner{} // no network job asks it anything
	}
	e := newEnv(cfg, exec, l, eng)
	e.finished = finished
	if lm, ok := l.Policy.(*gpu.CausalLM); ok {
		e.ref = modelReference{prior: priorReference{policy.NewPrior(cfg.Prior)}, lm: lm}
	}
	if cfg.Served != nil { // newEnv gives the prior
		ref, err := newServedReference(ctx, cfg.Served)
		if err != nil {
			return nil, err
		}
		e.ref = ref
	}
	eps, err := runAll(ctx, e, js, workers(cfg), progress)
	if err != nil {
		return nil, err
	}
	out := make([]Played, len(eps))
	for i, ep := range eps {
		out[i] = *ep
	}
	return out, nil
}

// started counts the episodes this process has started (Started).
var started atomic.Int64

// Started is the number of episodes this process has started playing, by every Play: what a
// resumed stage's tests count to see that it played only its unfinished episodes.
func Started() int64 { return started.Load() }

// NewExecutor opens the configured executor backend.
func NewExecutor(cfg *config.Config) (executor.Executor, error) {
	switch cfg.Executor.Backend {
	case "sim":
		return sim.New(cfg.Sim, cfg.Seed), nil
	case "openai":
		return openai.FromConfig(cfg)
	default:
		return nil, fmt.Errorf("executor backend %q is not available in this build (use sim)", cfg.Executor.Backend)
	}
}
