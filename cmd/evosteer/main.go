// Command evosteer runs the EvoSteer pipeline: configuration, run folders, the stages of a
// training step, and SQL over every file a run wrote. `evosteer --help` lists the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// stoppedBy is the cause of the command's context when a stop signal cancelled it.
type stoppedBy struct{ sig syscall.Signal }

func (s stoppedBy) Error() string { return s.sig.String() + " received" }

// stopOnSignal returns a context cancelled, with a stoppedBy cause, by the first SIGINT (Ctrl-C)
// or SIGTERM (kill, a service manager, a batch scheduler's time limit); later ones are ignored
// until stop is called, so the command can finish its cleanup.
func stopOnSignal() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() { cancel(stoppedBy{(<-ch).(syscall.Signal)}) }()
	return ctx, func() { signal.Stop(ch); cancel(nil) }
}

func main() {
	ctx, stop := stopOnSignal()
	defer stop()
	err := newRoot().ExecuteContext(ctx)
	var sig stoppedBy
	switch {
	case err != nil && errors.As(context.Cause(ctx), &sig):
		// 128 + the signal, as a shell reports a command the signal ended (130 for Ctrl-C, 143
		// for SIGTERM).
		what := "interrupted"
		if sig.sig == syscall.SIGTERM {
			what = "stopped by SIGTERM"
		}
		fmt.Fprintf(os.Stderr, "evosteer: %s. Every finished stage is kept and nothing half-written is; run the same command again to resume where it stopped.\n", what)
		os.Exit(128 + int(sig.sig))
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
	root.AddCommand(newConfigCmd(), withDoctor(newInitCmd()), newInspectCmd(), newSQLCmd(), newRolloutCmd(), newRescoreCmd(), newAggregateCmd(), newUpdateCmd(), newGradeCmd())
	root.AddCommand(newValidateCmd(), newAuthorCmd(), withDoctor(newStepCmd()), withDoctor(newTrainCmd()), newEvalCmd(), newProbeCmd(), newReportCmd(), newCostsCmd(), newAblationsCmd(), newExactCmd(), newCalibrateCmd(), newDoctorCmd(), newPilotCmd(), newLMCmd())
	return root
}
