//go:build duckdb_arrow && unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTrainAfterKilledInit kills `evosteer init` while it creates the run — blocked reading a
// task file that is a FIFO nobody writes — and checks that a later `train` of the same folder
// creates the run and trains it, leaving nothing of the killed creation beside it.
func TestTrainAfterKilledInit(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "demo")
	fifo := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	p := startCLI(t, "init", "--run", dir, "--tasks", fifo)
	deadline := time.Now().Add(time.Minute)
	for {
		if tmps, _ := filepath.Glob(filepath.Join(parent, "*")); len(tmps) > 0 {
			break // it is creating the run (the old code made demo/tasks, the new a .demo.init-* folder)
		}
		if time.Now().After(deadline) {
			t.Fatal("init did not start creating the run within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let it reach the FIFO
	p.kill()

	cfg := filepath.Join(t.TempDir(), "small.yaml")
	writeFile(t, cfg, trainConfig)
	if out, err := run(t, "", "train", "--run", dir, "--config", cfg, "--steps", "1"); err != nil {
		t.Fatalf("train after a killed init: %v\n%s", err, out)
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 1 || entries[0].Name() != "demo" {
		t.Fatalf("beside the run: %v", entries)
	}
}

// TestSecondWriterIsRefused runs `evosteer train` as a process and, while it trains, checks that
// every other command that writes the run is refused with one line naming its pid, that readers
// are not, and that once it is killed the run can be written again.
func TestSecondWriterIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	cfg := filepath.Join(t.TempDir(), "small.yaml")
	writeFile(t, cfg, trainConfig)
	p := startCLI(t, "train", "--run", dir, "--config", cfg, "--steps", "50")
	p.waitLine(t, " done in ")
	holder := fmt.Sprintf("being written by pid %d: ", p.cmd.Process.Pid)
	for _, args := range [][]string{
		{"train", "--run", dir, "--steps", "2"},
		{"step", "--run", dir, "--step", "1"},
		{"rollout", "--run", dir, "--step", "2"},
		{"rollout", "--run", dir, "--step", "2", "--shard", "1/2"},
		{"update", "--run", dir, "--step", "1"},
		{"eval", "--run", dir, "--runs", "1"},
		{"probe", "--run", dir, "--step", "0"},
	} {
		_, err := run(t, "", args...)
		if err == nil || !strings.Contains(err.Error(), holder) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s beside a training process: %v", strings.Join(args, " "), err)
		}
	}
	if out, err := run(t, "", "sql", "--run", dir, "--format", "csv", "SELECT count(*) > 0 AS some FROM episodes"); err != nil || out != "some\ntrue\n" {
		t.Errorf("sql beside a training process: %v\n%s", err, out)
	}
	if out, err := run(t, "", "inspect", filepath.Join(dir, "tasks", "train.arrow")); err != nil {
		t.Errorf("inspect beside a training process: %v\n%s", err, out)
	}
	p.kill()
	if out, err := run(t, "", "train", "--run", dir, "--steps", "1"); err != nil {
		t.Fatalf("train after the holder was killed: %v\n%s", err, out)
	}
}
