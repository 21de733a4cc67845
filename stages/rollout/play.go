package rollout

import (
	"context"
	"errors"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// Job is one episode to play outside a training step (evaluation, workflow search, the probe):
// a task, the episode's id and seed, and who decides — the learner's network (Script nil: π_θ
// when Theta, else π_ρ, shown the published value head) or a scripted policy (a fixed paradigm).
type Job struct {
	Task   tasks.Task
	ID     string
	Source string // recorded as the episode's source (e.g. the policy's name)
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
}

// Played is everything one episode produced.
type Played struct {
	Episode    schema.EpisodeRow
	Decisions  []schema.DecisionRow
	Executions []schema.ExecutionRow
}

// Play plays the jobs with the run's orchestration semantics and ablations, the same decision
// loop, budget charging and seeding as the rollout stage, the network ones in lockstep waves.
// l and eng may be nil when every job is scripted. Results keep the jobs' order.
func Play(ctx context.Context, cfg *config.Config, exec executor.Executor, l *gpu.Learner, eng *gpu.Engine, jobs []Job, progress Progress) ([]Played, error) {
	js := make([]job, len(jobs))
	for i, j := range jobs {
		if j.Script == nil && (l == nil || eng == nil) {
			return nil, errors.New("play: a network job needs a learner and an engine")
		}
		js[i] = job{task: j.Task, source: j.Source, id: j.ID, seed: j.Seed, order: i, theta: j.Theta, script: j.Script, menu: j.Menu,
			chargeFirst: j.ChargeFirst}
		if j.First != nil {
			first := *j.First
			js[i].first = &first
		}
	}
	if l == nil {
		l = &gpu.Learner{} // no network job asks it anything
	}
	eps, err := runAll(ctx, newEnv(cfg, exec, l, eng, js), js, workers(cfg), progress)
	if err != nil {
		return nil, err
	}
	out := make([]Played, len(eps))
	for i, ep := range eps {
		out[i] = Played{Episode: ep.row, Decisions: ep.decisions, Executions: ep.executions}
	}
	return out, nil
}
