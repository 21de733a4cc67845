// Command evosteer runs the EvoSteer pipeline: configuration, run folders, the stages of a
// training step, and SQL over every file a run wrote. `evosteer --help` lists the commands.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := newRoot().ExecuteContext(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		// 128 + SIGINT, as a shell reports a command Ctrl-C ended.
		fmt.Fprintln(os.Stderr, "evosteer: interrupted. Every finished stage is kept and nothing half-written is; run the same command again to resume where it stopped.")
		os.Exit(130)
	case err != nil:
		printError(os.Stderr, err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "evosteer",
		Short: "Train orchestrators of LLM-agent teams with AnchorTB and validated skill admission",
		Long: `evosteer is a batch pipeline over columnar trajectory logs. A run folder holds the
resolved configuration (run.yaml) and one folder per training step; every stage reads and
writes Arrow IPC files there, and every file can be queried with SQL.

Start with:
  evosteer init --run runs/demo        create a run from the default pipeline.yaml
  evosteer sql  --run runs/demo "..."  query every table the run wrote`,
		Version:       codeVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newConfigCmd(), newInitCmd(), newInspectCmd(), newSQLCmd(), newRolloutCmd(), newRescoreCmd(), newAggregateCmd(), newUpdateCmd(), newGradeCmd())
	root.AddCommand(newValidateCmd(), newAuthorCmd(), newStepCmd(), newTrainCmd(), newEvalCmd(), newProbeCmd(), newReportCmd(), newAblationsCmd(), newExactCmd(), newCalibrateCmd())
	return root
}
