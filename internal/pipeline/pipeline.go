package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/stages/aggregate"
	"github.com/evosteer/evosteer-go/stages/author"
	"github.com/evosteer/evosteer-go/stages/rescore"
	"github.com/evosteer/evosteer-go/stages/rollout"
	"github.com/evosteer/evosteer-go/stages/update"
	"github.com/evosteer/evosteer-go/stages/validate"
)

// Stages are the stages of one training step, in order.
var Stages = []string{rollout.Name, rescore.Name, aggregate.Name, update.Name, validate.Name, author.Name}

// Stage builds the named stage of a step (its inputs are the files on disk now).
func Stage(r *rundir.Run, step int, name string) (rundir.Stage, error) {
	switch name {
	case rollout.Name:
		return rollout.Stage(r, step, rollout.Shard{Index: 1, Count: 1}, nil), nil
	case rescore.Name:
		return rescore.Stage(r, step, nil), nil
	case aggregate.Name:
		return aggregate.Stage(r, step), nil
	case update.Name:
		return update.Stage(r, step, nil), nil
	case validate.Name:
		return validate.Stage(r, step), nil
	case author.Name:
		return author.Stage(r, step), nil
	}
	return rundir.Stage{}, fmt.Errorf("unknown stage %q (stages: %v)", name, Stages)
}

// StageDone reports one finished stage.
type StageDone struct {
	Step    int
	Stage   string
	Skipped bool // its outputs were up to date
	Wall    time.Duration
}

// Step runs every stage of one step in order, skipping those whose outputs are up to date
// (force recomputes them all). done, when not nil, is told after every stage.
func Step(ctx context.Context, r *rundir.Run, step int, force bool, done func(StageDone)) error {
	for _, name := range Stages {
		st, err := Stage(r, step, name)
		if err != nil {
			return err
		}
		start := time.Now()
		res, err := r.RunStage(ctx, step, st, force)
		if err != nil {
			return err
		}
		if done != nil {
			done(StageDone{Step: step, Stage: name, Skipped: res.Skipped, Wall: time.Since(start)})
		}
	}
	return nil
}
