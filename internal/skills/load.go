package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// Enabled reports whether the run evolves skills (the skill-evolution ablation switches off
// skills, the author and paired rollouts).
func Enabled(cfg *config.Config) bool { return !cfg.Ablated("skill-evolution") }

// FixedCount reports whether the run admits by count (the sequential-validation ablation).
func FixedCount(cfg *config.Config) bool { return cfg.Ablated("sequential-validation") }

// LibraryPath is the library snapshot the rollout of step freezes into menus: the author's
// skills.arrow of step − 1. It is "" at step 1 and when skill evolution is ablated (no skills).
func LibraryPath(r *rundir.Folder, step int) string {
	if step <= 1 || !Enabled(r.Config) {
		return ""
	}
	return filepath.Join(r.StageDir(step-1, layout.Author), layout.SkillsFile)
}

// LoadLibrary reads the library the rollout of step freezes (LibraryPath; empty when that is "").
func LoadLibrary(r *rundir.Folder, step int) (*Library, error) {
	path := LibraryPath(r, step)
	if path == "" {
		return NewLibrary(r.Config.Admission, nil)
	}
	return ReadLibrary(r, path)
}

// ReadLibrary reads a skills.arrow snapshot of the run.
func ReadLibrary(r *rundir.Folder, path string) (*Library, error) {
	rows, err := schema.ReadFile[schema.SkillRow](schema.Skills, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, r.MissingInput(path)
	}
	if err != nil {
		return nil, err
	}
	return FromRows(r.Config.Admission, rows, r.Rel(path))
}

// SegmentPaths lists the ledger segments that come before the given stage of step, in log
// order: both stages of every earlier step, then, for the author, the validate segment of step.
func SegmentPaths(r *rundir.Folder, step int, stage string) []Segment {
	var out []Segment
	for j := 1; j < step; j++ {
		for _, st := range []string{layout.Validate, layout.Author} {
			out = append(out, Segment{Step: j, Stage: st, Path: filepath.Join(r.StageDir(j, st), layout.LedgerFile)})
		}
	}
	if stage == layout.Author {
		out = append(out, Segment{Step: step, Stage: layout.Validate, Path: filepath.Join(r.StageDir(step, layout.Validate), layout.LedgerFile)})
	}
	return out
}

// stateDir is the stage folder whose ledger state and library snapshot the given stage of step
// continues from: author k − 1's for validate k, validate k's for author k; "" for validate 1,
// which starts from the empty ledger.
func stateDir(r *rundir.Folder, step int, stage string) string {
	switch {
	case stage == layout.Author:
		return r.StageDir(step, layout.Validate)
	case step > 1:
		return r.StageDir(step-1, layout.Author)
	}
	return ""
}

// LedgerInputs are the files LoadLedger reads for a stage of step: the ledger state and the
// library snapshot of the stage before it (none at validate 1); under
// admission.undecided_when_exhausted also the training tasks (the family task counts of the
// rule).
func LedgerInputs(r *rundir.Folder, step int, stage string) []string {
	var out []string
	if r.Config.Admission.UndecidedWhenExhausted {
		out = append(out, r.TasksPath("train"))
	}
	if dir := stateDir(r, step, stage); dir != "" {
		out = append(out, filepath.Join(dir, layout.LedgerStateFile), filepath.Join(dir, layout.SkillsFile))
	}
	return out
}

// LoadLedger is the ledger that the given stage of step continues: the state the stage before
// it wrote (ledger_state.arrow) with the library snapshot beside it, which must agree (an error
// names the files), or the empty ledger at validate 1. It reads two files whatever the step;
// CheckStates holds the states to the full replay of the log. Events() of the ledger holds
// only the events emitted after the state, their seq running on from it.
func LoadLedger(r *rundir.Folder, step int, stage string) (*Ledger, error) {
	g, err := emptyLedger(r)
	if err != nil {
		return nil, err
	}
	dir := stateDir(r, step, stage)
	if dir == "" {
		return g, nil
	}
	statePath, libPath := filepath.Join(dir, layout.LedgerStateFile), filepath.Join(dir, layout.SkillsFile)
	lib, err := ReadLibrary(r, libPath)
	if err != nil {
		return nil, err
	}
	rows, err := schema.ReadFile[schema.LedgerStateRow](schema.LedgerState, statePath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, r.MissingInput(statePath)
	}
	if err != nil {
		return nil, err
	}
	if err := g.restore(lib, rows, r.Rel(statePath), r.Rel(libPath)); err != nil {
		return nil, err
	}
	return g, nil
}

