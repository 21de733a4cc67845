//go:build duckdb_arrow

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestTrainResumesToTheSameFiles kills `evosteer train` (SIGKILL, a real process) at random
// points, resumes it until it finishes, and checks that every file hashes the same as in an
// uninterrupted run; then that a run changed outside the pipeline is refused on resume.
func TestTrainResumesToTheSameFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: trains three small runs")
	}
	cfg := filepath.Join(t.TempDir(), "small.yaml")
	writeFile(t, cfg, trainConfig)
	const steps = "3"
	ref := filepath.Join(t.TempDir(), "demo")
	if out, err := run(t, "", "train", "--run", ref, "--config", cfg, "--steps", steps); err != nil {
		t.Fatalf("uninterrupted train: %v\n%s", err, out)
	}
	want := runFiles(t, ref)
	if len(want) < 3*10 {
		t.Fatalf("only %d files in the uninterrupted run", len(want))
	}
	for seed := uint64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		dir := filepath.Join(t.TempDir(), "demo")
		kills := 0
		for attempt := 0; ; attempt++ {
			if attempt > 40 {
				t.Fatalf("seed %d: train did not finish after %d kills", seed, kills)
			}
			args := "train --run " + dir + " --steps " + steps
			if attempt == 0 {
				args += " --config " + cfg
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "EVOSTEER_TEST_CLI=1", "EVOSTEER_TEST_ARGS="+args)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("seed %d attempt %d: train failed: %v", seed, attempt, err)
				}
			case <-time.After(time.Duration(150+rng.IntN(1200)) * time.Millisecond):
				cmd.Process.Kill()
				<-done
				kills++
				continue
			}
			break
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
