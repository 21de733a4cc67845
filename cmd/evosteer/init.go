package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/rundir"
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

With tasks.pilot in the configuration (configs/paper-run.yaml), init then plays the solver-only
pilot of ` + "`evosteer pilot`" + ` on the IID training tasks outside tasks.pilot.exclude_families and
trains on its pool: tasks/train.arrow keeps the tasks with 0 < p̂ < 1 (prior_rate = p̂,
prior_count = samples), tasks/pilot.arrow holds the pilot table; the test split is unchanged.

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
		populate = func(r *rundir.Folder) error { return pipeline.ImportTasks(r, taskFiles) }
	}
	r, err := pipeline.Init(cmd.Context(), run, cfg, codeVersion(), populate)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "initialised run %s in %s (config sha256 %s)\n", r.Name, r.Dir, cfg.SHA256())
	if pl := cfg.Tasks.Pilot; pl != nil {
		rows, err := schema.ReadFile[schema.PilotRow](schema.Pilot, filepath.Join(r.Dir, pipeline.PilotFileInRun))
		if err != nil {
			r.Unlock()
			return nil, err
		}
		kept := 0
		for _, row := range rows {
			if row.Kept {
				kept++
			}
		}
		fmt.Fprintf(cmd.OutOrStdout(), "pilot (tasks.pilot: %d samples, families %v left out): trains on %d of %d tasks with 0 < p̂ < 1; the table is %s\n",
			pl.Samples, pl.ExcludeFamilies, kept, len(rows), filepath.Join(r.Dir, pipeline.PilotFileInRun))
	}
	notes, err := pipeline.SmallPools(r)
	if err != nil {
		r.Unlock()
		return nil, err
	}
	for _, n := range notes {
		fmt.Fprintln(cmd.ErrOrStderr(), "note:", n)
	}
	return r, nil
}
