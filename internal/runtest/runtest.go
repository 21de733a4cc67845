// Package runtest holds helpers for tests that build run folders: writing the state a step would
// leave behind without running it, so that the next step's stages can be exercised alone.
//
// It must only be imported by tests.
package runtest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// Untrained writes the untrained learner as step's checkpoint and, from step 1, an empty skill
// library as its author's output, so step+1 can be rolled out without training.
func Untrained(t testing.TB, r *rundir.Folder, step int) {
	t.Helper()
	ctx := context.Background()
	if _, err := r.RunStage(ctx, step, learner.Initial{}, false); err != nil {
		t.Fatal(err)
	}
	if step == 0 {
		return
	}
	if _, err := r.RunStage(ctx, step, Library(r, step), false); err != nil {
		t.Fatal(err)
	}
}

// Library is a stage that writes the given skills as the library of step's author (the
// library step+1 rolls out with).
func Library(r *rundir.Folder, step int, sks ...skills.Skill) rundir.Stage {
	return Stage{StageName: layout.Author, Written: []string{layout.SkillsFile}, Do: func(_ context.Context, sc *rundir.StageContext) error {
		lib, err := skills.NewLibrary(r.Config.Admission, sks)
		if err != nil {
			return err
		}
		return skills.WriteSnapshot(sc.OutDir, sc.Lineage(), lib)
	}}
}

// Stage is a rundir.Stage made of values: a stage of a test.
type Stage struct {
	StageName string
	Read      []string // its inputs
	Written   []string // its outputs
	Do        func(ctx context.Context, sc *rundir.StageContext) error
}

// Name is StageName.
func (s Stage) Name() string { return s.StageName }

// Inputs are Read.
func (s Stage) Inputs(*rundir.Folder, int) (rundir.Resolved, error) { return rundir.Files(s.Read), nil }

// Outputs are Written.
func (s Stage) Outputs(*rundir.Folder, int) []string { return s.Written }

// Run calls Do.
func (s Stage) Run(ctx context.Context, sc *rundir.StageContext) error { return s.Do(ctx, sc) }

// SimRun initialises a run named "demo" under parent on the simulated world: 12 tasks a step,
// perFamily training tasks per family, the default configuration changed by edit (may be nil),
// and step 0's learner.
func SimRun(t testing.TB, parent string, perFamily int, edit func(*config.Config)) *rundir.Folder {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Batch.Tasks = 12
	if edit != nil {
		edit(cfg)
	}
	r, err := rundir.Init(filepath.Join(parent, "demo"), cfg, "test", func(r *rundir.Folder) error {
		var ts []tasks.Task
		for _, f := range cfg.Families {
			ts = append(ts, sim.Tasks(cfg.Sim, cfg.Seed, f, f, "train", perFamily)...)
		}
		return tasks.WriteFile(r.TasksPath("train"), schema.Lineage{Run: "demo", Stage: "init", ConfigSHA256: cfg.SHA256()}, ts)
	})
	if err != nil {
		t.Fatal(err)
	}
	Untrained(t, r, 0)
	return r
}
