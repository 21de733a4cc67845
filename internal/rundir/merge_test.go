package rundir

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// mergeStage is a Mergeable stage writing "<i>" into out[-i-of-n].txt, counting its runs;
// its merge concatenates the shards' files in shard order.
type mergeStage struct {
	i, n  int
	runs  *[]string
	fails int // this shard fails
}

func (s mergeStage) Name() string { return "rollout" }
func (s mergeStage) ShardName() string {
	if s.n <= 1 {
		return ""
	}
	return strings.Join([]string{itoa(s.i), "of", itoa(s.n)}, "-")
}
func (s mergeStage) file() string {
	if s.n <= 1 {
		return "out.txt"
	}
	return "out-" + s.ShardName() + ".txt"
}
func (s mergeStage) Inputs(*Folder, int) (Resolved, error) { return Files{}, nil }
func (s mergeStage) Outputs(*Folder, int) []string         { return []string{s.file()} }
func (s mergeStage) Run(_ context.Context, sc *StageContext) error {
	*s.runs = append(*s.runs, s.file())
	if s.fails != 0 && s.fails == s.i {
		return os.ErrDeadlineExceeded
	}
	return os.WriteFile(filepath.Join(sc.OutDir, s.file()), []byte(itoa(s.i)), 0o644)
}
func (s mergeStage) AsShard(i, n int) Stage {
	return mergeStage{i: i, n: n, runs: s.runs, fails: s.fails}
}
func (s mergeStage) MergeShards(_ context.Context, sc *StageContext, n int) error {
	var all []byte
	for i := 1; i <= n; i++ {
		b, err := os.ReadFile(filepath.Join(sc.Folder.StageDir(sc.Step, "rollout"), "out-"+itoa(i)+"-of-"+itoa(n)+".txt"))
		if err != nil {
			return err
		}
		all = append(all, b...)
	}
	return os.WriteFile(filepath.Join(sc.OutDir, "out.txt"), all, 0o644)
}

func itoa(i int) string { return string(rune('0' + i)) }

// The whole run of a Mergeable stage whose shards are recorded: a complete set is merged without
// running the stage (its record is the whole stage's, up to date afterwards, and a shard run again
// is up to date too); a partial set runs only its missing shards, and a missing shard that fails
// is named with the command that runs it alone; no shard up to date, or --force, runs it whole.
func TestWholeStageMergesItsShards(t *testing.T) {
	ctx := context.Background()
	r := newRun(t)
	var runs []string
	whole := mergeStage{n: 1, runs: &runs}
	for _, i := range []int{1, 3} {
		if _, err := r.RunStage(ctx, 1, whole.AsShard(i, 3), false); err != nil {
			t.Fatal(err)
		}
	}
	runs = nil
	res, err := r.RunStage(ctx, 1, whole, false)
	if err != nil || res.Skipped || res.Merged != 3 || !slices.Equal(res.Reran, []int{2}) || !slices.Equal(runs, []string{"out-2-of-3.txt"}) {
		t.Fatalf("partial set: %+v %v, runs %v", res, err, runs)
	}
	if got, _ := os.ReadFile(filepath.Join(r.StageDir(1, "rollout"), "out.txt")); string(got) != "123" {
		t.Fatalf("merged file %q", got)
	}
	m, _ := r.ReadManifest(1)
	if len(m.Stages) != 1 || len(m.Stages["rollout"].Outputs) != 1 {
		t.Fatalf("after the merge the manifest holds %v", m.Stages)
	}
	entries, _ := os.ReadDir(r.StageDir(1, "rollout"))
	if len(entries) != 1 {
		t.Fatalf("after the merge the stage folder holds %v", entries)
	}
	if err := r.Verify(1); err != nil {
		t.Fatal(err)
	}
	runs = nil
	if res, err := r.RunStage(ctx, 1, whole, false); err != nil || !res.Skipped || res.Merged != 0 || len(runs) != 0 {
		t.Fatalf("after the merge: %+v %v, runs %v", res, err, runs)
	}
	if res, err := r.RunStage(ctx, 1, whole.AsShard(2, 3), false); err != nil || !res.Skipped || len(runs) != 0 {
		t.Fatalf("a shard after the merge: %+v %v, runs %v", res, err, runs)
	}

	// A complete set: merged, nothing runs.
	for i := 1; i <= 2; i++ {
		if _, err := r.RunStage(ctx, 2, whole.AsShard(i, 2), false); err != nil {
			t.Fatal(err)
		}
	}
	runs = nil
	if res, err := r.RunStage(ctx, 2, whole, false); err != nil || !res.Skipped || res.Merged != 2 || len(res.Reran) != 0 || len(runs) != 0 {
		t.Fatalf("complete set: %+v %v, runs %v", res, err, runs)
	}

	// A missing shard that fails: named, with the command that runs it alone; nothing merged.
	if _, err := r.RunStage(ctx, 3, whole.AsShard(1, 2), false); err != nil {
		t.Fatal(err)
	}
	failing := mergeStage{n: 1, runs: &runs, fails: 2}
	_, err = r.RunStage(ctx, 3, failing, false)
	if err == nil || !strings.Contains(err.Error(), "1/2 done") || !strings.Contains(err.Error(), "`evosteer rollout --run "+r.Dir+" --step 3 --shard 2/2`") {
		t.Fatalf("a failing missing shard: %v", err)
	}
	if m, _ := r.ReadManifest(3); len(m.Stages) != 1 {
		t.Fatalf("after a failing shard the manifest holds %v", m.Stages)
	}

	// No shard of the set up to date (its inputs changed): the whole stage runs, replacing them.
	in := filepath.Join(r.Dir, "in.txt")
	os.WriteFile(in, []byte("a"), 0o644)
	withInput := inputStage{mergeStage{n: 1, runs: &runs}, in}
	for i := 1; i <= 2; i++ {
		if _, err := r.RunStage(ctx, 4, withInput.AsShard(i, 2), false); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(in, []byte("b"), 0o644)
	runs = nil
	if res, err := r.RunStage(ctx, 4, withInput, false); err != nil || res.Merged != 0 || !slices.Equal(runs, []string{"out.txt"}) {
		t.Fatalf("stale shards: %+v %v, runs %v", res, err, runs)
	}

	// --force runs the whole stage, replacing its shards.
	runs = nil
	if res, err := r.RunStage(ctx, 3, whole, true); err != nil || res.Merged != 0 || !slices.Equal(runs, []string{"out.txt"}) {
		t.Fatalf("forced: %+v %v, runs %v", res, err, runs)
	}
	if m, _ := r.ReadManifest(3); len(m.Stages) != 1 || len(m.Stages["rollout"].Outputs) != 1 {
		t.Fatalf("after --force the manifest holds %v", m.Stages)
	}
}

// inputStage is a mergeStage reading one file.
type inputStage struct {
	mergeStage
	in string
}

func (s inputStage) Inputs(*Folder, int) (Resolved, error) { return Files{s.in}, nil }
func (s inputStage) AsShard(i, n int) Stage {
	return inputStage{s.mergeStage.AsShard(i, n).(mergeStage), s.in}
}
