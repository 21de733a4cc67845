package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// Init creates the run folder dir with cfg (populate writes its task files; under tasks.pilot
// the training tasks are then narrowed to the pilot pool, PilotPool) and step 0's learner, the
// untrained π_θ = ρ that step 1 rolls out. Both are written before the folder
// appears (rundir.Init), so an interrupted Init leaves no run behind. The returned run holds
// its lock.
func Init(ctx context.Context, dir string, cfg *config.Config, version string, populate func(*rundir.Folder) error) (*rundir.Folder, error) {
	return rundir.Init(dir, cfg, version, func(r *rundir.Folder) error {
		if populate != nil {
			if err := populate(r); err != nil {
				return err
			}
		}
		if cfg.Tasks.Pilot != nil {
			if err := PilotPool(ctx, r); err != nil {
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

// PilotFileInRun is the pilot table of a run initialised under tasks.pilot, beside its task
// records.
var PilotFileInRun = filepath.Join(layout.TasksDir, PilotFile)

// PilotPool narrows a new run's training tasks to its pilot pool (tasks.pilot, METHOD.md
// §1.4): it plays the pilot on the IID families' training tasks outside
// tasks.pilot.exclude_families, writes the pilot table as tasks/pilot.arrow and replaces
// tasks/train.arrow with the kept tasks (0 < p̂ < 1, prior_rate = p̂, prior_count = samples),
// keeping the file's lineage. The test split is left whole. It runs inside init's temporary
// folder, so a killed init leaves no run and the next one plays the pilot again, to the same
// bytes; `evosteer pilot --out DIR` is the resumable form.
func PilotPool(ctx context.Context, r *rundir.Folder) error {
	cfg, path := r.Config, r.TasksPath("train")
	f, err := schema.Tasks.Open(path)
	if err != nil {
		return fmt.Errorf("pilot pool: %w", err)
	}
	lin := f.Lineage
	f.Close()
	train, err := tasks.ReadFile(path)
	if err != nil {
		return fmt.Errorf("pilot pool: %w", err)
	}
	res, err := configuredPilot(ctx, cfg, iidTasks(cfg, train))
	if err != nil {
		return err
	}
	if len(res.Pool) == 0 {
		return fmt.Errorf("pilot pool: the pilot kept none of %d training tasks (every one always solved or always failed): nothing to train on", len(res.Rows))
	}
	if err := schema.WriteRows(schema.Pilot, filepath.Join(r.Dir, PilotFileInRun), lin, res.Rows); err != nil {
		return fmt.Errorf("pilot pool: %w", err)
	}
	return tasks.WriteFile(path, lin, res.Pool)
}
