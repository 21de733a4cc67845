package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/paradigms"
	"github.com/evosteer/evosteer-go/stages/evaluate"
)

func newEvalCmd() *cobra.Command {
	var run string
	var step, runs, searchTasks int
	var paradigmNames []string
	cmd := &cobra.Command{
		Use:   "eval --run DIR [--step K] [--runs N]",
		Short: "Evaluate the trained policy on the test split (the paper's test protocol)",
		Long: `Evaluate run DIR with the paper's test protocol: the learner of step K (default: the last trained
step) — θ with its published value head — and the skill library after step K frozen; no reference,
paired or validation rollouts; every task of tasks/test.arrow played once per run by each policy;
N runs (default 5) with distinct seeds, the policies of a run sharing each task's episode seed.
Policies: evosteer (π_θ), reference (ρ, the untrained architecture: the learner of step 0), and
the fixed paradigms of --paradigms (default single_agent; also fixed_template, plan_execute,
searched_workflow — whose workflows are first searched on the training split and stored in
eval/workflows.json; a benchmark whose task type has no training task, e.g. one a pilot left
out, has none, and its cell says "n/a" and why — and direct, the executor alone: one solver without tools), on the same
executor and budget.

Writes eval/results.arrow (table eval_results: one row per policy × benchmark × run, with the mean
score and executor tokens per task) and eval/table.md, shaped like the paper's Table 1: per
benchmark the mean ± std over runs, IID and OOD blocks each with an Avg row whose ± is
sqrt(Σσ²)/n. Prints the table.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := openLocked(run)
			if err != nil {
				return err
			}
			defer r.Unlock()
			if step <= 0 {
				step = learner.LatestStep(r)
			}
			log := cmd.ErrOrStderr()
			rows, err := evaluate.Run(cmd.Context(), r, evaluate.Options{Step: step, Runs: runs, Paradigms: paradigmNames, SearchPerFamily: searchTasks,
				Progress: func(done, total int) { fmt.Fprintf(log, "eval: %d/%d episodes\n", done, total) }})
			if err != nil {
				return err
			}
			na, err := evaluate.ReadUnavailable(r)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Evaluation of step %d, %d runs:\n\n%s\nresults: %s/%s/%s\n", step, runs,
				evaluate.Table(rows, r.Config, na), r.Dir, layout.Eval, layout.EvalResultsFile)
			return nil
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "run folder (required)")
	cmd.Flags().IntVar(&step, "step", 0, "evaluate the learner and library of this step (default: the last trained step)")
	cmd.Flags().IntVar(&runs, "runs", 5, "evaluation runs, each with its own seed")
	cmd.Flags().StringSliceVar(&paradigmNames, "paradigms", []string{paradigms.SingleAgent}, "fixed paradigms to evaluate beside the networks: "+strings.Join(paradigms.Baselines, ", "))
	cmd.Flags().IntVar(&searchTasks, "search-tasks", 32, "training tasks per task type that searched_workflow's search plays each template on")
	cmd.MarkFlagRequired("run")
	return cmd
}
