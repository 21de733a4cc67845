package pipeline

import (
	"fmt"
	"os"
	"slices"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// SmallPools names the families with fewer training tasks than their share of a step's batch:
// a step never holds a task twice (rollout.Schedule), so their steps hold fewer tasks than
// batch.tasks.
func SmallPools(r *rundir.Folder) ([]string, error) {
	path := r.TasksPath("train")
	if _, err := os.Stat(path); err != nil {
		return nil, nil // no training tasks yet (a backend that brings its own)
	}
	train, err := tasks.ReadFile(path)
	if err != nil {
		return nil, err
	}
	per := map[string]int{}
	for _, t := range train {
		per[t.Family]++
	}
	active := 0
	for _, f := range r.Config.Families {
		if per[f] > 0 {
			active++
		}
	}
	if active == 0 {
		return nil, nil
	}
	batch := r.Config.Batch.Tasks
	share := (batch + active - 1) / active
	var notes []string
	for _, f := range r.Config.Families {
		if n := per[f]; n > 0 && n < share {
			notes = append(notes, fmt.Sprintf("family %s has %d training tasks, fewer than its share of a step's batch (up to %d of batch.tasks %d over %d families): a step uses each of them once, so steps hold fewer than %d tasks", f, n, share, batch, active, batch))
		}
	}
	return notes, nil
}

// ImportTasks copies task files (the reference's JSONL rows, or Arrow) into a new run by split:
// rows with split "train" to tasks/train.arrow, "test" to tasks/test.arrow. Every row's family
// must be among the configuration's, and the pool must hold something to train on.
func ImportTasks(r *rundir.Folder, paths []string) error {
	cfg := r.Config
	splits, inputs, err := ReadTaskFiles(cfg, paths)
	if err != nil {
		return err
	}
	lin := schema.Lineage{Run: r.Name, Stage: "init", ConfigSHA256: cfg.SHA256(), Inputs: inputs}
	for _, split := range []string{"train", "test"} {
		if err := tasks.WriteFile(r.TasksPath(split), lin, splits[split]); err != nil {
			return err
		}
	}
	return nil
}

// ReadTaskFiles reads task files as init --tasks does: the rows by split ("train", "test"; in
// task id order), every row's family among the configuration's, at least one training task of
// an IID family; and the sha256 of each file by its path as given (the lineage's inputs).
func ReadTaskFiles(cfg *config.Config, paths []string) (map[string][]tasks.Task, map[string]string, error) {
	byID, err := tasks.LoadFiles(paths)
	if err != nil {
		return nil, nil, err
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	splits := map[string][]tasks.Task{"train": {}, "test": {}}
	for _, id := range ids {
		t := byID[id]
		if tt, ok := cfg.TaskType(t.Family); !ok || tt != t.TaskType {
			return nil, nil, fmt.Errorf("task %s: family %s (task type %s) is not among the configuration's families and ood_families", id, t.Family, t.TaskType)
		}
		if _, ok := splits[t.Split]; !ok {
			return nil, nil, fmt.Errorf("task %s: split %q: a run holds train and test tasks only", id, t.Split)
		}
		splits[t.Split] = append(splits[t.Split], t)
	}
	// Training plays only the IID families' training tasks: a pool without one would fail three
	// stages into the first step.
	trainable, ood := 0, 0
	for _, t := range splits["train"] {
		if slices.Contains(cfg.Families, t.Family) {
			trainable++
		} else {
			ood++
		}
	}
	if trainable == 0 {
		return nil, nil, fmt.Errorf("the task files hold nothing to train on: %d training tasks of the families %v (training uses only these), %d training tasks of OOD families, %d test tasks; add rows with split \"train\" of one of %v",
			trainable, cfg.Families, ood, len(splits["test"]), cfg.Families)
	}
	inputs := map[string]string{}
	for _, p := range paths {
		sum, err := schema.SHA256File(p)
		if err != nil {
			return nil, nil, fmt.Errorf("hash %s: %w", p, err)
		}
		inputs[p] = sum
	}
	return splits, inputs, nil
}

// TrainTasks are the tasks a run created with the same --config and --tasks trains on: the
// training tasks of the IID families, from the task files when paths is not empty (as init
// --tasks reads them), else the simulated world's (sim executor only); with the lineage inputs.
func TrainTasks(cfg *config.Config, paths []string) ([]tasks.Task, map[string]string, error) {
	var train []tasks.Task
	inputs := map[string]string{}
	if len(paths) > 0 {
		splits, in, err := ReadTaskFiles(cfg, paths)
		if err != nil {
			return nil, nil, err
		}
		train, inputs = splits["train"], in
	} else {
		if cfg.Executor.Backend != "sim" {
			return nil, nil, fmt.Errorf("executor backend %s brings no tasks of its own: give the task files with --tasks", cfg.Executor.Backend)
		}
		train = SimTasks(cfg, "train")
	}
	return iidTasks(cfg, train), inputs, nil
}

// iidTasks keeps the tasks of the configuration's IID families, the only ones training plays.
func iidTasks(cfg *config.Config, ts []tasks.Task) []tasks.Task {
	return slices.DeleteFunc(slices.Clone(ts), func(t tasks.Task) bool { return !slices.Contains(cfg.Families, t.Family) })
}
