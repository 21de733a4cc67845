package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/pipeline"
	"github.com/evosteer/evosteer-go/schema"
)

func newInitCmd() *cobra.Command {
	var path, run string
	var ablate []string
	var taskFiles []string
	cmd := &cobra.Command{
		Use:   "init --run DIR [--config FILE] [--tasks FILE...]",
		Short: "Create a run folder with its resolved configuration",
		Long: `Create the run folder DIR with run.yaml: the resolved configuration (the built-in
pipeline.yaml with --config overlaid), its sha256 and the code version. Every stage checks that
hash, so a run's configuration cannot drift. DIR must not exist or be empty. The run is built
in a temporary folder beside DIR (.NAME.init-*) and renamed into place, so an interrupted init
leaves no run; the next init of DIR removes what it left.

With the simulated world (executor.backend: sim) it also writes the task records:
tasks/train.arrow (tasks.train_per_family per IID family) and tasks/test.arrow
(tasks.test_per_family per benchmark, IID and OOD; AIME 2026 at most its 30 problems).

--tasks FILE... copies task files in the reference's JSONL row schema into the run instead:
rows with split "train" go to tasks/train.arrow, rows with split "test" to tasks/test.arrow.
Every row's family must be in families or ood_families of the configuration.

A step never holds a task twice: a family with fewer training tasks than its share of
batch.tasks gives each of them once a step, so its steps are smaller; init notes such families.

It writes step 0's learner, step-000000/update/checkpoint/learner.arrow: the policy network with
its adapter at zero (π_θ = ρ), b_ψ = 0 and fresh heads, which step 1 rolls out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := initRun(cmd, run, path, ablate, taskFiles)
			if err != nil {
				return err
			}
			r.Unlock()
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", "", "configuration file overlaid on the built-in pipeline.yaml")
	cmd.Flags().StringVar(&run, "run", "", "run folder to create (required)")
	cmd.Flags().StringArrayVar(&ablate, "ablate", nil, "switch on an ablation of paper appendix D (repeatable): "+strings.Join(config.Ablations, ", "))
	cmd.Flags().StringSliceVar(&taskFiles, "tasks", nil, "task files (JSONL, reference row schema) to copy into the run; repeat or comma-separate")
	cmd.MarkFlagRequired("run")
	return cmd
}

// initRun creates a run folder: the configuration (--config with --ablate switched on), the task
// records, and step 0's learner. The run it returns holds its lock.
func initRun(cmd *cobra.Command, run, path string, ablate, taskFiles []string) (*rundir.Folder, error) {
	cfg, err := loadConfig(path)
	if err != nil {
		return nil, err
	}
	if err := cfg.Ablate(ablate...); err != nil {
		return nil, err
	}
	populate := pipeline.WriteSimTasks
	if len(taskFiles) > 0 {
		populate = func(r *rundir.Folder) error { return writeTaskFiles(r, taskFiles) }
	}
	r, err := pipeline.Init(cmd.Context(), run, cfg, codeVersion(), populate)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "initialised run %s in %s (config sha256 %s)\n", r.Name, r.Dir, cfg.SHA256())
	notes, err := smallPools(r)
	if err != nil {
		r.Unlock()
		return nil, err
	}
	for _, n := range notes {
		fmt.Fprintln(cmd.ErrOrStderr(), "note:", n)
	}
	return r, nil
}

// smallPools names the families with fewer training tasks than their share of a step's batch:
// a step never holds a task twice (rollout.Schedule), so their steps hold fewer tasks than
// batch.tasks.
func smallPools(r *rundir.Folder) ([]string, error) {
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

// writeSimTasks generates the simulated world's task records into a new run: training tasks of
// the IID families, test tasks of every benchmark.
func writeTaskFiles(r *rundir.Folder, paths []string) error {
	cfg := r.Config
	byID, err := loadTaskFiles(paths)
	if err != nil {
		return err
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
			return fmt.Errorf("task %s: family %s (task type %s) is not among the configuration's families and ood_families", id, t.Family, t.TaskType)
		}
		if _, ok := splits[t.Split]; !ok {
			return fmt.Errorf("task %s: split %q: a run holds train and test tasks only", id, t.Split)
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
		return fmt.Errorf("the task files hold nothing to train on: %d training tasks of the families %v (training uses only these), %d training tasks of OOD families, %d test tasks; add rows with split \"train\" of one of %v",
			trainable, cfg.Families, ood, len(splits["test"]), cfg.Families)
	}
	inputs := map[string]string{}
	for _, p := range paths {
		sum, err := schema.SHA256File(p)
		if err != nil {
			return fmt.Errorf("hash %s: %w", p, err)
		}
		inputs[p] = sum
	}
	lin := schema.Lineage{Run: r.Name, Stage: "init", ConfigSHA256: cfg.SHA256(), Inputs: inputs}
	for _, split := range []string{"train", "test"} {
		if err := tasks.WriteFile(r.TasksPath(split), lin, splits[split]); err != nil {
			return err
		}
	}
	return nil
}
