package rollout

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/episode"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// stageFiles reads every file of a step's rollout folder.
func stageFiles(t *testing.T, r *rundir.Folder, step int) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	entries, err := os.ReadDir(r.StageDir(step, layout.Rollout))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		files[e.Name()], _ = os.ReadFile(filepath.Join(r.StageDir(step, layout.Rollout), e.Name()))
	}
	return files
}

// keptParts lists the part folders of a step's rollout runs.
func keptParts(r *rundir.Folder, step int) []string {
	parts, _ := filepath.Glob(filepath.Join(r.PartsRoot(step, layout.Rollout), "*", partPrefix+"*"))
	return parts
}

// A rollout (whole, and a shard) stopped midway keeps the episodes of its finished tasks, one
// part per task beside the stage folder; run again, it plays only the other tasks' episodes and
// writes the bytes of an unstopped run, a part made with another seed being played again; once
// the stage commits, the parts are gone.
func TestRolloutResumesItsFinishedEpisodes(t *testing.T) {
	defer func(every time.Duration) { keepEvery = every }(keepEvery)
	keepEvery = 0                    // a part per task
	edit := func(c *config.Config) { // one episode at a time: tasks finish one by one
		c.Rollout.Workers, c.Batch.Tasks = 1, 24
	}
	for _, sh := range []Shard{{}, {Index: 1, Count: 2}} {
		ref := smallRun(t, t.TempDir(), edit)
		if _, err := ref.RunStage(context.Background(), 1, Stage{Shard: sh}, false); err != nil {
			t.Fatal(err)
		}
		want := stageFiles(t, ref, 1)

		// Stop it a third of the way (the simulated world is fast: tasks still in flight may
		// finish first); again, in a fresh run, when that kept fewer than two tasks, or all.
		var r *rundir.Folder
		var parts []string
		kept, total := 0, 0
		for try := 0; try < 5 && (len(parts) < 2 || kept == total); try++ {
			r = smallRun(t, t.TempDir(), edit)
			ctx, cancel := context.WithCancel(context.Background())
			stop := func(done, n int) {
				if total = n; done >= n/3 {
					cancel()
				}
			}
			if _, err := r.RunStage(ctx, 1, Stage{Shard: sh, Progress: stop}, false); err == nil {
				t.Fatalf("shard %v: the stopped rollout committed", sh)
			}
			cancel()
			parts, kept = keptParts(r, 1), 0
			for _, p := range parts {
				kept += len(readEpisodes(t, filepath.Join(p, layout.File(layout.Episodes))))
			}
		}
		if len(parts) < 2 || kept == total {
			t.Fatalf("shard %v: %d parts (%d of %d episodes) kept", sh, len(parts), kept, total)
		}
		if _, err := os.Stat(r.StageDir(1, layout.Rollout)); err == nil {
			t.Fatalf("shard %v: a stage folder after the stopped rollout", sh)
		}

		// One part made with another seed, under this run's name: played again, not resumed.
		staleEps := makeStale(t, parts[0])
		train, err := tasks.ReadFile(r.TasksPath("train"))
		if err != nil {
			t.Fatal(err)
		}
		lib, err := skills.LoadLibrary(r, 1)
		if err != nil {
			t.Fatal(err)
		}
		jobs, _ := plan(r.Config, 1, train, sh, lib)
		f, err := schema.Episodes.Open(filepath.Join(parts[1], layout.File(layout.Episodes)))
		if err != nil {
			t.Fatal(err)
		}
		k := readParts(filepath.Dir(parts[0]), f.Lineage, jobs, groups(jobs), false)
		f.Close()
		if len(k.replayed) != 1 || !strings.Contains(k.replayed[0], parts[0]+": made with "+partSeed) || len(k.eps) != len(parts)-1 {
			t.Errorf("shard %v: the parts read back hold %d tasks, %d parts replayed (%q); want %d tasks, the stale part replayed", sh, len(k.eps), len(k.replayed), k.replayed, len(parts)-1)
		}

		before := episode.Started()
		res, err := r.RunStage(context.Background(), 1, Stage{Shard: sh}, false)
		if err != nil {
			t.Fatal(err)
		}
		played := int(episode.Started() - before)
		if wantPlayed := total - kept + staleEps; played != wantPlayed {
			t.Errorf("shard %v: the resumed rollout played %d episodes; %d of %d were kept (%d of them stale): want %d", sh, played, kept, total, staleEps, wantPlayed)
		}
		t.Logf("shard %v: %d episodes; stopped after keeping %d in %d parts; resumed, it played %d (%d of a stale part)", sh, total, kept, len(parts), played, staleEps)
		if res.Skipped {
			t.Errorf("shard %v: the resumed rollout says it was skipped", sh)
		}
		got := stageFiles(t, r, 1)
		if len(got) != len(want) {
			t.Errorf("shard %v: %d files, the unstopped rollout %d", sh, len(got), len(want))
		}
		for name, data := range want {
			if !bytes.Equal(got[name], data) {
				t.Errorf("shard %v: %s differs from the unstopped rollout's", sh, name)
			}
		}
		if _, err := os.Stat(r.PartsRoot(1, layout.Rollout)); !os.IsNotExist(err) {
			t.Errorf("shard %v: the parts are left after the stage committed (%v)", sh, err)
		}
	}
}

// makeStale rewrites the kept part at path as a rollout with another seed would have written
// it, and returns its episodes.
func makeStale(t *testing.T, path string) int {
	t.Helper()
	seq, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(path), partPrefix))
	if err != nil {
		t.Fatal(err)
	}
	f, err := schema.Episodes.Open(filepath.Join(path, layout.File(layout.Episodes)))
	if err != nil {
		t.Fatal(err)
	}
	lin := f.Lineage
	f.Close()
	eps, why := readPart(path, lin, false)
	if why != "" {
		t.Fatalf("the kept part %s: %s", path, why)
	}
	other := lin
	other.Inputs = maps.Clone(lin.Inputs)
	other.Inputs[partSeed] += "1"
	if err := writePart(filepath.Dir(path), seq, other, eps, false); err != nil {
		t.Fatal(err)
	}
	if _, why := readPart(path, lin, false); !strings.Contains(why, partSeed) {
		t.Fatalf("a part of another seed reads back as %q", why)
	}
	return len(eps)
}

// Parts are written at most every keepEvery, the first at once: a rollout stopped midway under
// a long keepEvery has kept its first finished task only.
func TestRolloutKeepsAPartAtMostEveryKeepEvery(t *testing.T) {
	defer func(every time.Duration) { keepEvery = every }(keepEvery)
	keepEvery = time.Hour
	r := smallRun(t, t.TempDir(), func(c *config.Config) { c.Rollout.Workers, c.Batch.Tasks = 1, 24 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := func(done, n int) {
		if done >= n/2 {
			cancel()
		}
	}
	if _, err := r.RunStage(ctx, 1, Stage{Progress: stop}, false); err == nil {
		t.Fatal("the stopped rollout committed")
	}
	parts := keptParts(r, 1)
	if len(parts) != 1 {
		t.Fatalf("%d parts, want 1: %v", len(parts), parts)
	}
	if eps := readEpisodes(t, filepath.Join(parts[0], layout.File(layout.Episodes))); len(eps) != 4 || eps[0].TaskID != eps[3].TaskID {
		t.Fatalf("the first part holds %d episodes, want the 4 of one task", len(eps))
	}
}
