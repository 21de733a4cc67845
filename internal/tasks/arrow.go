package tasks

import (
	"encoding/json"
	"fmt"

	"github.com/evosteer/evosteer-go/schema"
)

// row is a Task as the tasks table stores it.
type row struct {
	ID         string   `arrow:"task_id"`
	Family     string   `arrow:"family"`
	TaskType   string   `arrow:"task_type"`
	Split      string   `arrow:"split"`
	SourceID   string   `arrow:"source_id"`
	Origin     string   `arrow:"origin"`
	Prompt     string   `arrow:"prompt"`
	Answers    []string `arrow:"answers"`
	Options    []string `arrow:"options"`
	PriorRate  *float64 `arrow:"prior_rate"`
	PriorCount float64  `arrow:"prior_count"`
	Extra      string   `arrow:"extra"`
}

// WriteFile writes task records as a tasks table.
func WriteFile(path string, lin schema.Lineage, ts []Task) error {
	rows := make([]row, len(ts))
	for i, t := range ts {
		extra := t.Extra
		if extra == nil {
			extra = map[string]json.RawMessage{}
		}
		b, err := json.Marshal(extra)
		if err != nil {
			return fmt.Errorf("write %s: task %s: extra: %w", path, t.ID, err)
		}
		rows[i] = row{t.ID, t.Family, t.TaskType, t.Split, t.SourceID, t.Origin, t.Prompt,
			nonNil(t.Answers), nonNil(t.Options), t.PriorRate, t.PriorCount, string(b)}
	}
	rec, err := schema.Build(schema.Tasks, rows)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer rec.Release()
	return schema.Tasks.WriteBatches(path, lin, rec)
}

// ReadFile reads a tasks table.
func ReadFile(path string) ([]Task, error) {
	rows, err := schema.ReadFile[row](schema.Tasks, path)
	if err != nil {
		return nil, err
	}
	ts := make([]Task, len(rows))
	for i, r := range rows {
		var extra map[string]json.RawMessage
		if err := json.Unmarshal([]byte(r.Extra), &extra); err != nil {
			return nil, fmt.Errorf("read %s: row %d (task %s): column \"extra\": %w", path, i, r.ID, err)
		}
		if len(extra) == 0 {
			extra = nil
		}
		ts[i] = Task{ID: r.ID, Family: r.Family, TaskType: r.TaskType, Split: r.Split, SourceID: r.SourceID,
			Origin: r.Origin, Prompt: r.Prompt, Answers: r.Answers, Options: r.Options,
			PriorRate: r.PriorRate, PriorCount: r.PriorCount, Extra: extra}
	}
	return ts, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
