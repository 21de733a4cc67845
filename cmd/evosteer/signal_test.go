//go:build duckdb_arrow

package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSIGTERMExitsWith143AndSaysHowToResume: a train that a service manager, a scheduler or
// `kill` ends with SIGTERM stops as an interrupted one does: every finished stage kept, status
// 143 (128 + SIGTERM, as a shell reports it), one line saying how to resume, and it resumes.
func TestSIGTERMExitsWith143AndSaysHowToResume(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "small.yaml")
	writeFile(t, cfg, trainConfig)
	dir := filepath.Join(t.TempDir(), "demo")
	p := startCLI(t, "train", "--run", dir, "--config", cfg, "--steps", "50")
	p.waitLine(t, " done in ")
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var tail []string
	for line := range p.lines {
		tail = append(tail, line)
	}
	err := <-p.done
	text := strings.Join(tail, "\n")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 143 {
		t.Fatalf("exit %v, want status 143; stderr:\n%s", err, text)
	}
	if !strings.Contains(text, "evosteer: stopped by SIGTERM") || !strings.Contains(text, "run the same command again to resume") || strings.Contains(text, "context canceled") {
		t.Errorf("stderr:\n%s", text)
	}
	if len(runFiles(t, dir)) == 0 {
		t.Error("no finished stage was kept")
	}
	if out, err := run(t, "", "train", "--run", dir, "--steps", "1"); err != nil {
		t.Fatalf("resume after SIGTERM: %v\n%s", err, out)
	}
}
