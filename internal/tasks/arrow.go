package tasks

import (
	"encoding/json"
	"fmt"

	"github.com/evosteer/evosteer-go/schema"
)

// WriteFile writes task records as a tasks table.
func WriteFile(path string, lin schema.Lineage, ts []Task) error {
	rows := make([]schema.TaskRow, len(ts))
	for i, t := range ts {
		extra := t.Extra
		if extra == nil {
			extra = map[string]json.RawMessage{}
		}
		b, err := json.Marshal(extra)
		if err != nil {
			return fmt.Errorf("write %s: task %s: extra: %w", path, t.ID, err)
		}
		rows[i] = schema.TaskRow{ID: t.ID, Family: t.Family, TaskType: t.TaskType, Split: t.Split,
			SourceID: t.SourceID, Origin: t.Origin, Prompt: t.Prompt, Answers: nonNil(t.Answers),
			Options: nonNil(t.Options), PriorRate: t.PriorRate, PriorCount: t.PriorCount, Extra: string(b)}
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
	rows, err := schema.ReadFile[schema.TaskRow](schema.Tasks, path)
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
