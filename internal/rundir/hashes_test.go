package rundir

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A file a stage of this process wrote is hashed once, when it is written: the stages that read
// it later take its recorded sum (no sha256 computed again, however many read it), and a file
// replaced outside the pipeline, even with its size and modification time put back, is hashed
// afresh and refused.
func TestWrittenFilesAreHashedOnce(t *testing.T) {
	ctx := context.Background()
	r := newRun(t)
	const out = "step-000001/update/checkpoint/learner.arrow"
	if _, err := r.RunStage(ctx, 1, writeStage("update", "", "theta", "checkpoint/learner.arrow"), false); err != nil {
		t.Fatal(err)
	}
	before := r.hashes.computed
	for step := 2; step <= 4; step++ {
		runs := 0
		if _, err := r.RunStage(ctx, step, copyStage(out, &runs), false); err != nil || runs != 1 {
			t.Fatalf("step %d: %v (runs %d)", step, err, runs)
		}
	}
	if got := r.hashes.computed - before; got != 0 {
		t.Fatalf("three readers of a file this process wrote computed %d sha256s, want 0", got)
	}

	path := filepath.Join(r.Dir, out)
	if runtime.GOOS != "linux" {
		t.Skip("off Linux a file's identity is its size and modification time (fileid_other.go)")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // a change time that differs even on coarse clocks
	if err := os.WriteFile(path, []byte("THETA"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.VerifyInputs([]string{path}); err == nil || !strings.Contains(err.Error(), out) {
		t.Fatalf("a file replaced with its size and modification time kept: %v", err)
	}

	// A new process (a resumed train) knows no sum: it hashes what it verifies, once.
	if _, err := r.RunStage(ctx, 1, writeStage("update", "", "theta", "checkpoint/learner.arrow"), true); err != nil {
		t.Fatal(err)
	}
	again, err := Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(r.Dir, "step-000002/copy/out.txt")
	for range 2 {
		if _, err := again.VerifyInputs([]string{copied}); err != nil {
			t.Fatal(err)
		}
	}
	if again.hashes.computed != 1 {
		t.Fatalf("a reopened run hashed a file %d times for two verifications, want 1", again.hashes.computed)
	}
}

// A stage recorded by an older program, before the stage gained an output (a running state),
// is not up to date: resuming the run recomputes it and writes the new file.
func TestAStageThatGainedAnOutputIsRecomputed(t *testing.T) {
	ctx := context.Background()
	r := newRun(t)
	if _, err := r.RunStage(ctx, 1, writeStage("aggregate", "", "x", "anchors.arrow"), false); err != nil {
		t.Fatal(err)
	}
	again, err := r.RunStage(ctx, 1, writeStage("aggregate", "", "x", "anchors.arrow"), false)
	if err != nil || !again.Skipped {
		t.Fatalf("the unchanged stage: skipped %v, %v", again.Skipped, err)
	}
	res, err := r.RunStage(ctx, 1, writeStage("aggregate", "", "x", "anchors.arrow", "anchor_pool.arrow"), false)
	if err != nil || res.Skipped {
		t.Fatalf("the stage with a new output: skipped %v, %v", res.Skipped, err)
	}
	if _, err := os.Stat(filepath.Join(r.StageDir(1, "aggregate"), "anchor_pool.arrow")); err != nil {
		t.Fatal(err)
	}
}
