package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/schema"
	"github.com/evosteer/evosteer-go/stages/aggregate"
	"github.com/evosteer/evosteer-go/stages/author"
	"github.com/evosteer/evosteer-go/stages/rescore"
	"github.com/evosteer/evosteer-go/stages/rollout"
	"github.com/evosteer/evosteer-go/stages/update"
	"github.com/evosteer/evosteer-go/stages/validate"
)

// StepStage is a stage of a training step: a rundir.Stage that also describes a step's
// outputs from its files (the summary its command prints).
type StepStage interface {
	rundir.Stage
	Summary(ctx context.Context, r *rundir.Folder, step int) (rundir.Summary, error)
}

// Stages are the stages of one training step, in order.
var Stages = []StepStage{rollout.Stage{}, rescore.Stage{}, aggregate.Stage{}, update.Stage{}, validate.Stage{}, author.Stage{}}

// StageDone reports one finished stage.
type StageDone struct {
	Step    int
	Stage   string
	Skipped bool // it did not run: its outputs were up to date, or made from its complete shards
	// Merged is n when the stage's files were merged from its n shards (the rollout of a step
	// rolled out with --shard i/n) instead of running it; Reran lists the shards of that set
	// that were missing or out of date and ran first, in this process.
	Merged int
	Reran  []int
	Wall   time.Duration
}

// Step runs every stage of one step in order, skipping those whose outputs are up to date
// (force recomputes them all, the rollout whole). A rollout the step's manifest records in
// shards i/n is not rolled out again: the shards missing from the set run first, here, one
// after another, and the complete set is merged into the files of a whole rollout, byte for
// byte (rundir.Mergeable), so every later stage writes what it would after a whole rollout.
// done, when not nil, is told after every stage.
func Step(ctx context.Context, r *rundir.Folder, step int, force bool, done func(StageDone)) error {
	for _, st := range Stages {
		start := time.Now()
		res, err := r.RunStage(ctx, step, st, force)
		if err != nil {
			return err
		}
		if done != nil {
			done(StageDone{Step: step, Stage: st.Name(), Skipped: res.Skipped, Merged: res.Merged, Reran: res.Reran, Wall: time.Since(start)})
		}
	}
	return nil
}

// Train runs steps 1..steps in order. It first verifies every step already on disk against its
// manifest (a run changed outside the pipeline is an error, not silently recomputed); stages
// whose outputs are up to date are then skipped, so an interrupted run resumes where it stopped
// and produces the same files as an uninterrupted one.
func Train(ctx context.Context, r *rundir.Folder, steps int, force bool, done func(StageDone)) error {
	for k := 0; k <= steps; k++ {
		if _, err := os.Stat(r.StepDir(k)); err != nil {
			break
		}
		if err := r.Verify(k); err != nil {
			return fmt.Errorf("resume %s: %w", r.Dir, err)
		}
	}
	for k := 1; k <= steps; k++ {
		if err := Step(ctx, r, k, force, done); err != nil {
			return err
		}
	}
	return nil
}

// Summary is what one finished step measured, for progress lines.
type Summary struct {
	Step                   int
	RewardTheta, RewardRho float64 // mean reward of the current and natural-reference episodes
	Loss, LossRho          float64
	AlphaSpent             float64
	Skills                 map[string]int // library after the step's author, by status
}

// Summarize reads a finished step's files.
func Summarize(r *rundir.Folder, step int) (*Summary, error) {
	s := &Summary{Step: step, Skills: map[string]int{}}
	paths, err := rundir.Shards(r.StageDir(step, layout.Rollout), layout.Episodes)
	if err != nil {
		return nil, err
	}
	eps, err := schema.ReadFiles[schema.EpisodeRow](schema.Episodes, paths)
	if err != nil {
		return nil, err
	}
	var nt, nr float64
	for _, e := range eps {
		switch e.Source {
		case "current":
			s.RewardTheta += e.Reward
			nt++
		case "natural_reference":
			s.RewardRho += e.Reward
			nr++
		}
	}
	s.RewardTheta /= max(nt, 1)
	s.RewardRho /= max(nr, 1)
	m, err := schema.ReadFile[schema.UpdateMetricsRow](schema.UpdateMetrics, filepath.Join(r.StageDir(step, layout.Update), layout.UpdateMetricsFile))
	if err != nil {
		return nil, err
	}
	if len(m) == 1 {
		s.Loss, s.LossRho = m[0].Loss, m[0].LossRho
	}
	if !skills.Enabled(r.Config) {
		return s, nil
	}
	g, err := skills.LoadLedger(r, step+1, layout.Validate) // the ledger state and library after the step's author
	if err != nil {
		return nil, err
	}
	s.AlphaSpent = g.AlphaSpent()
	for _, sk := range g.Library().Skills() {
		s.Skills[sk.Status]++
	}
	return s, nil
}
