package main

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/pipeline"
)

func newPilotCmd() *cobra.Command {
	var path, out string
	var taskFiles []string
	var samples int
	cmd := &cobra.Command{
		Use:   "pilot --out DIR [--config FILE] [--tasks FILE...] [--samples 8]",
		Short: "Play a solver-only pilot on the training tasks and keep those neither always solved nor always failed",
		Long: `Play --samples episodes (default: tasks.pilot.samples, else 8) of the pilot policy, the
single_agent paradigm (one solver, no skills), on every training task that init with the same
--config and --tasks would write (the simulated world's tasks.train_per_family per IID family,
or the rows with split "train" of the task files, IID families only) outside
tasks.pilot.exclude_families, with the configured executor. Each episode is
seeded from the config seed, the task id and the sample index, so the same inputs give the
same bytes. A task succeeds in an episode whose reward is at least admission.success_threshold;
p̂ = successes / samples.

Resumable: every 64 tasks the finished rows are kept in DIR/.pilot-parts; a pilot killed and run
again with the same inputs plays only what is left and writes the same bytes as an
uninterrupted one (the folder is removed when the pilot completes). Each part carries the
lineage of its inputs (the configuration's sha256, the samples, the seed, the paradigm, the task
files' sha256s): a part made from other inputs is played again, and named with what differs.

It writes into DIR (created if missing; the files replaced whole, never half-written):
  pilot.arrow  the pilot table (pilot@1): task_id, family, samples, successes, p_hat, kept,
               kept = 0 < p̂ < 1; query it with evosteer sql --run DIR "SELECT * FROM pilot"
  pool.jsonl   the kept tasks in init --tasks' JSONL rows, each with prior_rate = p̂ and
               prior_count = samples (the anchors' success-rate prior)
  pool.arrow   the same rows as a tasks table (tasks@1), which init --tasks also reads. The
               simulated world's code and ALFWorld tasks lack the reference rows' hidden-test
               and game fields the JSONL reader requires, so a simulated pool trains from
               pool.arrow (pilot says so when pool.jsonl would be refused)

A configuration with tasks.pilot (configs/paper-run.yaml) has init play this pilot itself and
train on its pool (tasks/pilot.arrow in the run). Without it, train on the pool by hand
(METHOD.md §1.4):
  evosteer pilot --config FILE --out pilot/
  evosteer init  --config FILE --tasks pilot/pool.jsonl --run runs/pooled   (task files)
  evosteer init  --config FILE --tasks pilot/pool.arrow --run runs/pooled   (simulated world)

The pool holds training rows only: add the test rows' file to init's --tasks to evaluate.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(path)
			if err != nil {
				return err
			}
			log := cmd.ErrOrStderr()
			res, err := pipeline.Pilot(cmd.Context(), cfg, taskFiles, out, pipeline.PilotOptions{Samples: samples, Progress: progressLines(log, "pilot")})
			if err != nil {
				return err
			}
			type acc struct {
				tasks, kept int
				sum         float64
			}
			by := map[string]*acc{}
			var order []string
			for _, r := range res.Rows {
				a := by[r.Family]
				if a == nil {
					a = &acc{}
					by[r.Family] = a
					order = append(order, r.Family)
				}
				a.tasks++
				a.sum += r.PHat
				if r.Kept {
					a.kept++
				}
			}
			slices.Sort(order)
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%-16s %6s %6s %10s\n", "family", "tasks", "kept", "mean p_hat")
			for _, f := range order {
				a := by[f]
				fmt.Fprintf(w, "%-16s %6d %6d %10.3f\n", f, a.tasks, a.kept, a.sum/float64(a.tasks))
			}
			for _, r := range res.Replayed {
				fmt.Fprintf(log, "pilot: %s\n", r)
			}
			if res.Resumed > 0 {
				fmt.Fprintf(log, "pilot: resumed %d tasks finished by an earlier, interrupted pilot into %s\n", res.Resumed, out)
			}
			if res.Excluded > 0 {
				fmt.Fprintf(w, "pilot: %d training tasks of tasks.pilot.exclude_families %v not played\n", res.Excluded, cfg.Tasks.Pilot.ExcludeFamilies)
			}
			fmt.Fprintf(w, "pilot: %d of %d tasks kept (0 < p̂ < 1) in %s; the table in %s\n", len(res.Pool), len(res.Rows),
				filepath.Join(out, pipeline.PoolFile), filepath.Join(out, pipeline.PilotFile))
			if res.JSONLErr != nil {
				fmt.Fprintf(log, "note: init --tasks refuses %s (%v): train with --tasks %s, the same rows as a tasks table\n",
					pipeline.PoolFile, res.JSONLErr, filepath.Join(out, pipeline.PoolTable))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", "", "configuration file overlaid on the built-in pipeline.yaml")
	cmd.Flags().StringVar(&out, "out", "", "folder to write pilot.arrow and pool.jsonl into (required)")
	cmd.Flags().StringSliceVar(&taskFiles, "tasks", nil, "task files (JSONL, reference row schema) as init --tasks reads them; repeat or comma-separate")
	cmd.Flags().IntVar(&samples, "samples", 0, "episodes of the pilot policy per training task (0: tasks.pilot.samples, else 8)")
	cmd.MarkFlagRequired("out")
	return cmd
}
