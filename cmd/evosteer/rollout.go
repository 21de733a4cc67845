package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/stages/rollout"
)

func newRolloutCmd() *cobra.Command {
	var f stageFlags
	var shard string
	cmd := &cobra.Command{
		Use:   "rollout --run DIR --step K [--shard i/n]",
		Short: "Roll out one step's episodes (current and natural-reference) and write them as Arrow",
		Long: `Roll out training step K: schedule batch.tasks training tasks balanced over families, play
batch.current_rollouts episodes of pi_theta and batch.reference_rollouts of the frozen reference rho
per task on the configured executor (one atomic edit per decision, executed at once), and write
step-NNNNNN/rollout/{episodes,decisions,executions}.arrow (plus sim_truth.arrow on the simulated
world, and prompts.arrow, what the served reference was asked, with served_reference). Episodes whose executor fails are kept with healthy=false and the reason; the stage fails
when more than rollout.max_unhealthy_share of them are unhealthy. Then print a summary.

--shard i/n rolls out every n-th task starting at the i-th, into *-i-of-n.arrow files, so that
several machines can share one step (docs/CLUSTERS.md: a Slurm job array, a Kubernetes Indexed
Job). Without --shard, over a step whose shards are recorded: the shards missing from the set run
here, then the set is merged into the files a whole rollout writes (nothing is rolled out again);
step and train do the same. A shard of a step already rolled out whole, or merged, is up to date.
--force recomputes (whole, or the one shard).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var sh rollout.Shard
			if shard != "" {
				var err error
				if sh, err = rollout.ParseShard(shard); err != nil {
					return err
				}
				f.shared = sh.Count > 1
			}
			log := cmd.ErrOrStderr()
			_, err := f.runStage(cmd, log, rollout.Stage{Shard: sh, Progress: progressLines(log, layout.Rollout)})
			return err
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&shard, "shard", "", "roll out only shard i of n (\"i/n\")")
	return cmd
}

// progressLines reports progress as a log line at every quarter.
func progressLines(w io.Writer, what string) func(done, total int) {
	return func(done, total int) {
		if done == total || done*4/total != (done-1)*4/total {
			fmt.Fprintf(w, "%s: %d/%d episodes\n", what, done, total)
		}
	}
}
