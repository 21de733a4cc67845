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

// LedgerInputs are the files LoadLedger reads for a stage of step: the segments before it and
// the library snapshot written beside the last of them; under admission.undecided_when_exhausted
// also the training tasks (the family task counts of the rule).
func LedgerInputs(r *rundir.Folder, step int, stage string) []string {
	segs := SegmentPaths(r, step, stage)
	var out []string
	if r.Config.Admission.UndecidedWhenExhausted {
		out = append(out, r.TasksPath("train"))
	}
	for _, s := range segs {
		out = append(out, s.Path)
	}
	if len(segs) > 0 {
		out = append(out, filepath.Join(filepath.Dir(segs[len(segs)-1].Path), layout.SkillsFile))
	}
	return out
}

// LoadLedger rebuilds the ledger that the given stage of step continues, by replaying every
// earlier segment (Replay checks each event), and checks the rebuilt library against the
// snapshot written beside the last segment: a log and a library that disagree are an error.
func LoadLedger(r *rundir.Folder, step int, stage string) (*Ledger, error) {
	segs := SegmentPaths(r, step, stage)
	for i := range segs {
		rows, err := schema.ReadFile[schema.LedgerRow](schema.Ledger, segs[i].Path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, r.MissingInput(segs[i].Path)
		}
		if err != nil {
			return nil, err
		}
		segs[i].Rows, segs[i].Path = rows, r.Rel(segs[i].Path)
	}
	g := NewLedger(r.Config.Admission, FixedCount(r.Config))
	if r.Config.Admission.UndecidedWhenExhausted {
		train, err := tasks.ReadFile(r.TasksPath("train"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, r.MissingInput(r.TasksPath("train"))
		}
		if err != nil {
			return nil, err
		}
		g.SetFamilyTasks(FamilyTasks(train))
	}
	g, err := g.Replay(segs)
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		return g, nil
	}
	snap := filepath.Join(r.Dir, filepath.Dir(segs[len(segs)-1].Path), layout.SkillsFile)
	lib, err := ReadLibrary(r, snap)
	if err != nil {
		return nil, err
	}
	if err := SameLibrary(g.Library(), lib); err != nil {
		return nil, fmt.Errorf("the ledger replayed through %s disagrees with %s: %w", segs[len(segs)-1].Path, r.Rel(snap), err)
	}
	return g, nil
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
