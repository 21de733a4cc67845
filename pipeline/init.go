package pipeline

import (
	"context"
	"slices"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// Init creates the run folder dir with cfg (populate writes its task files) and step 0's
// learner, the untrained π_θ = ρ that step 1 rolls out. Both are written before the folder
// appears (rundir.Init), so an interrupted Init leaves no run behind. The returned run holds
// its lock.
func Init(ctx context.Context, dir string, cfg *config.Config, version string, populate func(*rundir.Folder) error) (*rundir.Folder, error) {
	return rundir.Init(dir, cfg, version, func(r *rundir.Folder) error {
		if populate != nil {
			if err := populate(r); err != nil {
				return err
			}
		}
		_, err := r.RunStage(ctx, 0, learner.Initial{}, false)
		return err
	})
}

// WriteSimTasks writes the simulated world's task records of a run (nothing for other
// executors): tasks/train.arrow with tasks.train_per_family tasks per IID family, and
// tasks/test.arrow with tasks.test_per_family per benchmark, IID and OOD — fewer where the
// benchmark has fewer test items (tasks.TestSize: AIME 2026's 30).
func WriteSimTasks(r *rundir.Folder) error {
	cfg := r.Config
	if cfg.Executor.Backend != "sim" {
		return nil
	}
	lin := schema.Lineage{Run: r.Name, Stage: "init", ConfigSHA256: cfg.SHA256()}
	for _, split := range []string{"train", "test"} {
		if err := tasks.WriteFile(r.TasksPath(split), lin, SimTasks(cfg, split)); err != nil {
			return err
		}
	}
	return nil
}

// SimTasks are the simulated world's tasks of a split: tasks.train_per_family per IID family
// for "train"; for "test" tasks.test_per_family per benchmark, IID and OOD, fewer where the
// benchmark has fewer test items (tasks.TestSize).
func SimTasks(cfg *config.Config, split string) []tasks.Task {
	families, n := cfg.Families, cfg.Tasks.TrainPerFamily
	if split == "test" {
		oods := make([]string, 0, len(cfg.OODFamilies))
		for f := range cfg.OODFamilies {
			oods = append(oods, f)
		}
		slices.Sort(oods)
		families, n = append(slices.Clone(cfg.Families), oods...), cfg.Tasks.TestPerFamily
	}
	var ts []tasks.Task
	for _, f := range families {
		taskType, _ := cfg.TaskType(f)
		k := n
		if split == "test" {
			k = tasks.TestSize(f, n)
		}
		ts = append(ts, sim.Tasks(cfg.Sim, cfg.Seed, f, taskType, split, k)...)
	}
	return ts
}
