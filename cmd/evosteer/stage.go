package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/internal/rundir"
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

// runStage opens the run and runs one stage through the stage runner, reporting on w. It holds
// the run's lock while the stage runs.
func (f *stageFlags) runStage(cmd *cobra.Command, w io.Writer, build func(r *rundir.Run) rundir.Stage) (*rundir.Run, error) {
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
	st := build(r)
	start := time.Now()
	res, err := r.RunStage(cmd.Context(), f.step, st, f.force)
	if err != nil {
		return nil, err
	}
	if res.Skipped {
		fmt.Fprintf(w, "%s step %d: up to date (use --force to recompute)\n", st.Name, f.step)
	} else {
		fmt.Fprintf(w, "%s step %d: done in %s, %d file(s) in %s\n", st.Name, f.step, time.Since(start).Round(time.Millisecond), len(res.Record.Outputs), r.StageDir(f.step, st.Name))
	}
	return r, nil
}
