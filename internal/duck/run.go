package duck

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/evosteer/evosteer-go/schema"
)

// LoadedTable says which files were loaded into one table.
type LoadedTable struct {
	Name  string
	Files []string // relative to the run folder
	Rows  int64
}

var stepFolder = regexp.MustCompile(`^step-(\d+)$`)

// LoadRun loads every Arrow file under a run folder into one table per schema name (shards
// and steps together), with two leading columns: step (the step-NNNNNN folder's number, 0 for
// files outside step folders, such as tasks/) and stage (the folder the file is in). When
// tables is not empty, only those tables are loaded. A table no file holds is simply absent.
func (db *DB) LoadRun(ctx context.Context, dir string, tables []string) ([]LoadedTable, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir && strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir // temporary folders of running or crashed stages
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".arrow") {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load run %s: %w", dir, err)
	}
	slices.Sort(paths)
	loaded := map[string]*LoadedTable{}
	for _, p := range paths {
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		parts := strings.Split(rel, "/")
		step, stage := int64(0), parts[0]
		if m := stepFolder.FindStringSubmatch(parts[0]); m != nil && len(parts) > 2 {
			step, _ = strconv.ParseInt(m[1], 10, 64)
			stage = parts[1]
		}
		if err := db.loadRunFile(ctx, p, rel, step, stage, tables, loaded); err != nil {
			return nil, fmt.Errorf("load run %s: %w", dir, err)
		}
	}
	out := make([]LoadedTable, 0, len(loaded))
	for _, t := range loaded {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b LoadedTable) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (db *DB) loadRunFile(ctx context.Context, path, rel string, step int64, stage string, tables []string, loaded map[string]*LoadedTable) error {
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
	if err := db.AppendTable(ctx, name, rr, []Column{{Name: "step", Value: step}, {Name: "stage", Value: stage}}); err != nil {
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
