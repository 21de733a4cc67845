package validate

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/schema"
)

// Stage is the validate stage.
type Stage struct{}

// Name is the stage's folder.
func (Stage) Name() string { return layout.Validate }

// Inputs are the ledger state and library snapshot of the previous step's author (none at step
// 1) and the step's pairs. None under the skill-evolution ablation.
func (Stage) Inputs(r *rundir.Folder, step int) (rundir.Resolved, error) {
	if !skills.Enabled(r.Config) {
		return rundir.Files{}, nil
	}
	return rundir.Files(append(skills.LedgerInputs(r, step, layout.Validate), PairsPath(r, step))), nil
}

// PairsPath is the pairs file of step, written by the aggregate stage.
func PairsPath(r *rundir.Folder, step int) string {
	return filepath.Join(r.StageDir(step, layout.Aggregate), layout.PairsFile)
}

// Outputs are the step's ledger segment, the library and the ledger's state after it.
func (Stage) Outputs(*rundir.Folder, int) []string {
	return []string{layout.LedgerFile, layout.SkillsFile, layout.LedgerStateFile}
}

// Run validates the step and writes its ledger segment, library and ledger state into
// sc.OutDir.
func (Stage) Run(_ context.Context, sc *rundir.StageContext) error {
	r, step, lin := sc.Folder, sc.Step, sc.Lineage()
	if !skills.Enabled(r.Config) {
		return skills.WriteStage(sc.OutDir, lin, skills.NewLedger(r.Config.Admission, false))
	}
	g, err := skills.LoadLedger(r, step, layout.Validate)
	if err != nil {
		return err
	}
	path := PairsPath(r, step)
	pairs, err := schema.ReadFile[schema.PairRow](schema.Pairs, path)
	if err != nil {
		return err
	}
	if err := g.Validate(step, pairs); err != nil {
		return fmt.Errorf("%s: %w", r.Rel(path), err)
	}
	return skills.WriteStage(sc.OutDir, lin, g)
}
