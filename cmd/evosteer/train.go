package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/evosteer/evosteer-go/internal/arrowfmt"
	evconfig "github.com/evosteer/evosteer-go/internal/config" // the --config flag is named config here
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/pipeline"
)

func newStepCmd() *cobra.Command {
	var f stageFlags
	cmd := &cobra.Command{
		Use:   "step --run DIR --step K [--force]",
		Short: "Run every stage of one training step in order, skipping those already up to date",
		Long: `Run training step K: rollout → rescore → aggregate → update → validate → author (paper
Algorithm 1), each through the run folder's stage runner. A stage whose recorded outputs exist and
whose inputs, seed and configuration are unchanged is skipped; --force recomputes every stage (the
rollout whole, replacing its shards). A rollout done as shards (rollout --shard i/n) is not done
again: the shards missing from the set run here, one after another, and the set is merged into
the files a whole rollout writes (docs/CLUSTERS.md). Prints one line per stage and a summary of
the step.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.step < 1 {
				return fmt.Errorf("--step must be >= 1, got %d", f.step)
			}
			r, err := openLocked(f.run)
			if err != nil {
				return err
			}
			defer r.Unlock()
			log := cmd.ErrOrStderr()
			if err := pipeline.Step(cmd.Context(), r, f.step, f.force, stageLine(log, 0)); err != nil {
				return err
			}
			return printSummary(cmd.OutOrStdout(), r, f.step, 0)
		},
	}
	f.register(cmd)
	return cmd
}

func newTrainCmd() *cobra.Command {
	var run, config string
	var steps int
	var ablate []string
	var force bool
	cmd := &cobra.Command{
		Use:   "train --run DIR [--steps N] [--config FILE] [--ablate NAME]... [--force]",
		Short: "Train: run steps 1..N in order, resuming where a previous run stopped",
		Long: `Train the run in DIR for N steps (default: the configuration's steps): every stage of every
step in order (rollout → rescore → aggregate → update → validate → author). When DIR has no run
yet it is initialised first from --config and --ablate, as ` + "`evosteer init`" + ` would.

Resuming: finished stages are skipped, so a run stopped by a crash or Ctrl-C at any point loses at
most the stage in flight and, resumed, writes the same files as an uninterrupted run. A step rolled
out as shards (rollout --shard i/n, e.g. on a cluster) is merged, its missing shards run first,
as by ` + "`evosteer step`" + `; --force recomputes every stage, the rollout whole. Before it
starts it verifies every step already on disk against its manifest (configuration hash and the
sha256 of every output) and stops with the mismatch named when the run was changed outside the
pipeline.

One process writes a run at a time: train holds the run's lock (DIR/.lock) while it runs, and
another writer (train, step, a stage command, eval, probe) stops at once naming its pid; sql,
inspect and report read without waiting. A killed train releases the lock with its process.

Progress: a bar on a terminal, otherwise one log line per stage; after each step a summary line
with the mean reward of θ (current) and ρ (natural reference) episodes, the AnchorTB loss and its
reference level, the alpha spent by skill admission, and the library.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if steps > evconfig.MaxSteps {
				return fmt.Errorf("train: --steps must be <= %d (each step plays a batch of episodes and writes a step folder; the paper trains 240), got %d", evconfig.MaxSteps, steps)
			}
			r, err := openOrInit(cmd, run, config, ablate)
			if err != nil {
				return err
			}
			defer r.Unlock()
			if steps <= 0 {
				steps = r.Config.Steps
			}
			log := cmd.ErrOrStderr()
			done := stageLine(log, steps)
			var bar *progressbar.ProgressBar
			if fd, ok := log.(*os.File); ok && term.IsTerminal(int(fd.Fd())) {
				bar = progressbar.NewOptions(steps*len(pipeline.Stages), progressbar.OptionSetWriter(log),
					progressbar.OptionSetDescription("training"), progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
					progressbar.OptionClearOnFinish())
				done = func(d pipeline.StageDone) {
					bar.Describe(fmt.Sprintf("step %d/%d %-9s", d.Step, steps, d.Stage))
					bar.Add(1)
				}
			}
			start := time.Now()
			err = pipeline.Train(cmd.Context(), r, steps, force, func(d pipeline.StageDone) {
				done(d)
				if d.Stage == pipeline.Stages[len(pipeline.Stages)-1].Name() {
					if bar != nil {
						bar.Clear()
					}
					if err := printSummary(log, r, d.Step, steps); err != nil {
						fmt.Fprintln(log, "summary:", arrowfmt.EscapeLines(err.Error()))
					}
				}
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "trained %s for %d steps in %s; query it with `evosteer sql --run %s`\n", r.Dir, steps, time.Since(start).Round(time.Second), r.Dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "run folder (required; created when it does not exist)")
	cmd.Flags().IntVar(&steps, "steps", 0, "train steps 1..N (default: the configuration's steps)")
	cmd.Flags().StringVar(&config, "config", "", "configuration file for a new run")
	cmd.Flags().StringArrayVar(&ablate, "ablate", nil, "ablation of paper appendix D for a new run (repeatable)")
	cmd.Flags().BoolVar(&force, "force", false, "recompute every stage, even those up to date (a sharded rollout whole)")
	cmd.MarkFlagRequired("run")
	return cmd
}

// openOrInit opens the run, or initialises it when the folder has no run.yaml; --config and
// --ablate only apply to a new run. The run it returns holds its lock.
func openOrInit(cmd *cobra.Command, run, config string, ablate []string) (*rundir.Folder, error) {
	runFile := filepath.Join(run, rundir.RunFileName)
	if _, err := os.Stat(runFile); err != nil {
		r, err := initRun(cmd, run, config, ablate, nil)
		var exists *rundir.ExistsError
		if !errors.As(err, &exists) {
			return r, err
		}
		if _, serr := os.Stat(runFile); serr != nil {
			return nil, err // a folder that is not a run
		}
		// Another process created the run meanwhile.
	}
	if config != "" || len(ablate) > 0 {
		return nil, fmt.Errorf("%s is an existing run: its configuration is fixed (run.yaml); --config and --ablate apply only to a new run", run)
	}
	return openLocked(run)
}

// openLocked opens a run for a command that writes it: it holds the run's lock, or says which
// process does.
func openLocked(dir string) (*rundir.Folder, error) {
	r, err := rundir.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := r.Lock(); err != nil {
		return nil, err
	}
	return r, nil
}

// stageLine reports each finished stage as a log line.
func stageLine(w io.Writer, steps int) func(pipeline.StageDone) {
	return func(d pipeline.StageDone) {
		of := ""
		if steps > 0 {
			of = fmt.Sprintf("/%d", steps)
		}
		if d.Merged > 0 {
			fmt.Fprintf(w, "step %d%s %-9s %s\n", d.Step, of, d.Stage, mergedLine(d.Merged, d.Reran, d.Wall))
			return
		}
		if d.Skipped {
			fmt.Fprintf(w, "step %d%s %-9s up to date\n", d.Step, of, d.Stage)
			return
		}
		fmt.Fprintf(w, "step %d%s %-9s done in %s\n", d.Step, of, d.Stage, d.Wall.Round(time.Millisecond))
	}
}

// mergedLine says that a stage's n shards were merged, and which of them ran first.
func mergedLine(n int, reran []int, wall time.Duration) string {
	if len(reran) == 0 {
		return fmt.Sprintf("merged its %d complete shards in %s (none rolled out again)", n, wall.Round(time.Millisecond))
	}
	ran := make([]string, len(reran))
	for k, i := range reran {
		ran[k] = fmt.Sprintf("%d/%d", i, n)
	}
	return fmt.Sprintf("ran its missing shard(s) %s, then merged its %d shards, in %s", strings.Join(ran, ", "), n, wall.Round(time.Millisecond))
}

func printSummary(w io.Writer, r *rundir.Folder, step, steps int) error {
	s, err := pipeline.Summarize(r, step)
	if err != nil {
		return err
	}
	of := ""
	if steps > 0 {
		of = fmt.Sprintf("/%d", steps)
	}
	fmt.Fprintf(w, "step %d%s: reward θ %.3f ρ %.3f | AnchorTB loss %.4f (reference level %.4f) | alpha spent %.4g | skills: %d candidate, %d validated, %d retired\n",
		step, of, s.RewardTheta, s.RewardRho, s.Loss, s.LossRho, s.AlphaSpent, s.Skills["candidate"], s.Skills["validated"], s.Skills["retired"])
	return nil
}
