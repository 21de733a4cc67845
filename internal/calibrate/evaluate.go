package calibrate

import (
	"context"
	"fmt"
	"strconv"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/episode"
	"github.com/evosteer/evosteer-go/internal/paradigms"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

// Sample is a fixed set of tasks per benchmark and the seeds its episodes are played with: every
// evaluation of a sample plays the same tasks with the same episode seeds, whatever the
// parameters (common random numbers).
type Sample struct {
	Split string
	Tasks map[string][]tasks.Task // benchmark -> tasks
	Reps  int                     // runs: every task once per run, each run with its own seeds
	Seed  uint64
	// MinEpisodes, when positive, plays a benchmark with fewer tasks (AIME's 30 test problems)
	// several times within each run, with other seeds, until a cell has at least this many
	// episodes: its score is then no noisier than the others'.
	MinEpisodes int
}

// plays is how many times each task of benchmark b is played within one run.
func (s *Sample) plays(b string) int { return playsToReach(len(s.Tasks[b]), s.MinEpisodes) }

// playsToReach is how many times n tasks are played in a run to reach at least minEpisodes
// (once when n already does, or when minEpisodes is unset).
func playsToReach(n, minEpisodes int) int {
	if minEpisodes <= n || n == 0 {
		return 1
	}
	return (minEpisodes + n - 1) / n
}

// NewSample draws perBenchmark tasks of each benchmark from the world's split ("train" for the
// fit, "test" for the held-out check; a benchmark with fewer tasks in the split, such as AIME's
// 30 test problems, keeps them all).
func NewSample(cfg *config.Config, benchmarks []string, split string, perBenchmark, reps int, sampleSeed uint64) (*Sample, error) {
	s := &Sample{Split: split, Tasks: map[string][]tasks.Task{}, Reps: max(1, reps), Seed: sampleSeed}
	for _, b := range benchmarks {
		tt, ok := cfg.TaskType(b)
		if !ok {
			return nil, fmt.Errorf("calibrate: benchmark %q is not a family of the configuration", b)
		}
		taskType := ""
		if tt != b {
			taskType = tt
		}
		n := perBenchmark
		if split == "test" {
			n = tasks.TestSize(b, n) // the benchmark's own test size where it has fewer items (AIME's 30)
		}
		s.Tasks[b] = sim.Tasks(cfg.Sim, cfg.Seed, b, taskType, split, n)
	}
	return s, nil
}

// Scores are cell scores in points.
type Scores map[Key]float64

// Evaluate is EvaluateRuns averaged over the sample's repetitions.
func Evaluate(ctx context.Context, cfg *config.Config, s *Sample, benchmarks, policies []string, workflows paradigms.Workflows) (Scores, error) {
	runs, err := EvaluateRuns(ctx, cfg, s, benchmarks, policies, workflows)
	if err != nil {
		return nil, err
	}
	return Mean(runs), nil
}

// Mean is the cell-wise mean of runs.
func Mean(runs []Scores) Scores {
	out := Scores{}
	for _, r := range runs {
		for k, v := range r {
			out[k] += v / float64(len(runs))
		}
	}
	return out
}

// EvaluateRuns plays the policies on the sample's benchmarks in the world cfg describes and returns
// each cell's mean reward in points, one Scores per repetition (an evaluation run: every task
// once, with the run's own episode seeds). workflows are searched_workflow's frozen templates per task
// type (needed only when it is among the policies). ρ is the reference prior played as a script
// with an empty skill menu, the untrained architecture (its network's logits equal the prior).
func EvaluateRuns(ctx context.Context, cfg *config.Config, s *Sample, benchmarks, policies []string, workflows paradigms.Workflows) ([]Scores, error) {
	scripts := map[string]policy.Policy{}
	for _, p := range policies {
		if p == Reference {
			scripts[p] = policy.NewPrior(cfg.Prior)
			continue
		}
		var wf paradigms.Workflows
		if p == paradigms.SearchedWorkflow {
			wf = workflows
		}
		pp, err := paradigms.New(p, wf)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %w", err)
		}
		scripts[p] = pp
	}
	var jobs []episode.Job
	type cell struct {
		Key
		rep int
	}
	var keys []cell
	for _, b := range benchmarks {
		for _, p := range policies {
			for rep := range s.Reps {
				for play := range s.plays(b) {
					for _, t := range s.Tasks[b] {
						parts := []string{"calibrate", strconv.Itoa(rep), t.ID}
						if play > 0 {
							parts = append(parts, strconv.Itoa(play))
						}
						jobs = append(jobs, episode.Job{Task: t, ID: fmt.Sprintf("calibrate/%s/%d/%d/%s", p, rep, play, t.ID), Source: p,
							Seed: seed.Derive(s.Seed, parts...), Script: scripts[p]})
						keys = append(keys, cell{Key{b, p}, rep})
					}
				}
			}
		}
	}
	played, err := episode.Play(ctx, cfg, sim.New(cfg.Sim, cfg.Seed), nil, nil, jobs, nil)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	sum, n := map[cell]float64{}, map[cell]float64{}
	for i, p := range played {
		sum[keys[i]] += p.Episode.Reward
		n[keys[i]]++
	}
	out := make([]Scores, s.Reps)
	for i := range out {
		out[i] = Scores{}
	}
	for k, v := range sum {
		out[k.rep][k.Key] = 100 * v / n[k]
	}
	return out, nil
}
