package tasks

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Task is one task record, in the reference release's JSONL row schema (METHOD.md §6.1). The
// orchestrator sees only Family, TaskType and Prompt; graders and executors see the rest.
type Task struct {
	ID       string   `json:"task_id"`   // "{kind}/{source_id}", test rows "{kind}/test-{source_id}"
	Family   string   `json:"kind"`      // benchmark family, e.g. hotpotqa, webshop
	TaskType string   `json:"task_type"` // the IID family whose one-hot slot the task uses
	Split    string   `json:"split"`     // train | test
	SourceID string   `json:"source_id"` // id in the upstream dataset
	Origin   string   `json:"origin"`    // upstream dataset path
	Prompt   string   `json:"prompt"`    // the full task text given to agents
	Answers  []string `json:"answers"`   // gold answers (empty for environment tasks)
	Options  []string `json:"options"`   // multiple-choice letters
	// PriorRate and PriorCount carry an optional success-rate prior for the anchors
	// (Def. B.2); PriorCount is capped by baselines.prior_count_cap when used.
	PriorRate  *float64 `json:"prior_rate,omitempty"`
	PriorCount float64  `json:"prior_count,omitempty"`
	// Extra holds the row's remaining fields (test_list, plus_test, environment ids, ...).
	Extra map[string]json.RawMessage `json:"-"`
}

// checkID refuses a task id that holds a control character: ids are printed on terminals (the
// CLI's tables and errors) and name every episode, so a task file's ids are plain text.
func checkID(id string) error {
	if i := strings.IndexFunc(id, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(id[i:])
		return fmt.Errorf("%q holds a control character (%U at byte %d); remove it from the id in the task file", id, r, i)
	}
	return nil
}
