package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/paradigms"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

func pilotConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tasks.TrainPerFamily = 12
	return cfg
}

// TestPilotPool: p̂ = successes / samples exactly, the pool holds exactly the tasks of the table
// with 0 < p̂ < 1, each with prior_rate = p̂ and prior_count = samples, in both pool files.
func TestPilotPool(t *testing.T) {
	cfg := pilotConfig(t)
	dir := t.TempDir()
	res, err := Pilot(context.Background(), cfg, nil, dir, PilotOptions{Samples: 8})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := schema.ReadFile[schema.PilotRow](schema.Pilot, filepath.Join(dir, PilotFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := 12 * len(cfg.Families); len(rows) != want {
		t.Fatalf("%d pilot rows, want %d", len(rows), want)
	}
	kept := map[string]float64{}
	for _, r := range rows {
		if r.Samples != 8 || r.PHat != float64(r.Successes)/float64(r.Samples) {
			t.Errorf("%s: samples %d successes %d p_hat %v", r.TaskID, r.Samples, r.Successes, r.PHat)
		}
		if r.Kept != (r.PHat > 0 && r.PHat < 1) {
			t.Errorf("%s: kept %v with p_hat %v", r.TaskID, r.Kept, r.PHat)
		}
		if r.Kept {
			kept[r.TaskID] = r.PHat
		}
	}
	if len(kept) == 0 || len(kept) == len(rows) {
		t.Fatalf("%d of %d kept: the test needs both kinds", len(kept), len(rows))
	}
	pool, err := tasks.ReadFile(filepath.Join(dir, PoolTable))
	if err != nil {
		t.Fatal(err)
	}
	if len(pool) != len(kept) || len(res.Pool) != len(kept) {
		t.Fatalf("pool of %d (result %d), %d kept in the table", len(pool), len(res.Pool), len(kept))
	}
	for _, p := range pool {
		if p.PriorRate == nil || *p.PriorRate != kept[p.ID] || p.PriorCount != 8 {
			t.Errorf("%s: prior %v × %v, table p_hat %v", p.ID, p.PriorRate, p.PriorCount, kept[p.ID])
		}
	}
	// pool.jsonl holds the same rows; the simulated code tasks lack the hidden tests the JSONL
	// reader requires (res.JSONLErr), so read them back line by line as the other families'.
	data, err := os.ReadFile(filepath.Join(dir, PoolFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != len(kept) {
		t.Fatalf("%d JSONL rows, %d kept", len(lines), len(kept))
	}
	for i, l := range lines {
		if !strings.Contains(l, `"task_id":"`+pool[i].ID+`"`) {
			t.Errorf("line %d is not %s", i+1, pool[i].ID)
		}
	}
}

// TestPilotJSONLReadsBack: a pool row of a family whose rows the JSONL reader accepts reads
// back equal, prior included.
func TestPilotJSONLReadsBack(t *testing.T) {
	cfg := pilotConfig(t)
	cfg.Tasks.TrainPerFamily = 6
	dir := t.TempDir()
	res, err := Pilot(context.Background(), cfg, nil, dir, PilotOptions{Samples: 8})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range res.Pool {
		if p.Family == "mbpp_plus" || p.Family == "alfworld" {
			continue
		}
		line, err := tasks.FormatJSONL(p)
		if err != nil {
			t.Fatal(err)
		}
		back, err := tasks.ParseJSONL("row", bytes.NewReader(line))
		if err != nil {
			t.Fatalf("%s: %v", p.ID, err)
		}
		if *back[0].PriorRate != *p.PriorRate || back[0].PriorCount != p.PriorCount || back[0].Prompt != p.Prompt {
			t.Errorf("%s reads back %+v", p.ID, back[0])
		}
		n++
	}
	if n == 0 {
		t.Fatal("no row checked")
	}
}

// TestPilotDeterministic: the same inputs give the same bytes, and a folder holding a killed
// pilot's leftover temporary file and older outputs is written over to the same bytes.
func TestPilotDeterministic(t *testing.T) {
	cfg := pilotConfig(t)
	dir := filepath.Join(t.TempDir(), "pilot")
	read := func() map[string][]byte {
		out := map[string][]byte{}
		for _, f := range []string{PilotFile, PoolFile, PoolTable} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			out[f] = b
		}
		return out
	}
	if _, err := Pilot(context.Background(), cfg, nil, dir, PilotOptions{Samples: 4}); err != nil {
		t.Fatal(err)
	}
	first := read()
	if err := os.WriteFile(filepath.Join(dir, "."+PilotFile+".tmp-123"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, PoolFile), []byte("{\"stale\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Pilot(context.Background(), cfg, nil, dir, PilotOptions{Samples: 4}); err != nil {
		t.Fatal(err)
	}
	for f, b := range read() {
		if !bytes.Equal(b, first[f]) {
			t.Errorf("%s differs on the second run", f)
		}
	}
}

// TestPilotResumesAfterAKill: a pilot stopped after its first chunk keeps that chunk; run again
// it plays only the rest and writes the bytes of an uninterrupted pilot, then removes the chunks.
func TestPilotResumesAfterAKill(t *testing.T) {
	cfg := pilotConfig(t)
	cfg.Tasks.TrainPerFamily = 24 // 144 tasks: three chunks
	const samples = 2
	whole := filepath.Join(t.TempDir(), "pilot")
	if _, err := Pilot(context.Background(), cfg, nil, whole, PilotOptions{Samples: samples}); err != nil {
		t.Fatal(err)
	}
	killed := filepath.Join(t.TempDir(), "pilot")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := Pilot(ctx, cfg, nil, killed, PilotOptions{Samples: samples, Progress: func(done, _ int) {
		if done > pilotChunk*samples {
			cancel() // a kill during the second chunk
		}
	}})
	if err == nil {
		t.Fatal("the cancelled pilot finished")
	}
	parts, _ := filepath.Glob(filepath.Join(killed, partsDir, "*", "part-*.arrow"))
	if len(parts) != 1 {
		t.Fatalf("the killed pilot left %d finished chunks, want 1: %v", len(parts), parts)
	}
	res, err := Pilot(context.Background(), cfg, nil, killed, PilotOptions{Samples: samples})
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed != pilotChunk {
		t.Errorf("resumed %d tasks, want the first chunk's %d", res.Resumed, pilotChunk)
	}
	for _, f := range []string{PilotFile, PoolFile, PoolTable} {
		a, errA := os.ReadFile(filepath.Join(whole, f))
		b, errB := os.ReadFile(filepath.Join(killed, f))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: the resumed pilot's bytes differ from an uninterrupted one's (%v, %v)", f, errA, errB)
		}
	}
	if _, err := os.Stat(filepath.Join(killed, partsDir)); !os.IsNotExist(err) {
		t.Errorf("the finished pilot left %s behind: %v", partsDir, err)
	}
}

// TestInitTrainsOnThePilotPool: under tasks.pilot init trains on exactly the pilot's tasks with
// 0 < p̂ < 1 outside the excluded families, each with its prior, and keeps the test split whole.
func TestInitTrainsOnThePilotPool(t *testing.T) {
	cfg := pilotConfig(t)
	cfg.Tasks.Pilot = &config.Pilot{Samples: 8, ExcludeFamilies: []string{"alfworld"}}
	r, err := Init(context.Background(), filepath.Join(t.TempDir(), "pooled"), cfg, "test", WriteSimTasks)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Unlock()
	rows, err := schema.ReadFile[schema.PilotRow](schema.Pilot, filepath.Join(r.Dir, PilotFileInRun))
	if err != nil {
		t.Fatal(err)
	}
	pHat := map[string]float64{}
	for _, row := range rows {
		if row.Family == "alfworld" {
			t.Fatalf("the excluded family was piloted: %+v", row)
		}
		if row.Kept {
			pHat[row.TaskID] = row.PHat
		}
	}
	if want := 12 * (len(cfg.Families) - 1); len(rows) != want || len(pHat) == 0 || len(pHat) == len(rows) {
		t.Fatalf("%d pilot rows (want %d), %d kept: the test needs kept and dropped tasks", len(rows), want, len(pHat))
	}
	train, err := tasks.ReadFile(r.TasksPath("train"))
	if err != nil {
		t.Fatal(err)
	}
	if len(train) != len(pHat) {
		t.Fatalf("%d training tasks, the pilot kept %d", len(train), len(pHat))
	}
	for _, tk := range train {
		p, ok := pHat[tk.ID]
		if !ok || p <= 0 || p >= 1 || tk.PriorRate == nil || *tk.PriorRate != p || tk.PriorCount != 8 {
			t.Errorf("training task %s: kept %v, p̂ %v, prior %v × %v", tk.ID, ok, p, tk.PriorRate, tk.PriorCount)
		}
	}
	test, err := tasks.ReadFile(r.TasksPath("test"))
	if err != nil {
		t.Fatal(err)
	}
	if want := SimTasks(cfg, "test"); len(test) != len(want) {
		t.Errorf("%d test tasks, want the whole split's %d", len(test), len(want))
	}
}

// TestPilotRefuses: samples < 1 and an --out that is a file are refused, saying why.
func TestPilotRefuses(t *testing.T) {
	cfg := pilotConfig(t)
	file := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir     string
		samples int
		want    string
	}{
		{t.TempDir(), -3, "at least one episode"},
		{file, 8, "is a file, not a folder"},
	} {
		_, err := Pilot(context.Background(), cfg, nil, c.dir, PilotOptions{Samples: c.samples})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("samples %d out %s: %v, want %q", c.samples, c.dir, err, c.want)
		}
	}
}

// TestPilotTaskFilesPool: with task files in the reference rows, pool.jsonl is what init
// --tasks reads: the kept training rows with their priors.
func TestPilotTaskFilesPool(t *testing.T) {
	cfg := pilotConfig(t)
	dir := t.TempDir()
	res, err := Pilot(context.Background(), cfg, []string{"../internal/tasks/testdata/tasks.jsonl"}, dir, PilotOptions{Samples: 8})
	if err != nil {
		t.Fatal(err)
	}
	if res.JSONLErr != nil {
		t.Fatal(res.JSONLErr)
	}
	if len(res.Pool) == 0 {
		t.Skip("no task of the fixture kept")
	}
	splits, _, err := ReadTaskFiles(cfg, []string{filepath.Join(dir, PoolFile)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for _, r := range res.Rows {
		if r.Kept {
			want[r.TaskID] = r.PHat
		}
	}
	if len(splits["train"]) != len(want) || len(splits["test"]) != 0 {
		t.Fatalf("init reads %d train, %d test rows; %d kept", len(splits["train"]), len(splits["test"]), len(want))
	}
	for _, tk := range splits["train"] {
		if tk.PriorRate == nil || *tk.PriorRate != want[tk.ID] || tk.PriorCount != 8 {
			t.Errorf("%s: prior %v × %v, want %v × 8", tk.ID, tk.PriorRate, tk.PriorCount, want[tk.ID])
		}
	}
}

// killPilot runs a pilot into dir and cancels it during its second chunk, leaving the first
// chunk's part file; it returns the part files left.
func killPilot(t *testing.T, cfg *config.Config, dir string, samples int) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := Pilot(ctx, cfg, nil, dir, PilotOptions{Samples: samples, Progress: func(done, _ int) {
		if done > pilotChunk*samples {
			cancel()
		}
	}})
	if err == nil {
		t.Fatal("the cancelled pilot finished")
	}
	parts, _ := filepath.Glob(filepath.Join(dir, partsDir, "*", "part-*.arrow"))
	if len(parts) != 1 {
		t.Fatalf("the killed pilot left %d finished chunks, want 1: %v", len(parts), parts)
	}
	return parts
}

// samePilotFiles fails the test when the pilot outputs of two folders differ.
func samePilotFiles(t *testing.T, what, a, b string) {
	t.Helper()
	for _, f := range []string{PilotFile, PoolFile, PoolTable} {
		x, errA := os.ReadFile(filepath.Join(a, f))
		y, errB := os.ReadFile(filepath.Join(b, f))
		if errA != nil || errB != nil || !bytes.Equal(x, y) {
			t.Errorf("%s: %s differs from a fresh pilot's with the same inputs (%v, %v)", what, f, errA, errB)
		}
	}
}

// TestPilotResumeReplaysStaleParts: a part file is resumed only by a pilot with the inputs it
// was made from, which it carries as its lineage. A pilot killed with --samples 2 leaves its first
// part; resumed with another --samples or another seed, that part is not used even where the new
// pilot looks for its own parts (copied there, as a moved folder or an older evosteer's would be):
// it is played again and named with what differs, and the result is a fresh pilot's with the new
// inputs. Resumed with the same inputs, the part is reused.
func TestPilotResumeReplaysStaleParts(t *testing.T) {
	cfg := pilotConfig(t)
	cfg.Tasks.TrainPerFamily = 24 // 144 tasks: three chunks
	reseeded := cfg.Clone()
	reseeded.Seed++
	fresh := func(c *config.Config, samples int) string {
		dir := filepath.Join(t.TempDir(), "pilot") // the lineage names the folder
		if _, err := Pilot(context.Background(), c, nil, dir, PilotOptions{Samples: samples}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, c := range []struct {
		what    string
		cfg     *config.Config
		samples int
		differs string // in the message naming the stale part; "" when the part is reused
	}{
		{"another --samples", cfg, 3, "made with samples 2, this pilot's 3"},
		{"another seed", reseeded, 2, fmt.Sprintf("made with seed %d, this pilot's %d", cfg.Seed, reseeded.Seed)},
		{"the same inputs", cfg, 2, ""},
	} {
		dir := filepath.Join(t.TempDir(), "pilot")
		stale := killPilot(t, cfg, dir, 2)[0]
		// The part also where the new pilot looks for its own.
		own := filepath.Join(dir, partsDir, pilotKey(c.cfg, PilotOptions{Samples: c.samples, Paradigm: paradigms.SingleAgent}, map[string]string{}), filepath.Base(stale))
		if own != stale {
			data, err := os.ReadFile(stale)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(own), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(own, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		res, err := Pilot(context.Background(), c.cfg, nil, dir, PilotOptions{Samples: c.samples})
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if want := map[bool]int{true: pilotChunk, false: 0}[c.differs == ""]; res.Resumed != want {
			t.Errorf("%s: resumed %d tasks from the killed pilot's part, want %d", c.what, res.Resumed, want)
		}
		if c.differs == "" && len(res.Replayed) != 0 {
			t.Errorf("%s: replayed %v", c.what, res.Replayed)
		}
		if c.differs != "" && (len(res.Replayed) != 1 || !strings.Contains(res.Replayed[0], own) || !strings.Contains(res.Replayed[0], c.differs)) {
			t.Errorf("%s: replayed %q, want the part %s named with %q", c.what, res.Replayed, own, c.differs)
		}
		samePilotFiles(t, c.what, dir, fresh(c.cfg, c.samples))
	}
}

// TestPartLineageDiff: a part written before parts carried a lineage, and one made from other
// task files or another configuration, are told apart from this pilot's, naming what differs.
func TestPartLineageDiff(t *testing.T) {
	cfg := pilotConfig(t)
	o := PilotOptions{Samples: 8, Paradigm: paradigms.SingleAgent}
	want := partLineage(cfg, o, map[string]string{"train.jsonl": "aa"})
	other := cfg.Clone()
	other.Batch.Tasks++
	for _, c := range []struct {
		got  schema.Lineage
		diff string
	}{
		{want, ""},
		{schema.Lineage{Stage: "pilot"}, "no lineage (written by an older evosteer)"},
		{partLineage(cfg, o, map[string]string{"train.jsonl": "bb"}), "the task file train.jsonl sha256 bb, this pilot's aa"},
		{partLineage(cfg, o, map[string]string{"more.jsonl": "cc", "train.jsonl": "aa"}), "the task file more.jsonl, which this pilot does not read"},
		{partLineage(cfg, o, nil), "without the task file train.jsonl"},
		{partLineage(other, o, map[string]string{"train.jsonl": "aa"}), "configuration sha256 " + other.SHA256() + ", this pilot's " + cfg.SHA256()},
	} {
		if got := lineageDiff(c.got, want); got != c.diff {
			t.Errorf("lineage %+v: diff %q, want %q", c.got, got, c.diff)
		}
	}
}
