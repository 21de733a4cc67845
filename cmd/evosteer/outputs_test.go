//go:build duckdb_arrow

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputsNeverOverwriteInputs: grade --scores and calibrate --out refuse to write a file
// that is one of their inputs, by file identity (the same path, a hard link or a symbolic link
// to it), in one line naming both, before any work; the inputs are left as they were.
func TestOutputsNeverOverwriteInputs(t *testing.T) {
	dir := t.TempDir()
	taskData, err := os.ReadFile(fixtureTasks)
	if err != nil {
		t.Fatal(err)
	}
	tasks := filepath.Join(dir, "t2.jsonl")
	preds := filepath.Join(dir, "p.jsonl")
	const predData = `{"task_id": "hotpotqa/f1", "output": "Answer: Paris"}` + "\n"
	writeFile(t, tasks, string(taskData))
	writeFile(t, preds, predData)
	hard := filepath.Join(dir, "hard.jsonl")
	if err := os.Link(tasks, hard); err != nil {
		t.Fatal(err)
	}
	soft := filepath.Join(dir, "soft.jsonl")
	if err := os.Symlink("p.jsonl", soft); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ scores, input, flag string }{
		{tasks, tasks, "--tasks"}, {preds, preds, "--predictions"}, {hard, tasks, "--tasks"}, {soft, preds, "--predictions"},
	} {
		_, err := run(t, "", "grade", "--tasks", tasks, "--predictions", preds, "--scores", c.scores)
		want := "grade: --scores " + c.scores + " is the input " + c.flag + " " + c.input + " (the same file)"
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("--scores %s: got %v, want %q", c.scores, err, want)
		}
	}
	if got, _ := os.ReadFile(tasks); string(got) != string(taskData) {
		t.Error("grade changed its task file")
	}
	if got, _ := os.ReadFile(preds); string(got) != predData {
		t.Error("grade changed its predictions file")
	}
	// A new scores file is still written.
	if _, err := run(t, "", "grade", "--tasks", tasks, "--predictions", preds, "--scores", filepath.Join(dir, "s.jsonl")); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "fit")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	world := filepath.Join(out, "world.yaml")
	const worldData = "steps: 40\n"
	writeFile(t, world, worldData)
	targets := filepath.Join(dir, "t.csv")
	writeFile(t, targets, "benchmark,policy,score\nnq_open,direct,23.59\n")
	if err := os.Link(targets, filepath.Join(out, "fit.md")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--targets", targets, "--config", world}, "calibrate: --out " + world + " is the input --config " + world + " (the same file)"},
		{[]string{"--targets", targets}, "calibrate: --out " + filepath.Join(out, "fit.md") + " is the input --targets " + targets + " (the same file)"},
	} {
		_, err := run(t, "", append([]string{"calibrate", "--out", out}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("calibrate %v: got %v, want %q", c.args, err, c.want)
		}
	}
	if got, _ := os.ReadFile(world); string(got) != worldData {
		t.Error("calibrate changed its configuration file")
	}
}
