package rundir

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/schema"
)

func newRun(t *testing.T) *Folder {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Init(filepath.Join(t.TempDir(), "demo"), cfg, "test-version", nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestInitOpenRoundTrip(t *testing.T) {
	r := newRun(t)
	got, err := Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "demo" || got.CodeVersion != "test-version" || got.Config.SHA256() != r.Config.SHA256() {
		t.Fatalf("reopened run differs: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "tasks")); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(r.Dir, r.Config, "x", nil); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("init over an existing run: %v", err)
	}
}

func TestOpenDetectsEditAndAbsence(t *testing.T) {
	r := newRun(t)
	path := filepath.Join(r.Dir, RunFileName)
	data, _ := os.ReadFile(path)
	edited := strings.Replace(string(data), "beta: 2", "beta: 3", 1)
	if edited == string(data) {
		t.Fatal("test could not find beta in run.yaml")
	}
	os.WriteFile(path, []byte(edited), 0o644)
	if _, err := Open(r.Dir); err == nil || !strings.Contains(err.Error(), "was edited") {
		t.Fatalf("edited run.yaml: %v", err)
	}
	if _, err := Open(t.TempDir()); err == nil || !strings.Contains(err.Error(), "evosteer init") {
		t.Fatalf("missing run.yaml: %v", err)
	}
}

// testStage is a Stage made of values.
type testStage struct {
	name, shard string
	inputs      []string
	outputs     []string
	run         func(ctx context.Context, sc *StageContext) error
}

func (s testStage) Name() string                                    { return s.name }
func (s testStage) ShardName() string                               { return s.shard }
func (s testStage) Outputs(*Folder, int) []string                   { return s.outputs }
func (s testStage) Run(ctx context.Context, sc *StageContext) error { return s.run(ctx, sc) }

// Inputs are the inputs, relative to the run folder.
func (s testStage) Inputs(r *Folder, _ int) (Resolved, error) {
	var out Files
	for _, p := range s.inputs {
		out = append(out, filepath.Join(r.Dir, p))
	}
	return out, nil
}

// copyStage copies its single input to out.txt and counts its runs.
func copyStage(input string, runs *int) Stage {
	return testStage{name: "copy", inputs: []string{input}, outputs: []string{"out.txt"}, run: func(ctx context.Context, sc *StageContext) error {
		*runs++
		data, err := os.ReadFile(filepath.Join(sc.Folder.Dir, input))
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(sc.OutDir, "out.txt"), data, 0o644)
	}}
}

func TestRunStageSkipsOnlyWhenUpToDate(t *testing.T) {
	ctx := context.Background()
	r := newRun(t)
	os.WriteFile(filepath.Join(r.Dir, "in.txt"), []byte("a"), 0o644)
	runs := 0
	st := copyStage("in.txt", &runs)

	res, err := r.RunStage(ctx, 1, st, false)
	if err != nil || res.Skipped || runs != 1 {
		t.Fatalf("first run: %+v %v runs=%d", res, err, runs)
	}
	out := filepath.Join(r.StageDir(1, "copy"), "out.txt")
	m, _ := r.ReadManifest(1)
	rec := m.Stages["copy"]
	if rec.Inputs["in.txt"] == "" || rec.Outputs["step-000001/copy/out.txt"] == "" || rec.ConfigSHA256 != r.Config.SHA256() || rec.Seed != r.StageSeed(1, "copy") {
		t.Fatalf("manifest record: %+v", rec)
	}

	if res, _ := r.RunStage(ctx, 1, st, false); !res.Skipped || runs != 1 {
		t.Fatalf("unchanged inputs must skip: runs=%d", runs)
	}
	if res, _ := r.RunStage(ctx, 1, st, true); res.Skipped || runs != 2 {
		t.Fatalf("force must rerun: runs=%d", runs)
	}
	os.WriteFile(filepath.Join(r.Dir, "in.txt"), []byte("b"), 0o644)
	if res, _ := r.RunStage(ctx, 1, st, false); res.Skipped || runs != 3 {
		t.Fatalf("changed input must rerun: runs=%d", runs)
	}
	if got, _ := os.ReadFile(out); string(got) != "b" {
		t.Fatalf("output not replaced: %q", got)
	}
	os.WriteFile(out, []byte("tampered"), 0o644)
	if res, _ := r.RunStage(ctx, 1, st, false); res.Skipped || runs != 4 {
		t.Fatalf("changed output must rerun: runs=%d", runs)
	}
	if r.StageSeed(1, "copy") == r.StageSeed(2, "copy") || r.StageSeed(1, "copy") == r.StageSeed(1, "other") {
		t.Fatal("stage seeds collide")
	}
}

func TestRelativeRunFolder(t *testing.T) {
	t.Chdir(t.TempDir())
	cfg, _ := config.Default()
	r, err := Init("runs/demo", cfg, "v", nil)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(r.Dir, "in.txt"), []byte("a"), 0o644)
	runs := 0
	if _, err := r.RunStage(context.Background(), 1, copyStage("in.txt", &runs), false); err != nil {
		t.Fatal(err)
	}
	if res, err := r.RunStage(context.Background(), 1, copyStage("in.txt", &runs), false); err != nil || !res.Skipped {
		t.Fatalf("second run: skipped %v, %v", res.Skipped, err)
	}
}

func TestFailedStageLeavesNoTrace(t *testing.T) {
	ctx := context.Background()
	r := newRun(t)
	os.WriteFile(filepath.Join(r.Dir, "in.txt"), []byte("a"), 0o644)
	runs := 0
	if _, err := r.RunStage(ctx, 1, copyStage("in.txt", &runs), false); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(r.StepDir(1), ManifestName))
	boom := errors.New("boom")
	bad := testStage{name: "copy", inputs: []string{"in.txt"}, outputs: []string{"half.txt"}, run: func(ctx context.Context, sc *StageContext) error {
		os.WriteFile(filepath.Join(sc.OutDir, "half.txt"), []byte("x"), 0o644)
		return boom
	}}
	if _, err := r.RunStage(ctx, 1, bad, true); !errors.Is(err, boom) || !strings.Contains(err.Error(), "stage copy") {
		t.Fatalf("want boom with context, got %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(r.StepDir(1), ManifestName))
	if string(before) != string(after) {
		t.Fatal("failed stage changed the manifest")
	}
	entries, _ := os.ReadDir(r.StepDir(1))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Fatalf("temporary folder left: %s", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(r.StageDir(1, "copy"), "half.txt")); err == nil {
		t.Fatal("partial output of the failed stage is visible")
	}
	if _, err := os.Stat(filepath.Join(r.StageDir(1, "copy"), "out.txt")); err != nil {
		t.Fatal("previous outputs lost by a failed rerun")
	}
}

// A declared input that does not exist stops the stage before it runs, naming the file and the
// command that writes it; a stage that writes other files than it declares fails and leaves
// nothing behind.
func TestRunStageChecksInputsAndOutputs(t *testing.T) {
	ctx := context.Background()
	r := newRun(t)
	runs := 0
	_, err := r.RunStage(ctx, 2, copyStage("step-000001/rollout/episodes.arrow", &runs), false)
	var missing *layout.MissingInputError
	if !errors.As(err, &missing) || missing.Path != "step-000001/rollout/episodes.arrow" || runs != 0 ||
		!strings.Contains(err.Error(), "missing input step-000001/rollout/episodes.arrow: run `evosteer rollout --step 1 --run "+r.Dir+"` first") {
		t.Fatalf("missing input: %v (runs %d)", err, runs)
	}
	if _, err := r.RunStage(ctx, 1, copyStage("tasks/train.arrow", &runs), false); err == nil || !strings.Contains(err.Error(), "missing input tasks/train.arrow: it is written by `evosteer init`") {
		t.Fatalf("missing task file: %v", err)
	}
	os.WriteFile(filepath.Join(r.Dir, "in.txt"), []byte("a"), 0o644)
	for _, c := range []struct {
		declared []string
		want     string
	}{
		{[]string{"out.txt", "other.txt"}, "did not write its output other.txt"},
		{nil, "wrote out.txt, which is not among its outputs"},
	} {
		st := copyStage("in.txt", &runs).(testStage)
		st.outputs = c.declared
		if _, err := r.RunStage(ctx, 1, st, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("outputs %v: %v, want %q", c.declared, err, c.want)
		}
		if _, err := os.Stat(r.StageDir(1, "copy")); !os.IsNotExist(err) {
			t.Errorf("outputs %v: the stage folder was made", c.declared)
		}
	}
}

func TestShardsShareTheStageFolder(t *testing.T) {
	ctx := context.Background()
	r := newRun(t)
	for _, sh := range []string{"1-of-2", "2-of-2"} {
		out := "episodes-" + sh + ".arrow"
		st := testStage{name: "rollout", shard: sh, outputs: []string{out}, run: func(ctx context.Context, sc *StageContext) error {
			return os.WriteFile(filepath.Join(sc.OutDir, out), []byte(sh), 0o644)
		}}
		if _, err := r.RunStage(ctx, 3, st, false); err != nil {
			t.Fatal(err)
		}
	}
	m, _ := r.ReadManifest(3)
	if len(m.Stages) != 2 || len(m.Stages["rollout#1-of-2"].Outputs) != 1 {
		t.Fatalf("manifest: %+v", m.Stages)
	}
	entries, _ := os.ReadDir(r.StageDir(3, "rollout"))
	if len(entries) != 2 {
		t.Fatalf("stage folder holds %d files, want both shards", len(entries))
	}
}

func TestInitRemovesFolderWhenPopulateFails(t *testing.T) {
	cfg, _ := config.Default()
	dir := filepath.Join(t.TempDir(), "bad")
	boom := errors.New("boom")
	if _, err := Init(dir, cfg, "v", func(*Folder) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("want boom, got %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("half-initialised run folder left behind")
	}
}

func TestVerifyCatchesChangedOutputs(t *testing.T) {
	r := newRun(t)
	st := testStage{name: "s", outputs: []string{"out.txt"}, run: func(_ context.Context, sc *StageContext) error {
		return os.WriteFile(filepath.Join(sc.OutDir, "out.txt"), []byte("a"), 0o644)
	}}
	if _, err := r.RunStage(context.Background(), 1, st, false); err != nil {
		t.Fatal(err)
	}
	if err := r.Verify(1); err != nil {
		t.Fatalf("untouched run: %v", err)
	}
	if err := os.WriteFile(filepath.Join(r.StageDir(1, "s"), "out.txt"), []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.Verify(1); err == nil || !strings.Contains(err.Error(), "changed outside the pipeline") {
		t.Fatalf("changed output: %v", err)
	}
	os.Remove(filepath.Join(r.StageDir(1, "s"), "out.txt"))
	if err := r.Verify(1); err == nil || !strings.Contains(err.Error(), "out.txt") {
		t.Fatalf("missing output: %v", err)
	}
}

// A manifest carries the sha256 of itself: one edited or written by hand is refused, naming the
// file, instead of deciding which stages are up to date (an emptied manifest would otherwise have
// the stage recomputed, an edited output hash would hide a changed output).
func TestHandMadeManifestIsRefused(t *testing.T) {
	ctx := context.Background()
	r := newRun(t)
	os.WriteFile(filepath.Join(r.Dir, "in.txt"), []byte("a"), 0o644)
	runs := 0
	if _, err := r.RunStage(ctx, 1, copyStage("in.txt", &runs), false); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(r.StepDir(1), ManifestName)
	good, _ := os.ReadFile(path)
	if res, err := r.RunStage(ctx, 1, copyStage("in.txt", &runs), false); err != nil || !res.Skipped {
		t.Fatalf("untouched manifest: skipped %v, %v", res.Skipped, err)
	}
	out := filepath.Join(r.StageDir(1, "copy"), "out.txt")
	os.WriteFile(out, []byte("forged"), 0o644)
	forgedSum, _ := schema.SHA256File(out)
	for name, manifest := range map[string]string{
		"emptied":    `{"step": 1, "stages": {}}`,
		"rehashed":   strings.Replace(string(good), r.mustOutputSum(t, 1, "copy", "step-000001/copy/out.txt"), forgedSum, 1),
		"reindented": strings.ReplaceAll(string(good), "  ", "\t"),
		"extra key":  strings.Replace(string(good), `"step": 1,`, `"step": 1, "note": "x",`, 1),
	} {
		if name != "reindented" && manifest == string(good) {
			t.Fatalf("%s: the test did not change the manifest", name)
		}
		os.WriteFile(path, []byte(manifest), 0o644)
		_, err := r.RunStage(ctx, 1, copyStage("in.txt", &runs), false)
		if name == "reindented" { // the same content, laid out otherwise, is the same manifest
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not written by the stage runner") && !strings.Contains(err.Error(), `unknown field "note"`) {
			t.Errorf("%s manifest accepted: %v", name, err)
		}
		if err := r.Verify(1); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s manifest passed Verify: %v", name, err)
		}
	}
}

// mustOutputSum is the sha256 the step's manifest records for one output of a stage.
func (r *Folder) mustOutputSum(t *testing.T, step int, stage, rel string) string {
	t.Helper()
	m, err := r.ReadManifest(step)
	if err != nil {
		t.Fatal(err)
	}
	sum := m.Stages[stage].Outputs[rel]
	if sum == "" {
		t.Fatalf("no output %s recorded", rel)
	}
	return sum
}

// A process killed between the two renames of a stage re-run (the old outputs moved aside,
// the new ones not yet in place) leaves a run that resumes: the next writer puts the old
// outputs back, which the manifest still records, and removes what else was moved aside.
func TestResumeAfterAKillBetweenTheRenamesOfARerun(t *testing.T) {
	ctx := context.Background()
	r := newRun(t)
	os.WriteFile(filepath.Join(r.Dir, "in.txt"), []byte("a"), 0o644)
	runs := 0
	for step := 1; step <= 2; step++ {
		if _, err := r.RunStage(ctx, step, copyStage("in.txt", &runs), false); err != nil {
			t.Fatal(err)
		}
	}
	r.Unlock()
	// Step 1: killed after the first rename (this version's hidden name). Step 2: the same by an
	// earlier version (visible name), plus an older leftover beside a stage in place.
	moves := map[string]string{
		r.StageDir(1, "copy"): filepath.Join(r.StepDir(1), ".copy.old-"+strconv.FormatInt(99, 36)),
		r.StageDir(2, "copy"): filepath.Join(r.StepDir(2), "copy.old-"+strconv.FormatInt(98, 36)),
	}
	for from, to := range moves {
		if err := os.Rename(from, to); err != nil {
			t.Fatal(err)
		}
	}
	leftover := filepath.Join(r.StepDir(2), ".copy.old-"+strconv.FormatInt(97, 36))
	os.MkdirAll(leftover, 0o755)
	if err := r.Verify(1); err == nil {
		t.Fatal("the interrupted state verifies: the test does not reproduce the kill")
	}

	again, err := Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Lock(); err != nil {
		t.Fatal(err)
	}
	defer again.Unlock()
	for step := 1; step <= 2; step++ {
		if err := again.Verify(step); err != nil {
			t.Errorf("step %d after recovery: %v", step, err)
		}
		entries, _ := os.ReadDir(again.StepDir(step))
		for _, e := range entries {
			if strings.Contains(e.Name(), ".old-") {
				t.Errorf("step %d keeps %s", step, e.Name())
			}
		}
		if res, err := again.RunStage(ctx, step, copyStage("in.txt", &runs), false); err != nil || !res.Skipped {
			t.Errorf("step %d resumes with %+v, %v; want the restored stage skipped as up to date", step, res, err)
		}
	}
}

// A stage's parts folder survives a failed run, outside the stage folder, and the next run with
// the same inputs finds it; other inputs, or another shard, get another folder; --force empties
// it; a shard's commit removes its own, a whole stage's commit every parts folder of the stage.
func TestPartsDirIsKeptUntilTheStageCommits(t *testing.T) {
	ctx := context.Background()
	r := newRun(t)
	os.WriteFile(filepath.Join(r.Dir, "in.txt"), []byte("a"), 0o644)
	var seen []string // what each run found in its parts folder
	var dirs []string
	fail := true
	stage := func(shard string) Stage {
		return testStage{name: "copy", shard: shard, inputs: []string{"in.txt"}, outputs: []string{"out" + shard + ".txt"}, run: func(ctx context.Context, sc *StageContext) error {
			dirs = append(dirs, sc.PartsDir)
			got, _ := os.ReadFile(filepath.Join(sc.PartsDir, "part"))
			seen = append(seen, string(got))
			if err := os.MkdirAll(sc.PartsDir, 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(sc.PartsDir, "part"), []byte("kept"), 0o644); err != nil {
				return err
			}
			if fail {
				return errors.New("killed")
			}
			return os.WriteFile(filepath.Join(sc.OutDir, "out"+shard+".txt"), []byte("x"), 0o644)
		}}
	}
	if _, err := r.RunStage(ctx, 1, stage(""), false); err == nil {
		t.Fatal("the failing stage committed")
	}
	if !strings.HasPrefix(dirs[0], r.PartsRoot(1, "copy")+string(filepath.Separator)) || strings.HasPrefix(dirs[0], r.StageDir(1, "copy")) {
		t.Fatalf("parts folder %s: want it under %s, outside the stage folder", dirs[0], r.PartsRoot(1, "copy"))
	}
	r.RunStage(ctx, 1, stage(""), false)       // fails again: finds the part
	r.RunStage(ctx, 1, stage("1-of-2"), false) // another shard: another folder
	r.RunStage(ctx, 1, stage(""), true)        // --force: emptied first
	os.WriteFile(filepath.Join(r.Dir, "in.txt"), []byte("b"), 0o644)
	r.RunStage(ctx, 1, stage(""), false) // other inputs: another folder
	if want := []string{"", "kept", "", "", ""}; !slices.Equal(seen, want) {
		t.Fatalf("the runs found %q in their parts folders, want %q", seen, want)
	}
	if dirs[0] != dirs[1] || dirs[2] == dirs[0] || dirs[3] != dirs[0] || dirs[4] == dirs[0] {
		t.Fatalf("parts folders %q", dirs)
	}
	fail = false
	if _, err := r.RunStage(ctx, 1, stage("2-of-2"), false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dirs[len(dirs)-1]); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a committed shard's parts are left (%v)", err)
	}
	if _, err := os.Stat(dirs[2]); err != nil {
		t.Fatalf("a committed shard removed a sibling's parts: %v", err)
	}
	if _, err := r.RunStage(ctx, 1, stage(""), false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.PartsRoot(1, "copy")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the whole stage committed and left parts folders (%v)", err)
	}
}
