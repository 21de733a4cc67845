package validate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/schema"
)

// Name is the stage's folder name.
const Name = skills.ValidateStage

// The aggregate stage's folder and the pairs file it writes there (stages/aggregate, not
// imported so that this stage does not link DuckDB).
const (
	aggregateStage = "aggregate"
	pairsFile      = "pairs.arrow"
)

// Inputs are the files validate of step reads that exist now (a missing one is reported by
// Run, with the command that writes it): the ledger segments of the earlier steps with the
// last library snapshot, and the step's pairs. None under the skill-evolution ablation.
func Inputs(r *rundir.Run, step int) []string {
	if !skills.Enabled(r.Config) {
		return nil
	}
	return r.ExistingInputs(append(skills.LedgerInputs(r, step, Name), PairsPath(r, step)))
}

// PairsPath is the pairs file of step.
func PairsPath(r *rundir.Run, step int) string {
	return filepath.Join(r.StageDir(step, aggregateStage), pairsFile)
}

// Stage returns the validate stage of one step.
func Stage(r *rundir.Run, step int) rundir.Stage {
	return rundir.Stage{Name: Name, Inputs: Inputs(r, step), Run: func(_ context.Context, sc *rundir.StageContext) error {
		return Run(sc.Run, step, sc.OutDir, sc.Lineage())
	}}
}

// Run validates step and writes its ledger segment and library into outDir.
func Run(r *rundir.Run, step int, outDir string, lin schema.Lineage) error {
	if !skills.Enabled(r.Config) {
		return write(outDir, lin, nil, skills.NewLedger(r.Config.Admission, false).Library())
	}
	g, err := skills.LoadLedger(r, step, Name)
	if err != nil {
		return err
	}
	path := PairsPath(r, step)
	pairs, err := schema.ReadFile[schema.PairRow](schema.Pairs, path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no pairs %s; run `evosteer aggregate --run %s --step %d` first", r.Rel(path), r.Dir, step)
	}
	if err != nil {
		return err
	}
	n := len(g.Events())
	if err := g.Validate(step, pairs); err != nil {
		return fmt.Errorf("%s: %w", r.Rel(path), err)
	}
	return write(outDir, lin, g.Events()[n:], g.Library())
}

func write(outDir string, lin schema.Lineage, events []schema.LedgerRow, lib *skills.Library) error {
	if err := skills.WriteSegment(outDir, lin, events); err != nil {
		return err
	}
	return skills.WriteSnapshot(outDir, lin, lib)
}
