package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/stages/report"
)

func newReportCmd() *cobra.Command {
	var run, out string
	cmd := &cobra.Command{
		Use:   "report --run DIR [--out DIR]",
		Short: "Write an HTML and Markdown report with the training curves, diagnostics and evaluation of a run",
		Long: `Read every step of the run folder and write a report into DIR/report (or --out):
index.html, one self-contained page (figures embedded, no external resources; open it in any
browser), report.md with the same content, and each figure as a PNG. The folder is replaced
whole, atomically; the same run gives byte-identical files. Runs on the simulated world
(executor.backend: sim) are labelled so: their numbers say whether the machinery works, not
what any LLM scores. Sections:

  1 rewards        mean reward per step of the healthy pi_theta rollouts (source current) and
                   of the frozen reference rho (natural_reference), plus the fraction of
                   unhealthy episodes (paper Fig. 3b)
  2 loss           the AnchorTB batch loss per update against loss_rho (every delta-l = 0) and
                   the anchor-only level loss_anchor (delta-l = 0 and b_psi = 0) (Fig. 3b)
  3 anchor_auc     AUC (Mann-Whitney, exact with ties) of the leave-one-out task anchor p-hat
                   against the task-family mean m_category for predicting the success
                   (reward >= admission.success_threshold) of the reference rollouts of
                   steps 2..k, cumulative over k (Fig. 4c)
  4 edit_outcomes  each edit (action other than STOP) is better / same / worse when the graded
                   score of the output rises / stays / falls from the decision before it to
                   just after it; shares per action kind, for pi_theta and rho (Fig. 4e)
  5 skills         the admission ledger's events per step (proposal, promote, retire, retain,
                   defer, defer_capacity, supersede) and the cumulative alpha spent against
                   the budget admission.alpha, with a table of every promotion and retirement;
                   a run still in warm-up says so instead
  6 evaluation     eval/results.arrow as the paper's Table 1: IID and OOD blocks, mean +- std
                   over runs, Avg rows with sqrt(sum sigma_b^2)/n; absent until evosteer eval
  7 probe          only when the run was probed (evosteer probe): per probed step, the expected
                   reward at the first decision under rho, theta and the target pi*, theta's
                   slope toward pi*, TV, coverage and KL, per family for the last probed step,
                   with its verdict (limited by its target, or by optimisation)

A step that is only partly written shows what it has. Then print where the report is.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := rundir.Open(run)
			if err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join(r.Dir, "report")
			}
			rep, err := report.Build(r)
			if err != nil {
				return err
			}
			if err := rep.Write(out); err != nil {
				return err
			}
			figures := 0
			for _, s := range rep.Sections {
				if s.PNG != nil {
					figures++
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "report: %s (%d sections, %d figures; also %s and the PNGs)\n",
				filepath.Join(out, report.HTMLFile), len(rep.Sections), figures, report.MarkdownFile)
			return nil
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "run folder (required)")
	cmd.Flags().StringVar(&out, "out", "", "report folder, replaced whole (default DIR/report)")
	cmd.MarkFlagRequired("run")
	return cmd
}
