package main

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/comparisons"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/paradigms"
)

func newAblationsCmd() *cobra.Command {
	var o comparisons.Options
	var configPath string
	var variants, betaNames, betaValues []string
	for _, v := range comparisons.Variants() {
		if v.Beta != 0 {
			betaNames = append(betaNames, v.Name)
			betaValues = append(betaValues, fmt.Sprintf("%g", v.Beta))
		}
	}
	cmd := &cobra.Command{
		Use:   "ablations [--dir DIR] [--seeds N] [--steps S] [--variants NAME,...]",
		Short: "Run the paper's comparison study (Table 2, Figure 4a) and a study over β at a reduced scale and tabulate them",
		Long: `Train and evaluate every variant of the paper's comparisons, once per seed, each as an ordinary
run folder DIR/<variant>-s<seed> made as ` + "`evosteer init --ablate` / `objective:`" + ` would make it:
  full                      the method (its runs also evaluate ρ and the fixed paradigms)
  ` + strings.Join(config.Ablations, ", ") + `
                            the ablations of paper appendix D, one at a time
  tb, ttb, ppo, grpo        the other training objectives (Figure 4a)
  ` + strings.Join(betaNames, ", ") + `            the full method at anchortb.beta = ` + strings.Join(betaValues, ", ") + ` (the β study; the
                            configuration's β, 2 by default, is the full method's own runs);
                            their runs also evaluate ρ
Every run uses the built-in configuration (or --config) with the seed base+k−1 for seed k, the
given steps, task records per step and test tasks per benchmark. The variants of one seed share
its tasks and evaluation episode seeds, so their differences are paired.

Then writes DIR/table2.md (Table 2: ρ, the fixed paradigms, each ablation and the full method,
per benchmark, block averages and the paired difference from the full method; a cell that
cannot be computed, with the block averages over it, reads "n/a: why", e.g. the searched
workflow on a benchmark whose task type has no training task, as ALFWorld and WebShop under
configs/paper-run.yaml's pilot),
DIR/objectives.md (Figure 4a: OOD scores of each objective with the update stage's wall time and
work per episode) and DIR/beta.md (the β study: per β, the IID and OOD averages of θ and ρ and
θ − ρ, paired by seed and evaluation run within each run folder, with its std and the number of
pairs), computed with DuckDB over all run folders (sql/comparison_*.sql), and prints them. Stage
wall times are kept in DIR/timings/, outside the run folders.

Resumes: trained steps are skipped and finished evaluations kept, so an interrupted study goes
on where it stopped. Any number can be re-queried across runs, e.g.
  evosteer sql --run DIR/full-s1 --run DIR/value-head-s1 "SELECT run_name, avg(value) FROM decisions GROUP BY ALL"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			vs, err := comparisons.Select(variants)
			if err != nil {
				return err
			}
			o.Variants = vs
			o.Config = func() (*config.Config, error) { return loadConfig(configPath) }
			o.Version = codeVersion()
			o.Log = cmd.ErrOrStderr()
			t, err := comparisons.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n%s\n%s\ntables: %s/%s, %s/%s; the β study: %s/%s\n", t.Table2, t.Objectives, t.Beta,
				o.Dir, comparisons.Table2File, o.Dir, comparisons.ObjectivesFile, o.Dir, comparisons.BetaFile)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Dir, "dir", "runs/ablations", "study folder (one run folder per variant and seed)")
	fl.StringVar(&configPath, "config", "", "configuration file overlaid on the built-in pipeline.yaml for every run")
	fl.StringSliceVar(&variants, "variants", nil, "run only these variants besides full (comma-separated; default: all)")
	fl.IntVar(&o.Seeds, "seeds", 2, "runs per variant, each with its own seed")
	fl.IntVar(&o.Steps, "steps", 40, "training steps per run (the paper: 240)")
	fl.IntVar(&o.Tasks, "tasks", 32, "task records per training step (batch.tasks)")
	fl.IntVar(&o.TestPerFamily, "test-tasks", 128, "test tasks per benchmark (tasks.test_per_family)")
	fl.IntVar(&o.EvalRuns, "eval-runs", 2, "evaluation runs per run folder")
	fl.StringSliceVar(&o.Paradigms, "paradigms", paradigms.Baselines, "fixed paradigms (and the direct baseline) evaluated in the full method's runs")
	fl.IntVar(&o.SearchPerFamily, "search-tasks", 32, "training tasks per task type the searched workflow's search plays each template on")
	fl.IntVar(&o.Jobs, "jobs", runtime.NumCPU(), "runs trained at once (a run mostly keeps one core busy)")
	return cmd
}
