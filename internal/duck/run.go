package duck

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/schema"
)

// LoadedTable says which files were loaded into one table.
type LoadedTable struct {
	Name  string
	Files []string // relative to the run folder
	Rows  int64
}

// LoadRun loads every Arrow file under a run folder into one table per schema name (shards
// and steps together), with two leading columns: step (the step-NNNNNN folder's number, 0 for
// files outside step folders, such as tasks/) and stage (the folder the file is in; for a
// tool's per-step folder TOOL/step-NNNNNN/, such as the probe's, step NNNNNN and stage TOOL). When
// tables is not empty, only those tables are loaded. A table no file holds is simply absent.
func (db *DB) LoadRun(ctx context.Context, dir string, tables []string) ([]LoadedTable, error) {
	loaded := map[string]*LoadedTable{}
	if err := db.loadRun(ctx, dir, nil, tables, loaded); err != nil {
		return nil, err
	}
	return sortedTables(loaded), nil
}

// RunNameColumn is the leading column LoadRuns adds: the run's label. It is not called "run"
// because eval_results already has a column of that name (the evaluation run).
const RunNameColumn = "run_name"

// LoadRuns loads several run folders into the same tables, so that one query compares runs:
// like LoadRun, with a further leading column run_name holding the run's label (labels[i]
// for dirs[i]). Files of a table whose schema changed between runs fail with the file named.
// A LoadedTable's Files are "label/relative path".
func (db *DB) LoadRuns(ctx context.Context, dirs, labels []string, tables []string) ([]LoadedTable, error) {
	if len(dirs) != len(labels) {
		return nil, fmt.Errorf("load runs: %d folders but %d labels", len(dirs), len(labels))
	}
	loaded := map[string]*LoadedTable{}
	for i, dir := range dirs {
		label := labels[i]
		if err := db.loadRun(ctx, dir, &label, tables, loaded); err != nil {
			return nil, err
		}
	}
	return sortedTables(loaded), nil
}

// RunLabels names run folders for LoadRuns: each folder's base name, or the path as given
// where two base names are the same.
func RunLabels(dirs []string) []string {
	base := make([]string, len(dirs))
	count := map[string]int{}
	for i, d := range dirs {
		base[i] = filepath.Base(filepath.Clean(d))
		count[base[i]]++
	}
	for i, d := range dirs {
		if count[base[i]] > 1 {
			base[i] = filepath.ToSlash(filepath.Clean(d))
		}
	}
	return base
}

func sortedTables(loaded map[string]*LoadedTable) []LoadedTable {
	out := make([]LoadedTable, 0, len(loaded))
	for _, t := range loaded {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b LoadedTable) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// loadRun appends one run folder's files to the tables in loaded; label, when not nil, is
// the run_name column's value and the prefix of the recorded file names.
func (db *DB) loadRun(ctx context.Context, dir string, label *string, tables []string, loaded map[string]*LoadedTable) error {
	// A run folder is walked whole; any other folder (a calibration's output, a copy of a few
	// files) is read flat, so that a mistyped --run / never walks a whole filesystem.
	_, serr := os.Stat(filepath.Join(dir, layout.RunFile))
	run := serr == nil
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir && (strings.HasPrefix(d.Name(), ".") || !run) {
			return fs.SkipDir // temporary folders of running or crashed stages
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".arrow") {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load run %s: %w", dir, err)
	}
	if !run && len(paths) == 0 {
		return fmt.Errorf("load run %s: not a run folder (no %s) and it holds no Arrow file; give a folder `evosteer init` created", dir, layout.RunFile)
	}
	slices.Sort(paths)
	for _, p := range paths {
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		parts := strings.Split(rel, "/")
		step, stage := 0, parts[0]
		if k, ok := layout.ParseStepDir(parts[0]); ok && len(parts) > 2 {
			step, stage = k, parts[1]
		} else if len(parts) > 2 {
			step, _ = layout.ParseStepDir(parts[1])
		}
		with := []Column{{Name: "step", Value: int64(step)}, {Name: "stage", Value: stage}}
		if label != nil {
			with = append([]Column{{Name: RunNameColumn, Value: *label}}, with...)
			rel = *label + "/" + rel
		}
		if err := db.loadRunFile(ctx, p, rel, with, tables, loaded); err != nil {
			return fmt.Errorf("load run %s: %w", dir, err)
		}
	}
	return nil
}

func (db *DB) loadRunFile(ctx context.Context, path, rel string, with []Column, tables []string, loaded map[string]*LoadedTable) error {
	f, err := schema.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	name := f.Table.Name
	if len(tables) > 0 && !slices.Contains(tables, name) {
		return nil
	}
	rr, err := f.Reader()
	if err != nil {
		return err
	}
	defer rr.Release()
	// A table with its own step column (exact_curve: a training step) keeps it; the folder's
	// step would clash with it and says nothing for a file outside step folders.
	with = slices.DeleteFunc(slices.Clone(with), func(c Column) bool { return f.Table.Schema.HasField(c.Name) })
	if err := db.AppendTable(ctx, name, rr, with); err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	t := loaded[name]
	if t == nil {
		t = &LoadedTable{Name: name}
		loaded[name] = t
	}
	t.Files = append(t.Files, rel)
	t.Rows += f.NumRows
	return nil
}
