package rundir

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
)

// writeStage is a stage that writes text into each of its outputs.
func writeStage(name, shard, text string, outputs ...string) testStage {
	return testStage{name: name, shard: shard, outputs: outputs, run: func(_ context.Context, sc *StageContext) error {
		for _, o := range outputs {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(sc.OutDir, o)), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(sc.OutDir, o), []byte(text), 0o644); err != nil {
				return err
			}
		}
		return nil
	}}
}

// A stage's input that another stage wrote must be the file that stage's manifest records,
// under the run's configuration: one replaced by hand (another run's checkpoint) or a step
// folder copied from another run is refused before the stage runs, naming the file and the
// command that recomputes it; VerifyInputs gives the same check to commands outside the runner.
func TestInputsAreVerifiedAgainstTheirManifest(t *testing.T) {
	ctx := context.Background()
	r := newRun(t)
	const ckpt = "step-000001/update/checkpoint/learner.arrow"
	if _, err := r.RunStage(ctx, 1, writeStage("update", "", "theta", "checkpoint/learner.arrow"), false); err != nil {
		t.Fatal(err)
	}
	runs := 0
	reader := copyStage(ckpt, &runs)
	if _, err := r.RunStage(ctx, 2, reader, false); err != nil || runs != 1 {
		t.Fatalf("recorded input: %v (runs %d)", err, runs)
	}
	sums, err := r.VerifyInputs([]string{filepath.Join(r.Dir, ckpt)})
	if err != nil || sums[ckpt] == "" {
		t.Fatalf("VerifyInputs: %v %v", sums, err)
	}

	os.WriteFile(filepath.Join(r.Dir, ckpt), []byte("another run's theta"), 0o644)
	_, err = r.RunStage(ctx, 2, reader, true)
	if err == nil || runs != 1 || !strings.Contains(err.Error(), ckpt) || !strings.Contains(err.Error(), "`evosteer update --run "+r.Dir+" --step 1 --force`") {
		t.Fatalf("replaced input: %v (runs %d)", err, runs)
	}
	if _, err := r.VerifyInputs([]string{filepath.Join(r.Dir, ckpt)}); err == nil || !strings.Contains(err.Error(), ckpt) {
		t.Fatalf("VerifyInputs of a replaced input: %v", err)
	}

	// The whole step folder of another run (its manifest too): the configuration differs.
	cfg, _ := config.Default()
	cfg.Seed++
	other, err := Init(filepath.Join(t.TempDir(), "other"), cfg, "test-version", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.RunStage(ctx, 1, writeStage("update", "", "theta", "checkpoint/learner.arrow"), false); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(r.StepDir(1))
	if err := os.Rename(other.StepDir(1), r.StepDir(1)); err != nil {
		t.Fatal(err)
	}
	_, err = r.RunStage(ctx, 2, reader, true)
	if err == nil || runs != 1 || !strings.Contains(err.Error(), cfg.SHA256()) || !strings.Contains(err.Error(), r.Config.SHA256()) || !strings.Contains(err.Error(), "`evosteer step --run "+r.Dir+" --step 1 --force`") {
		t.Fatalf("another run's step folder: %v (runs %d)", err, runs)
	}

	// A file in a recorded stage folder that its manifest does not list is not an output either.
	if _, err := r.RunStage(ctx, 1, writeStage("update", "", "theta", "checkpoint/learner.arrow"), true); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(r.StageDir(1, "update"), "extra.arrow"), []byte("x"), 0o644)
	if _, err := r.RunStage(ctx, 2, copyStage("step-000001/update/extra.arrow", &runs), true); err == nil || !strings.Contains(err.Error(), "step-000001/update/extra.arrow") {
		t.Fatalf("unrecorded file in a recorded stage folder: %v", err)
	}
}

