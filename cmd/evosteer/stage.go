package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/internal/arrowfmt"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/pipeline"
)

// stageFlags are the flags every stage command takes.
type stageFlags struct {
	run   string
	step  int
	force bool
	// shared: the stage is a shard that other processes may write beside this one, so it takes
	// the run's lock shared.
	shared bool
}

func (f *stageFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.run, "run", "", "run folder (required)")
	cmd.Flags().IntVar(&f.step, "step", 0, "training step, from 1 (required)")
	cmd.Flags().BoolVar(&f.force, "force", false, "recompute even if the outputs are up to date")
	cmd.MarkFlagRequired("run")
	cmd.MarkFlagRequired("step")
}

// runStage opens the run, runs one stage of a step through the stage runner, reporting on w,
// and prints the stage's summary of the step, read from its files, on the command's output. It
// holds the run's lock while the stage runs and its summary is read.
func (f *stageFlags) runStage(cmd *cobra.Command, w io.Writer, st pipeline.StepStage) (*rundir.Folder, error) {
	if f.step < 1 {
		return nil, fmt.Errorf("--step must be >= 1, got %d", f.step)
	}
	r, err := rundir.Open(f.run)
	if err != nil {
		return nil, err
	}
	lock := r.Lock
	if f.shared {
		lock = r.LockShared
	}
	if err := lock(); err != nil {
		return nil, err
	}
	defer r.Unlock()
	start := time.Now()
	res, err := r.RunStage(cmd.Context(), f.step, st, f.force)
	if err != nil {
		return nil, err
	}
	switch {
	case res.Merged > 0:
		fmt.Fprintf(w, "%s step %d: %s, %d file(s) in %s\n", st.Name(), f.step, mergedLine(res.Merged, res.Reran, time.Since(start)), len(res.Record.Outputs), r.StageDir(f.step, st.Name()))
	case res.Skipped:
		fmt.Fprintf(w, "%s step %d: up to date (use --force to recompute)\n", st.Name(), f.step)
	default:
		fmt.Fprintf(w, "%s step %d: done in %s, %d file(s) in %s\n", st.Name(), f.step, time.Since(start).Round(time.Millisecond), len(res.Record.Outputs), r.StageDir(f.step, st.Name()))
	}
	sum, err := st.Summary(cmd.Context(), r, f.step)
	if err != nil {
		return nil, fmt.Errorf("summary of %s step %d: %w", st.Name(), f.step, err)
	}
	// A summary may quote a server's or a model's text (an author's reason): escaped for the terminal.
	var b strings.Builder
	if err := sum.Write(&b); err != nil {
		return nil, err
	}
	_, err = io.WriteString(cmd.OutOrStdout(), arrowfmt.EscapeLines(b.String()))
	return r, err
}
