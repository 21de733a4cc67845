package tasks

import (
	"fmt"
	"path/filepath"
)

// LoadFiles reads task files, JSONL or Arrow by extension, into one map by task id; a task id may
// appear once across the files and holds no control character.
func LoadFiles(paths []string) (map[string]Task, error) {
	byID := map[string]Task{}
	from := map[string]string{}
	for _, p := range paths {
		var ts []Task
		var err error
		if filepath.Ext(p) == ".arrow" {
			ts, err = ReadFile(p)
			for i := 0; err == nil && i < len(ts); i++ {
				if idErr := checkID(ts[i].ID); idErr != nil {
					err = fmt.Errorf("read %s: row %d: column \"task_id\": %w", p, i+1, idErr)
				}
			}
		} else {
			ts, err = ReadJSONL(p)
		}
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			if prev, dup := from[t.ID]; dup {
				return nil, fmt.Errorf("task %s is in both %s and %s", t.ID, prev, p)
			}
			byID[t.ID], from[t.ID] = t, p
		}
	}
	return byID, nil
}
