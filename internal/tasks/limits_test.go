package tasks

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/schema"
)

const fixtureRow = `{"answer": "Paris", "kind": "hotpotqa", "prompt": "Q", "split": "train", "task_id": "hotpotqa/f1", "task_type": "hotpotqa"}`

// TestTaskLineOverSixteenMiBIsRefused: a task row longer than 16 MiB is refused with the file,
// the line and the limit.
func TestTaskLineOverSixteenMiBIsRefused(t *testing.T) {
	long := `{"answer": "Paris", "kind": "hotpotqa", "prompt": "` + strings.Repeat("x", 16<<20) + `", "split": "train", "task_id": "hotpotqa/f2", "task_type": "hotpotqa"}`
	_, err := ParseJSONL("big.jsonl", strings.NewReader(fixtureRow+"\n"+long+"\n"))
	if err == nil || !strings.Contains(err.Error(), "read big.jsonl: line 2: longer than 16 MiB") {
		t.Fatalf("a 16 MiB prompt: %v", err)
	}
}

// endless is one line that never ends, counting what was read of it.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.n += len(p)
	return len(p), nil
}

// TestTaskLineIsRefusedBeforeItIsBuffered: reading stops within a buffer of the limit.
func TestTaskLineIsRefusedBeforeItIsBuffered(t *testing.T) {
	e := &endless{}
	_, err := ParseJSONL("endless.jsonl", io.MultiReader(strings.NewReader(`{"prompt": "`), e))
	if err == nil || !strings.Contains(err.Error(), "line 1: longer than 16 MiB") {
		t.Fatalf("an endless line: %v", err)
	}
	if e.n > 16<<20+2<<20 {
		t.Fatalf("read %d MiB of the line before refusing it", e.n>>20)
	}
}

// TestTaskIDWithAControlCharacterIsRefused: a task id holding a control character is refused,
// in a JSONL row (naming the file, the line and the field) and in an Arrow task file.
func TestTaskIDWithAControlCharacterIsRefused(t *testing.T) {
	for _, id := range []string{`hotpotqa/f1\u001b[2J`, `hotpotqa/f1\r`, `hotpotqa/\u0000f1`, `hotpotqa/f1\u0085`} {
		row := strings.Replace(fixtureRow, `"hotpotqa/f1"`, `"`+id+`"`, 1)
		_, err := ParseJSONL("t.jsonl", strings.NewReader(fixtureRow+"\n"+row+"\n"))
		if err == nil || !strings.Contains(err.Error(), `read t.jsonl: line 2: field "task_id": `) || !strings.Contains(err.Error(), "control character") {
			t.Errorf("task id %s: %v", id, err)
		} else if bytes.ContainsAny([]byte(err.Error()), "\x1b\r\x00") {
			t.Errorf("task id %s: the refusal prints it raw: %q", id, err)
		}
	}
	path := filepath.Join(t.TempDir(), "t.arrow")
	bad := Task{ID: "hotpotqa/f1\x1b[2J", Family: "hotpotqa", TaskType: "hotpotqa", Split: "train", Prompt: "Q", Answers: []string{"Paris"}}
	if err := WriteFile(path, schema.Lineage{Run: "r", Stage: "init"}, []Task{bad}); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFiles([]string{path}); err == nil || !strings.Contains(err.Error(), path+": row 1: ") || !strings.Contains(err.Error(), "control character") {
		t.Errorf("an Arrow task file: %v", err)
	}
}
