// Package runtest holds helpers for tests that build run folders: writing the state a step would
// leave behind without running it, so that the next step's stages can be exercised alone.
//
// It must only be imported by tests.
package runtest

import (
	"context"
	"testing"

	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/stages/update"
)

// Untrained writes the untrained learner as step's checkpoint and, from step 1, an empty skill
// library as its author's output, so step+1 can be rolled out without training.
func Untrained(t testing.TB, r *rundir.Run, step int) {
	t.Helper()
	ctx := context.Background()
	if _, err := r.RunStage(ctx, step, update.Initial(r), false); err != nil {
		t.Fatal(err)
	}
	if step == 0 {
		return
	}
	empty := rundir.Stage{Name: skills.AuthorStage, Run: func(_ context.Context, sc *rundir.StageContext) error {
		lib, err := skills.NewLibrary(r.Config.Admission, nil)
		if err != nil {
			return err
		}
		return skills.WriteSnapshot(sc.OutDir, sc.Lineage(), lib)
	}}
	if _, err := r.RunStage(ctx, step, empty, false); err != nil {
		t.Fatal(err)
	}
}
