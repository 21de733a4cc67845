package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/stages/aggregate"
)

func newAggregateCmd() *cobra.Command {
	var f stageFlags
	var check bool
	cmd := &cobra.Command{
		Use:   "aggregate --run DIR --step K [--force] [--check]",
		Short: "Compute a step's task anchors, structure buckets, lagged corrections, value-head data and pairs",
		Long: `Aggregate training step K with DuckDB SQL over its rollout files (every shard) and write
step-NNNNNN/aggregate/{anchors,buckets,corrections,value_data,pairs,anchor_pool,pairs_used}.arrow:

  anchors      the hierarchical-shrinkage task anchor of every episode (sql/baselines.sql, Def. B.2);
               the pool is the healthy natural-reference episodes of steps 1..K, leave-one-out
  buckets      the cumulative structure buckets after step K (sql/buckets.sql, Def. B.3)
  corrections  c(g(s_t)) of every decision, from step K-1's buckets (sql/corrections.sql)
  value_data   the value head's training states (sql/value_data.sql)
  pairs        the step's paired comparisons: win/loss/tie and eligibility (sql/pairs.sql)
  anchor_pool  the anchor pool after step K, per task: reward sum and count (sql/anchor_pool.sql)
  pairs_used   the (comparison, task) keys eligible pairs of steps 1..K used (sql/pairs_used.sql)

Step K > 1 needs the aggregate of step K-1 (its buckets, anchor pool and used pair keys carry
the history forward) and no other file of an earlier step. Then print a summary. --check
recomputes the seven tables with the plain-Go oracle (internal/stats) from the whole history
(every step's episodes, every earlier step's pairs), compares them with the written files (the
five tables within tolerance 1e-12, anchor_pool and pairs_used exactly), prints "ok" or the
first mismatching row per table, and fails on a mismatch.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := f.runStage(cmd, cmd.ErrOrStderr(), aggregate.Stage{})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !check {
				return nil
			}
			results, err := aggregate.Check(r, f.step)
			if err != nil {
				return fmt.Errorf("check: %w", err)
			}
			failed := 0
			fmt.Fprintf(out, "check against internal/stats (tolerance %g):\n", aggregate.Tolerance)
			for _, c := range results {
				exact := ""
				if c.Exact {
					exact = ", exact"
				}
				if c.Mismatch == "" {
					fmt.Fprintf(out, "  %-12s ok (%d rows%s)\n", c.Table, c.Rows, exact)
				} else {
					failed++
					fmt.Fprintf(out, "  %-12s MISMATCH: %s\n", c.Table, c.Mismatch)
				}
			}
			if failed > 0 {
				return fmt.Errorf("check: %d of %d tables differ from the oracle", failed, len(results))
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&check, "check", false, "recompute the outputs with the plain-Go oracle and compare")
	return cmd
}
