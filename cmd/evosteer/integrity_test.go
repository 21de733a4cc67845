//go:build duckdb_arrow

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/schema"
)

// trainedRun trains a small run of the given extra configuration for steps steps.
func trainedRun(t *testing.T, name, extra string, steps string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	cfg := filepath.Join(t.TempDir(), "small.yaml")
	writeFile(t, cfg, trainConfig+extra)
	if out, err := run(t, "", "train", "--run", dir, "--config", cfg, "--steps", steps); err != nil {
		t.Fatalf("train %s: %v\n%s", name, err, out)
	}
	return dir
}

// copyFile copies a file over another.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// eval, step and rollout read a checkpoint only when it is the one its step's manifest records:
// another run's checkpoint is refused by each, naming the file and the command that recomputes
// it, and nothing is written; eval records what it read in its lineage.
func TestEveryCommandVerifiesTheCheckpointItReads(t *testing.T) {
	dir := trainedRun(t, "a", "", "2")
	other := trainedRun(t, "b", "seed: 7\n", "2")
	const ckpt = "step-000002/update/checkpoint/learner.arrow"
	good := filepath.Join(t.TempDir(), "learner.arrow")
	copyFile(t, filepath.Join(dir, ckpt), good)
	copyFile(t, filepath.Join(other, ckpt), filepath.Join(dir, ckpt))
	for _, args := range [][]string{
		{"eval", "--run", dir, "--runs", "1"},
		{"step", "--run", dir, "--step", "3"},
		{"rollout", "--run", dir, "--step", "3"},
	} {
		out, err := run(t, "", args...)
		if err == nil || !strings.Contains(err.Error(), ckpt) || !strings.Contains(err.Error(), "`evosteer update --run "+dir+" --step 2 --force`") {
			t.Errorf("%s with another run's checkpoint: %v\n%s", args[0], err, out)
		}
	}
	for _, p := range []string{"eval", "step-000003"} {
		if _, err := os.Stat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("a refused command wrote %s: %v", p, err)
		}
	}
	copyFile(t, good, filepath.Join(dir, ckpt))
	if out, err := run(t, "", "eval", "--run", dir, "--runs", "1"); err != nil {
		t.Fatalf("eval with the recorded checkpoint: %v\n%s", err, out)
	}
	sum, err := schema.SHA256File(good)
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "", "inspect", filepath.Join(dir, "eval", "results.arrow"), "--rows", "1")
	if err != nil || !strings.Contains(out, sum+"  "+ckpt) || !strings.Contains(out, "step-000000/update/checkpoint/learner.arrow") {
		t.Errorf("eval's lineage (inspect): %v\n%s", err, out)
	}
}

// Recomputing a stage never deletes a file the pipeline did not write: a user's file in a
// stage folder, or a step folder linking outside the run, is refused by name and left alone.
func TestRecomputingKeepsUsersFiles(t *testing.T) {
	dir := trainedRun(t, "a", "", "1")
	notes := filepath.Join(dir, "step-000001", "rollout", "notes.txt")
	writeFile(t, notes, "mine")
	if out, err := run(t, "", "step", "--run", dir, "--step", "1", "--force"); err == nil || !strings.Contains(err.Error(), "step-000001/rollout/notes.txt") {
		t.Errorf("step --force beside a user's file: %v\n%s", err, out)
	}
	if got, err := os.ReadFile(notes); err != nil || string(got) != "mine" {
		t.Errorf("the user's file: %q, %v", got, err)
	}

	victim := t.TempDir()
	keep := filepath.Join(victim, "rollout", "keep.txt")
	os.MkdirAll(filepath.Dir(keep), 0o755)
	writeFile(t, keep, "mine")
	if err := os.Symlink(victim, filepath.Join(dir, "step-000002")); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "", "train", "--run", dir, "--steps", "2"); err == nil || !strings.Contains(err.Error(), "step-000002") || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("train into a linked step folder: %v\n%s", err, out)
	}
	if got, err := os.ReadFile(keep); err != nil || string(got) != "mine" {
		t.Errorf("the user's file behind the link: %q, %v", got, err)
	}
}

// A sharded rollout recomputed whole (train --force), and a whole rollout redone in shards
// (--force: a shard of a step whose whole rollout is up to date is up to date; read by
// rescore), leave runs that train on.
func TestShardedRolloutThenForce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a")
	cfg := filepath.Join(t.TempDir(), "small.yaml")
	writeFile(t, cfg, trainConfig)
	if out, err := run(t, "", "init", "--run", dir, "--config", cfg); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"rollout", "--run", dir, "--step", "1", "--shard", "1/2"},
		{"rollout", "--run", dir, "--step", "1", "--shard", "2/2"},
		{"train", "--run", dir, "--steps", "1", "--force"},
		{"train", "--run", dir, "--steps", "2"},
		{"rollout", "--run", dir, "--step", "2", "--shard", "1/2", "--force"},
		{"rollout", "--run", dir, "--step", "2", "--shard", "2/2", "--force"},
		{"rescore", "--run", dir, "--step", "2"},
		{"train", "--run", dir, "--steps", "2"},
	} {
		if out, err := run(t, "", args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
}

// A deleted stage folder is named with its stage, its step and the command that recomputes it.
func TestDeletedStageFolderNamesTheCommand(t *testing.T) {
	dir := trainedRun(t, "a", "", "1")
	os.RemoveAll(filepath.Join(dir, "step-000001", "rescore"))
	out, err := run(t, "", "train", "--run", dir, "--steps", "1")
	if err == nil || !strings.Contains(err.Error(), "step 1 stage rescore") || !strings.Contains(err.Error(), "`evosteer rescore --run "+dir+" --step 1 --force`") || strings.Contains(err.Error(), "no such file") {
		t.Fatalf("train after a deleted stage folder: %v\n%s", err, out)
	}
	if out, err := run(t, "", "rescore", "--run", dir, "--step", "1", "--force"); err != nil {
		t.Fatalf("the named command: %v\n%s", err, out)
	}
	if out, err := run(t, "", "train", "--run", dir, "--steps", "1"); err != nil {
		t.Fatalf("train after the named command: %v\n%s", err, out)
	}
}
