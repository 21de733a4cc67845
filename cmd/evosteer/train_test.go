//go:build duckdb_arrow

package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/schema"
)

// TestMain lets a test run this binary as the CLI (EVOSTEER_TEST_CLI=1), so that a real process
// can be killed mid-stage.
func TestMain(m *testing.M) {
	if os.Getenv("EVOSTEER_TEST_CLI") == "1" {
		os.Args = append([]string{"evosteer"}, strings.Fields(os.Getenv("EVOSTEER_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const trainConfig = "batch:\n  tasks: 6\nauthor:\n  start_step: 1\ntasks:\n  train_per_family: 8\n  test_per_family: 2\n"

// runFiles hashes every Arrow file of a run (the manifests hold wall times, so they differ).
func runFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".arrow") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// cliProcess is `evosteer` run as a real process (this test binary, see TestMain), with its
// standard error as lines.
type cliProcess struct {
	cmd   *exec.Cmd
	lines chan string // closed when the process has exited
	done  chan error  // its exit
}

// startCLI starts `evosteer args...` as a process.
func startCLI(t *testing.T, args ...string) *cliProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "EVOSTEER_TEST_CLI=1", "EVOSTEER_TEST_ARGS="+strings.Join(args, " "))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = w // a file: the child writes to it directly, and EOF means it has exited
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	p := &cliProcess{cmd: cmd, lines: make(chan string, 1024), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		r.Close()
		close(p.lines)
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	return p
}

// kill ends the process with SIGKILL and waits for it.
func (p *cliProcess) kill() {
	p.cmd.Process.Kill()
	for range p.lines {
	}
	<-p.done
}

// killAfter kills the process a delay after its n-th finished stage (n = 0: a delay after its
// start). It reports false when the process exited first.
func (p *cliProcess) killAfter(n int, delay time.Duration) bool {
	var countdown <-chan time.Time
	if n == 0 {
		countdown = time.After(delay)
	}
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				return false
			}
			if strings.Contains(line, " done in ") {
				if n--; n == 0 {
					countdown = time.After(delay)
				}
			}
		case <-countdown:
			p.kill()
			return true
		}
	}
}

// waitLine waits for a line of standard error containing s, failing the test when the process
// exits first.
func (p *cliProcess) waitLine(t *testing.T, s string) string {
	t.Helper()
	var seen []string
	for line := range p.lines {
		if strings.Contains(line, s) {
			return line
		}
		seen = append(seen, line)
	}
	t.Fatalf("the process exited (%v) without printing %q:\n%s", <-p.done, s, strings.Join(seen, "\n"))
	return ""
}

// TestTrainResumesToTheSameFiles kills `evosteer train` (SIGKILL, a real process) at points tied
// to its progress — a random share of a stage's mean time after its 0th, 1st or 2nd finished
// stage, so kills land during init, in stages and between them on a fast machine and a slow one
// alike — resumes it, lets the attempt after the last kill run to the end, and checks that every
// file hashes the same as in an uninterrupted run; then that a run changed outside the pipeline
// is refused on resume.
func TestTrainResumesToTheSameFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: trains four small runs")
	}
	cfg := filepath.Join(t.TempDir(), "small.yaml")
	writeFile(t, cfg, trainConfig)
	const steps, maxKills = "3", 6
	ref := filepath.Join(t.TempDir(), "demo")
	start := time.Now()
	if out, err := run(t, "", "train", "--run", ref, "--config", cfg, "--steps", steps); err != nil {
		t.Fatalf("uninterrupted train: %v\n%s", err, out)
	}
	stageTime := time.Since(start) / (3 * 6)
	want := runFiles(t, ref)
	if len(want) < 3*10 {
		t.Fatalf("only %d files in the uninterrupted run", len(want))
	}
	for seed := uint64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		dir := filepath.Join(t.TempDir(), "demo")
		kills := 0
		for {
			args := []string{"train", "--run", dir, "--steps", steps}
			if _, err := os.Stat(filepath.Join(dir, "run.yaml")); err != nil {
				args = append(args, "--config", cfg) // the run is not created yet
			}
			p := startCLI(t, args...)
			if kills == maxKills {
				for range p.lines {
				}
				if err := <-p.done; err != nil {
					t.Fatalf("seed %d: train after %d kills failed: %v", seed, kills, err)
				}
				break
			}
			// Kill a random share of a stage's mean time after its 0th, 1st or 2nd finished stage.
			if !p.killAfter(rng.IntN(3), time.Duration(rng.Float64()*float64(stageTime))) {
				if err := <-p.done; err != nil {
					t.Fatalf("seed %d: train failed after %d kills: %v", seed, kills, err)
				}
				break // it finished first
			}
			kills++
		}
		got := runFiles(t, dir)
		for name, sum := range want {
			if got[name] != sum {
				t.Errorf("seed %d (%d kills): %s differs from the uninterrupted run (%s vs %s)", seed, kills, name, got[name], sum)
			}
		}
		if len(got) != len(want) {
			t.Errorf("seed %d: %d files, uninterrupted %d", seed, len(got), len(want))
		}
		t.Logf("seed %d: finished after %d kills, %d files identical", seed, kills, len(got))
	}
	// A finished output changed by hand: resume refuses, naming the file.
	victim := filepath.Join(ref, "step-000002", "update", "losses.arrow")
	data, _ := os.ReadFile(victim)
	data[len(data)/2] ^= 1
	writeFile(t, victim, string(data))
	if out, err := run(t, "", "train", "--run", ref, "--steps", steps); err == nil || !strings.Contains(err.Error(), "step-000002/update/losses.arrow") {
		t.Fatalf("changed run resumed: %v\n%s", err, out)
	}
}