// Recomputing a stage replaces its folder whole, so a step or stage folder that is a link, or a
// stage folder holding a file the pipeline did not write, is refused before anything is
// removed, naming the path and what to do; the user's files stay.
func TestRecomputeRefusesUsersFilesAndLinks(t *testing.T) {
	ctx := context.Background()
	r := newRun(t)
	st := writeStage("rollout", "", "a", "episodes.arrow")
	if _, err := r.RunStage(ctx, 1, st, false); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(r.StageDir(1, "rollout"), "notes.txt")
	os.WriteFile(notes, []byte("mine"), 0o644)
	_, err := r.RunStage(ctx, 1, st, true)
	if err == nil || !strings.Contains(err.Error(), "step-000001/rollout/notes.txt") || !strings.Contains(err.Error(), "out of the run folder") {
		t.Fatalf("a user's file in the stage folder: %v", err)
	}
	if got, err := os.ReadFile(notes); err != nil || string(got) != "mine" {
		t.Fatalf("the user's file: %q, %v", got, err)
	}
	os.Remove(notes)
	if _, err := r.RunStage(ctx, 1, st, true); err != nil {
		t.Fatalf("the stage folder holding only its outputs: %v", err)
	}

	// A step folder that links outside the run.
	victim := t.TempDir()
	keep := filepath.Join(victim, "rollout", "keep.txt")
	os.MkdirAll(filepath.Dir(keep), 0o755)
	os.WriteFile(keep, []byte("mine"), 0o644)
	if err := os.Symlink(victim, r.StepDir(2)); err != nil {
		t.Fatal(err)
	}
	_, err = r.RunStage(ctx, 2, st, false)
	if err == nil || !strings.Contains(err.Error(), "step-000002") || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("a linked step folder: %v", err)
	}
	if got, err := os.ReadFile(keep); err != nil || string(got) != "mine" {
		t.Fatalf("the user's file behind the link: %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(victim, "rollout", "episodes.arrow")); !os.IsNotExist(err) {
		t.Fatalf("the stage wrote through the link: %v", err)
	}

	// A stage folder that links elsewhere.
	os.MkdirAll(r.StepDir(3), 0o755)
	if err := os.Symlink(filepath.Join(victim, "rollout"), r.StageDir(3, "rollout")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RunStage(ctx, 3, st, false); err == nil || !strings.Contains(err.Error(), "step-000003/rollout") || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("a linked stage folder: %v", err)
	}
	if got, err := os.ReadFile(keep); err != nil || string(got) != "mine" {
		t.Fatalf("the user's file behind the stage link: %q, %v", got, err)
	}
}

// The manifest follows the stage folder's layout: a whole stage replaces the records of its
// shards, and a shard of n replaces the whole stage's files and records and those of shards of
// another count, so every layout change leaves a run that verifies.
func TestManifestFollowsTheShardLayout(t *testing.T) {
	ctx := context.Background()
	r := newRun(t)
	shard := func(sh string) testStage {
		return writeStage("rollout", sh, sh, "episodes-"+sh+".arrow")
	}
	for _, sh := range []string{"1-of-2", "2-of-2"} {
		if _, err := r.RunStage(ctx, 1, shard(sh), false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.RunStage(ctx, 1, writeStage("rollout", "", "whole", "episodes.arrow"), true); err != nil {
		t.Fatal(err)
	}
	m, _ := r.ReadManifest(1)
	if len(m.Stages) != 1 || len(m.Stages["rollout"].Outputs) != 1 {
		t.Fatalf("after a whole rollout over shards the manifest holds %v", m.Stages)
	}
	if err := r.Verify(1); err != nil {
		t.Fatalf("after a whole rollout over shards: %v", err)
	}

	// A shard over an up-to-date whole stage is up to date (the whole holds its work), so these
	// shards are forced: a shard run anew replaces the layout.
	for _, sh := range []string{"1-of-3", "2-of-2"} {
		if _, err := r.RunStage(ctx, 1, shard(sh), true); err != nil {
			t.Fatal(err)
		}
		m, _ := r.ReadManifest(1)
		if len(m.Stages) != 1 || len(m.Stages["rollout#"+sh].Outputs) != 1 {
			t.Fatalf("after shard %s the manifest holds %v", sh, m.Stages)
		}
		entries, _ := os.ReadDir(r.StageDir(1, "rollout"))
		if len(entries) != 1 || entries[0].Name() != "episodes-"+sh+".arrow" {
			t.Fatalf("after shard %s the stage folder holds %v", sh, entries)
		}
		if err := r.Verify(1); err != nil {
			t.Fatalf("after shard %s: %v", sh, err)
		}
	}
}

// A recorded output that is gone (its stage folder deleted) is named with its stage, step and
// the command that recomputes it, not only "no such file".
func TestVerifyNamesTheCommandForADeletedStage(t *testing.T) {
	ctx := context.Background()
	r := newRun(t)
	if _, err := r.RunStage(ctx, 1, writeStage("rescore", "", "s", "scores.arrow"), false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RunStage(ctx, 1, writeStage("rollout", "2-of-2", "s", "episodes-2-of-2.arrow"), false); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(r.StageDir(1, "rescore"))
	err := r.Verify(1)
	if err == nil || !strings.Contains(err.Error(), "step 1 stage rescore") || strings.Contains(err.Error(), "no such file") ||
		!strings.Contains(err.Error(), "`evosteer rescore --run "+r.Dir+" --step 1 --force`") {
		t.Fatalf("deleted stage folder: %v", err)
	}
	os.MkdirAll(r.StageDir(1, "rescore"), 0o755)
	os.WriteFile(filepath.Join(r.StageDir(1, "rescore"), "scores.arrow"), []byte("s"), 0o644)
	os.RemoveAll(r.StageDir(1, "rollout"))
	if err := r.Verify(1); err == nil || !strings.Contains(err.Error(), "`evosteer rollout --run "+r.Dir+" --step 1 --shard 2/2 --force`") {
		t.Fatalf("deleted shard: %v", err)
	}
}
