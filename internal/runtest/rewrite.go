package runtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/schema"
)

// Rewrite changes one output of a recorded stage of step as the stage runner would record it:
// the stage folder is rerun as a test stage that copies its other outputs and writes file (a
// path in the stage folder) with write, so a later stage reads it as the pipeline's (the runner
// refuses an input changed by hand). outputs are all the stage's files, as its Outputs lists them.
func Rewrite(t testing.TB, r *rundir.Folder, step int, stage string, outputs []string, file string, write func(path string, lin schema.Lineage) error) {
	t.Helper()
	dir := r.StageDir(step, stage)
	st := Stage{StageName: stage, Written: outputs, Do: func(_ context.Context, sc *rundir.StageContext) error {
		for _, o := range outputs {
			if o == file {
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(o)))
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(filepath.Join(sc.OutDir, filepath.FromSlash(o))), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(sc.OutDir, filepath.FromSlash(o)), data, 0o644); err != nil {
				return err
			}
		}
		return write(filepath.Join(sc.OutDir, filepath.FromSlash(file)), sc.Lineage())
	}}
	if _, err := r.RunStage(context.Background(), step, st, true); err != nil {
		t.Fatal(err)
	}
}