// emptyLedger is the run's empty ledger, with the family task counts under
// admission.undecided_when_exhausted.
func emptyLedger(r *rundir.Folder) (*Ledger, error) {
	g := NewLedger(r.Config.Admission, FixedCount(r.Config))
	if !r.Config.Admission.UndecidedWhenExhausted {
		return g, nil
	}
	train, err := tasks.ReadFile(r.TasksPath("train"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, r.MissingInput(r.TasksPath("train"))
	}
	if err != nil {
		return nil, err
	}
	g.SetFamilyTasks(FamilyTasks(train))
	return g, nil
}

// StateCheck is the check of one stage's stored ledger state against the replay of the log.
type StateCheck struct {
	Stage    string // layout.Validate or layout.Author
	Path     string // its ledger_state.arrow, relative to the run folder
	Absent   bool   // the stage has not written its state (not run yet); nothing was compared
	Events   int64  // events of the log through the stage
	Open     int    // open comparisons after it
	Mismatch string // the first difference from the replay; "" when the state and the snapshot equal it
}

// CheckStates holds the incremental path to the definition: it replays every ledger segment from
// step 1 through the validate and then the author stage of step (Replay checks every event) and
// compares each stage's stored ledger_state.arrow with the replayed ledger's state, row for row
// and field for field, and its skills.arrow with the replayed library. A stage whose state does
// not exist yet is Absent (an author that has not run); a segment that does not replay, or a
// missing segment, is an error.
func CheckStates(r *rundir.Folder, step int) ([]StateCheck, error) {
	g, err := emptyLedger(r)
	if err != nil {
		return nil, err
	}
	segs := SegmentPaths(r, step+1, layout.Validate) // both stages of steps 1..step
	var out []StateCheck
	done := 0
	for _, stage := range []string{layout.Validate, layout.Author} {
		dir := r.StageDir(step, stage)
		c := StateCheck{Stage: stage, Path: r.Rel(filepath.Join(dir, layout.LedgerStateFile))}
		stored, err := schema.ReadFile[schema.LedgerStateRow](schema.LedgerState, filepath.Join(dir, layout.LedgerStateFile))
		if errors.Is(err, fs.ErrNotExist) {
			c.Absent = true
			out = append(out, c)
			continue
		}
		if err != nil {
			return nil, err
		}
		end := len(segs) - 1 // through validate of step
		if stage == layout.Author {
			end = len(segs)
		}
		if err := readSegments(r, segs[done:end]); err != nil {
			return nil, err
		}
		if err := g.replay(segs[done:end]); err != nil {
			return nil, err
		}
		done = end
		state := g.State()
		c.Events = g.seq
		for _, row := range state {
			if row.Kind == stateComparison {
				c.Open++
			}
		}
		if diff := diffState(state, stored); diff != "" {
			c.Mismatch = c.Path + ": " + diff
		} else {
			lib, err := ReadLibrary(r, filepath.Join(dir, layout.SkillsFile))
			if err != nil {
				return nil, err
			}
			if err := SameLibrary(g.Library(), lib); err != nil {
				c.Mismatch = fmt.Sprintf("%s: %v", r.Rel(filepath.Join(dir, layout.SkillsFile)), err)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// readSegments reads the rows of each segment, naming a missing one with the command that writes
// it; the paths become relative to the run folder, as errors show them.
func readSegments(r *rundir.Folder, segs []Segment) error {
	for i := range segs {
		rows, err := schema.ReadFile[schema.LedgerRow](schema.Ledger, segs[i].Path)
		if errors.Is(err, fs.ErrNotExist) {
			return r.MissingInput(segs[i].Path)
		}
		if err != nil {
			return err
		}
		segs[i].Rows, segs[i].Path = rows, r.Rel(segs[i].Path)
	}
	return nil
}

// diffState names the first difference between the replayed state and the stored one, "" for none.
func diffState(replayed, stored []schema.LedgerStateRow) string {
	for i := range max(len(replayed), len(stored)) {
		switch {
		case i >= len(stored):
			return fmt.Sprintf("the replay holds %s, which the file lacks", describeState(replayed[i]))
		case i >= len(replayed):
			return fmt.Sprintf("row %d: the file holds %s, which the replay lacks", i, describeState(stored[i]))
		case !reflect.DeepEqual(replayed[i], stored[i]):
			return fmt.Sprintf("row %d: the file holds %s, the replay %s", i, describeState(stored[i]), describeState(replayed[i]))
		}
	}
	return ""
}

// FamilyTasks counts training tasks by task type: the tasks whose pairs can test a skill of
// that family (the rollout plays pairs for Library.Tested(task type)).
func FamilyTasks(train []tasks.Task) map[string]int {
	n := map[string]int{}
	for _, t := range train {
		n[t.TaskType]++
	}
	return n
}

// SameLibrary compares two snapshots skill by skill and names the first difference.
func SameLibrary(got, want *Library) error {
	g, w := got.Rows(), want.Rows()
	for i := range max(len(g), len(w)) {
		switch {
		case i >= len(g):
			return fmt.Errorf("skill %s is missing", w[i].SkillID)
		case i >= len(w):
			return fmt.Errorf("skill %s is extra", g[i].SkillID)
		case !reflect.DeepEqual(g[i], w[i]):
			return fmt.Errorf("skill %s: %+v, want %+v", g[i].SkillID, g[i], w[i])
		}
	}
	return nil
}

// WriteSnapshot writes a library snapshot as skills.arrow into dir.
func WriteSnapshot(dir string, lin schema.Lineage, lib *Library) error {
	return schema.WriteRows(schema.Skills, filepath.Join(dir, layout.SkillsFile), lin, lib.Rows())
}

// WriteSegment writes events as the ledger segment of a stage into dir.
func WriteSegment(dir string, lin schema.Lineage, events []schema.LedgerRow) error {
	return schema.WriteRows(schema.Ledger, filepath.Join(dir, layout.LedgerFile), lin, events)
}
