//go:build duckdb_arrow

package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/schema"
)

// rawControl reports the first control character in s other than a line break.
func rawControl(s string) (int, bool) {
	i := strings.IndexFunc(s, func(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f })
	return i, i >= 0
}

// TestSQLTableEscapesControlCharacters: the table format prints NUL, ESC, CR and BEL of the
// queried text as escapes.
func TestSQLTableEscapesControlCharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	if _, err := run(t, "", "init", "--run", dir, "--tasks", fixtureTasks); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "", "sql", "--run", dir, `SELECT 'hotpotqa/' || chr(0) || 'f1' AS task_id, chr(27) || '[2J' || chr(27) || '[31mred' || chr(13) || chr(7) AS output`)
	if err != nil {
		t.Fatal(err)
	}
	if i, ok := rawControl(out); ok {
		t.Fatalf("control character %q at %d in\n%q", out[i], i, out)
	}
	for _, want := range []string{`hotpotqa/\x00f1`, `\x1b[2J\x1b[31mred\r\a`} {
		if !strings.Contains(out, want) {
			t.Errorf("want %s in\n%s", want, out)
		}
	}
}

// TestSQLCSVEscapesControlCharactersOnTheTerminal: --format csv on standard output prints the
// control characters of the queried text as escapes, as the table does; --out FILE keeps the
// exact bytes.
func TestSQLCSVEscapesControlCharactersOnTheTerminal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	if _, err := run(t, "", "init", "--run", dir, "--tasks", fixtureTasks); err != nil {
		t.Fatal(err)
	}
	query := `SELECT 'hotpotqa/' || chr(0) || 'f1' AS task_id, chr(27) || '[2J' || chr(27) || '[31mred' || chr(13) || chr(7) AS output`
	out, err := run(t, "", "sql", "--run", dir, "--format", "csv", query)
	if err != nil {
		t.Fatal(err)
	}
	if want := "task_id,output\nhotpotqa/\\x00f1,\\x1b[2J\\x1b[31mred\\r\\a\n"; out != want {
		t.Fatalf("printed %q, want %q", out, want)
	}
	file := filepath.Join(t.TempDir(), "out.csv")
	if _, err := run(t, "", "sql", "--run", dir, "--format", "csv", "--out", file, query); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "task_id,output\nhotpotqa/\x00f1,\"\x1b[2J\x1b[31mred\r\a\"\n" {
		t.Fatalf("--out wrote %q %v, want the exact bytes", b, err)
	}
}

// TestErrorsAreEscapedOnTheTerminal: an error quoting a server's message prints its control
// characters as escapes and keeps the error's own line breaks.
func TestErrorsAreEscapedOnTheTerminal(t *testing.T) {
	var b bytes.Buffer
	printError(&b, errors.New("3 of 3 episodes unhealthy; reasons:\n  3 x HTTP 400: \x1b[2J\x1b[31mbad\r\a"))
	want := "evosteer: 3 of 3 episodes unhealthy; reasons:\n  3 x HTTP 400: \\x1b[2J\\x1b[31mbad\\r\\a\n"
	if b.String() != want {
		t.Fatalf("printed %q, want %q", b.String(), want)
	}
}

// TestInitRefusesATaskIDWithAControlCharacter: init names the file, the line and the field.
func TestInitRefusesATaskIDWithAControlCharacter(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	writeFile(t, bad, `{"answer": "Paris", "kind": "hotpotqa", "prompt": "Q", "split": "train", "task_id": "hotpotqa/f1\u001b[2J", "task_type": "hotpotqa"}`+"\n")
	_, err := run(t, "", "init", "--run", filepath.Join(t.TempDir(), "r"), "--tasks", bad)
	if err == nil || !strings.Contains(err.Error(), bad+`: line 1: field "task_id": "hotpotqa/f1\x1b[2J" holds a control character`) {
		t.Fatalf("%v", err)
	}
	if _, ok := rawControl(err.Error()); ok {
		t.Fatalf("the refusal prints the id raw: %q", err)
	}
}

// TestInspectEscapesTheFilesText: inspect prints a file's lineage (run, stage, input names) with
// its control characters escaped.
func TestInspectEscapesTheFilesText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scores.arrow")
	lin := schema.Lineage{Run: "demo\x1b[2J", Step: 1, Stage: "rescore\r", Inputs: map[string]string{"step-000001/\x07decisions.arrow": "ab"}}
	if err := schema.Scores.WriteBatches(path, lin, scoresBatch(2, 0)); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "", "inspect", path)
	if err != nil {
		t.Fatal(err)
	}
	if i, ok := rawControl(out); ok {
		t.Fatalf("control character %q at %d in\n%s", out[i], i, out)
	}
	for _, want := range []string{`run:     demo\x1b[2J`, `stage:   rescore\r`, `step-000001/\adecisions.arrow`} {
		if !strings.Contains(out, want) {
			t.Errorf("want %s in\n%s", want, out)
		}
	}
}