// TestSmallTaskPool trains a run whose families have fewer training tasks (1) than their share
// of a step's batch (2 of 12 over 6 families): init says so, every step uses each task once, so
// its episode ids are unique, and training goes through.
func TestSmallTaskPool(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	cfg := filepath.Join(t.TempDir(), "small.yaml")
	writeFile(t, cfg, "batch:\n  tasks: 12\ntasks:\n  train_per_family: 1\n  test_per_family: 1\n")
	out, err := run(t, "", "train", "--run", dir, "--config", cfg, "--steps", "2")
	if err != nil {
		t.Fatalf("train: %v\n%s", err, out)
	}
	if !strings.Contains(out, "note: family hotpotqa has 1 training tasks, fewer than its share of a step's batch (up to 2 of batch.tasks 12 over 6 families)") {
		t.Errorf("init did not note the small pools:\n%s", out)
	}
	r, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for step := 1; step <= 2; step++ {
		paths, err := rundir.Shards(r.StageDir(step, "rollout"), "episodes")
		if err != nil {
			t.Fatal(err)
		}
		eps, err := schema.ReadFiles[schema.EpisodeRow](schema.Episodes, paths)
		if err != nil {
			t.Fatal(err)
		}
		ids, tasks := map[string]bool{}, map[string]bool{}
		for _, e := range eps {
			if ids[e.EpisodeID] {
				t.Errorf("step %d: episode %s twice", step, e.EpisodeID)
			}
			ids[e.EpisodeID], tasks[e.TaskID] = true, true
		}
		if len(tasks) != 6 || len(ids) < 6*4 {
			t.Errorf("step %d: %d tasks, %d episodes; want the 6 tasks, 2 θ and 2 ρ episodes each", step, len(tasks), len(ids))
		}
	}
}

// TestCtrlCAndSIGTERMExitAndSayHowToResume: a train interrupted by Ctrl-C, or ended with SIGTERM
// by a service manager, a scheduler or `kill`, keeps every finished stage, exits with the status
// a shell reports for the signal (128 + its number: 130, 143), says how to resume instead of
// "context canceled", and resumes.
func TestCtrlCAndSIGTERMExitAndSayHowToResume(t *testing.T) {
	for _, c := range []struct {
		name   string
		signal os.Signal
		status int
		says   string
	}{{"Ctrl-C", os.Interrupt, 130, "interrupted"}, {"SIGTERM", syscall.SIGTERM, 143, "evosteer: stopped by SIGTERM"}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "small.yaml")
			writeFile(t, cfg, trainConfig)
			dir := filepath.Join(t.TempDir(), "demo")
			p := startCLI(t, "train", "--run", dir, "--config", cfg, "--steps", "50")
			p.waitLine(t, " done in ")
			if err := p.cmd.Process.Signal(c.signal); err != nil {
				t.Fatal(err)
			}
			var tail []string
			for line := range p.lines {
				tail = append(tail, line)
			}
			err := <-p.done
			text := strings.Join(tail, "\n")
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != c.status {
				t.Fatalf("exit %v, want status %d; stderr:\n%s", err, c.status, text)
			}
			if !strings.Contains(text, c.says) || !strings.Contains(text, "run the same command again to resume") || strings.Contains(text, "context canceled") {
				t.Errorf("stderr:\n%s", text)
			}
			if len(runFiles(t, dir)) == 0 {
				t.Error("no finished stage was kept")
			}
			if out, err := run(t, "", "train", "--run", dir, "--steps", "1"); err != nil {
				t.Fatalf("resume after %s: %v\n%s", c.name, err, out)
			}
		})
	}
}
