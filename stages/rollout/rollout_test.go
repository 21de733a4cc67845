package rollout

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/episode"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/runtest"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// smallRun initialises a run named "demo" under parent with a few tasks per family.
func smallRun(t testing.TB, parent string, edit func(*config.Config)) *rundir.Folder {
	t.Helper()
	return runtest.SimRun(t, parent, 8, func(c *config.Config) {
		c.Rollout.Workers = 3
		if edit != nil {
			edit(c)
		}
	})
}

func rolloutFiles(t *testing.T, r *rundir.Folder, step int) map[string][]byte {
	t.Helper()
	if _, err := r.RunStage(context.Background(), step, Stage{}, false); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	entries, _ := os.ReadDir(r.StageDir(step, layout.Rollout))
	for _, e := range entries {
		files[e.Name()], _ = os.ReadFile(filepath.Join(r.StageDir(step, layout.Rollout), e.Name()))
	}
	return files
}

func TestRolloutIsByteIdenticalAcrossRuns(t *testing.T) {
	a := rolloutFiles(t, smallRun(t, t.TempDir(), nil), 1)
	b := rolloutFiles(t, smallRun(t, t.TempDir(), nil), 1)
	want := []string{"decisions.arrow", "episodes.arrow", "executions.arrow", "sim_truth.arrow"}
	if got := slices.Sorted(func(yield func(string) bool) {
		for k := range a {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	for name, data := range a {
		if !bytes.Equal(data, b[name]) {
			t.Errorf("%s differs between two runs with the same seed", name)
		}
	}
	c := rolloutFiles(t, smallRun(t, t.TempDir(), func(c *config.Config) { c.Seed++ }), 1)
	if bytes.Equal(a["episodes.arrow"], c["episodes.arrow"]) {
		t.Error("a different seed gave the same episodes")
	}
}

func readEpisodes(t *testing.T, path string) []schema.EpisodeRow { return readEpisodesB(t, path) }

func readEpisodesB(t testing.TB, path string) []schema.EpisodeRow {
	t.Helper()
	rows, err := schema.ReadFile[schema.EpisodeRow](schema.Episodes, path)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// testBatch plays a 12-task step of the simulated world on exec with the untrained learner.
func testBatch(t testing.TB, exec func(*config.Config) executor.Executor) []episode.Played {
	cfg, _ := config.Default()
	cfg.Batch.Tasks = 12
	cfg.Rollout.Workers = 4
	var train []tasks.Task
	for _, f := range cfg.Families {
		train = append(train, sim.Tasks(cfg.Sim, cfg.Seed, f, f, "train", 4)...)
	}
	lib, err := skills.NewLibrary(cfg.Admission, nil)
	if err != nil {
		t.Fatal(err)
	}
	jobs, _ := plan(cfg, 1, train, Shard{1, 1}, lib)
	eng, err := gpu.OpenEngine("simplego")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	l := gpu.NewLearner(gpu.OptionsFromConfig(cfg, policy.StateWidth(len(cfg.Families))), nil)
	eps, err := episode.Play(context.Background(), cfg, exec(cfg), l, eng, jobs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return eps
}

func TestRolloutWritesTheBatch(t *testing.T) {
	r := smallRun(t, t.TempDir(), nil)
	rolloutFiles(t, r, 1)
	eps := readEpisodes(t, filepath.Join(r.StageDir(1, layout.Rollout), "episodes.arrow"))
	if len(eps) != 12*4 {
		t.Fatalf("%d episodes, want 12 tasks x 4", len(eps))
	}
	perTask := map[string]map[string]int{}
	for _, e := range eps {
		if !e.Stopped || !e.Healthy || e.T < 2 || e.Reward < 0 || e.Reward > 1 {
			t.Errorf("episode %s: stopped %v healthy %v T %d reward %g", e.EpisodeID, e.Stopped, e.Healthy, e.T, e.Reward)
		}
		if !strings.HasPrefix(e.EpisodeID, "1/"+e.TaskID+"/"+e.Source+"/") {
			t.Errorf("episode id %q", e.EpisodeID)
		}
		if perTask[e.TaskID] == nil {
			perTask[e.TaskID] = map[string]int{}
		}
		perTask[e.TaskID][e.Source]++
	}
	for id, n := range perTask {
		if n["current"] != 2 || n["natural_reference"] != 2 {
			t.Errorf("task %s: %v, want 2 current + 2 natural_reference", id, n)
		}
	}
}

func TestShardsPartitionTheBatch(t *testing.T) {
	r := smallRun(t, t.TempDir(), nil)
	runtest.Untrained(t, r, 1)
	var ids []string
	for i := 1; i <= 3; i++ {
		if _, err := r.RunStage(context.Background(), 2, Stage{Shard: Shard{i, 3}}, false); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 3; i++ {
		for _, e := range readEpisodes(t, filepath.Join(r.StageDir(2, layout.Rollout), "episodes-"+string(rune('0'+i))+"-of-3.arrow")) {
			ids = append(ids, e.EpisodeID)
		}
	}
	if _, err := r.RunStage(context.Background(), 2, Stage{}, false); err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, e := range readEpisodes(t, filepath.Join(r.StageDir(2, layout.Rollout), "episodes.arrow")) {
		all = append(all, e.EpisodeID)
	}
	slices.Sort(ids)
	slices.Sort(all)
	if !slices.Equal(ids, all) {
		t.Fatalf("shards hold %d episodes, unsharded %d; sets differ", len(ids), len(all))
	}
	if _, err := ParseShard("4/3"); err == nil {
		t.Fatal("shard 4/3 accepted")
	}
}

// brokenWorld fails every execution of one family, as a flaky server would.
type brokenWorld struct {
	executor.Executor
	family string
}

type brokenSession struct{ executor.Session }

func (s brokenSession) Execute(ctx context.Context, req executor.Request) (executor.Result, error) {
	return executor.Result{}, errors.New("server unreachable")
}

func (w brokenWorld) Begin(ctx context.Context, t tasks.Task, seed uint64) (executor.Session, error) {
	s, err := w.Executor.Begin(ctx, t, seed)
	if t.Family == w.family {
		return brokenSession{s}, err
	}
	return s, err
}

func TestUnhealthyEpisodesAreKeptWithTheirReason(t *testing.T) {
	eps := testBatch(t, func(c *config.Config) executor.Executor { return brokenWorld{sim.New(c.Sim, c.Seed), "medqa"} })
	bad := 0
	for _, ep := range eps {
		if ep.Episode.Family == "medqa" {
			bad++
			if ep.Episode.Healthy || ep.Episode.UnhealthyReason == nil || !strings.Contains(*ep.Episode.UnhealthyReason, "server unreachable") {
				t.Errorf("medqa episode %s: healthy %v reason %v", ep.Episode.EpisodeID, ep.Episode.Healthy, ep.Episode.UnhealthyReason)
			}
		} else if !ep.Episode.Healthy {
			t.Errorf("episode %s unhealthy: %s", ep.Episode.EpisodeID, *ep.Episode.UnhealthyReason)
		}
	}
	if bad == 0 {
		t.Fatal("the batch holds no medqa task")
	}
	if err := checkHealth(eps, 0.5); err != nil {
		t.Fatalf("%d of %d unhealthy is within 0.5: %v", bad, len(eps), err)
	}
	if err := checkHealth(eps, 0.01); err == nil || !strings.Contains(err.Error(), "server unreachable") {
		t.Fatalf("want a failure naming the reason, got %v", err)
	}
}

// TestPairedArms: a candidate skill in one family's menu gives every task of that family one
// pair (paper Eq. (10)): the treatment arm is forced to ADD_AGENT(n0, solver, σ) on the full menu,
// the control arm to ADD_AGENT(n0, solver) with σ off its menu for the whole episode; both share
// the pair's seed and ids, are continued by ρ, and the forced action is recorded as forced.
func TestPairedArms(t *testing.T) {
	r := smallRun(t, t.TempDir(), nil)
	runtest.Untrained(t, r, 1)
	rec := skills.Record{Name: "Check units", Description: "Re-derive the quantity.", Trigger: "Use when numbers appear.",
		Plan: []string{"Restate the quantity", "Check each unit"}, Pitfalls: []string{"Skipping a conversion"}, Constraint: []string{"One answer"}}
	cand := skills.Skill{ID: rec.ID(), Family: "medqa", Status: skills.Candidate, Basis: skills.BasisProposal, Record: rec,
		ContentHash: rec.ContentHash(), CreatedStep: 1}
	if _, err := r.RunStage(context.Background(), 1, runtest.Library(r, 1, cand), true); err != nil {
		t.Fatal(err)
	}
	rolloutFiles(t, r, 2)
	eps := readEpisodes(t, filepath.Join(r.StageDir(2, layout.Rollout), "episodes.arrow"))
	decs, err := schema.ReadFile[schema.DecisionRow](schema.Decisions, filepath.Join(r.StageDir(2, layout.Rollout), "decisions.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]schema.DecisionRow{}
	for _, d := range decs {
		if d.T == 0 {
			first[d.EpisodeID] = d
		}
	}
	arms := map[string]map[string]schema.EpisodeRow{}
	medqa := map[string]bool{}
	for _, e := range eps {
		if e.Family == "medqa" && e.Source == "current" {
			medqa[e.TaskID] = true
		}
		if e.PairID == nil {
			if e.Source != "current" && e.Source != "natural_reference" {
				t.Fatalf("episode %s: source %s without a pair id", e.EpisodeID, e.Source)
			}
			continue
		}
		if e.Family != "medqa" || *e.CandidateSkillID != cand.ID || *e.ComparisonID != cand.ID+"@2" {
			t.Fatalf("paired episode %s: family %s, skill %v, comparison %v", e.EpisodeID, e.Family, *e.CandidateSkillID, *e.ComparisonID)
		}
		if arms[*e.PairID] == nil {
			arms[*e.PairID] = map[string]schema.EpisodeRow{}
		}
		arms[*e.PairID][e.Source] = e
	}
	if len(arms) == 0 || len(arms) != len(medqa) {
		t.Fatalf("%d pairs for %d medqa tasks", len(arms), len(medqa))
	}
	for pid, a := range arms {
		tr, co := a["paired_treatment"], a["paired_control"]
		if tr.EpisodeID == "" || co.EpisodeID == "" || tr.Seed != co.Seed || tr.TaskID != co.TaskID {
			t.Fatalf("pair %s: arms %v", pid, a)
		}
		if tr.MenuID == co.MenuID {
			t.Fatalf("pair %s: the control arm saw the treatment's menu", pid)
		}
		dt, dc := first[tr.EpisodeID], first[co.EpisodeID]
		wantT := `{"kind":"ADD_AGENT","node_id":"n0","role_id":"solver","skill_id":"` + cand.ID + `"}`
		if !dt.Forced || !dc.Forced || dt.ActionJSON != wantT || dc.ActionJSON != `{"kind":"ADD_AGENT","node_id":"n0","role_id":"solver"}` || dt.LogpBehavior != 0 {
			t.Fatalf("pair %s: first actions %s (forced %v) and %s (forced %v)", pid, dt.ActionJSON, dt.Forced, dc.ActionJSON, dc.Forced)
		}
		for _, d := range decs {
			if d.EpisodeID != co.EpisodeID {
				continue
			}
			for _, a := range d.LegalActions {
				if strings.Contains(a, cand.ID) {
					t.Fatalf("pair %s: the control arm could bind the tested skill at t=%d: %s", pid, d.T, a)
				}
			}
		}
	}
}

// A training task file that holds a task twice (made by hand: init refuses repeated ids) is
// refused, naming the file and the task, instead of rolling out episodes with the same id.
func TestRepeatedTaskIDIsRefused(t *testing.T) {
	r := smallRun(t, t.TempDir(), nil)
	train, err := tasks.ReadFile(r.TasksPath("train"))
	if err != nil {
		t.Fatal(err)
	}
	train = append(train, train[0])
	if err := tasks.WriteFile(r.TasksPath("train"), schema.Lineage{Run: r.Name, Stage: "init", ConfigSHA256: r.Config.SHA256()}, train); err != nil {
		t.Fatal(err)
	}
	_, err = r.RunStage(context.Background(), 1, Stage{}, false)
	if err == nil || !strings.Contains(err.Error(), r.TasksPath("train")) || !strings.Contains(err.Error(), "task "+train[0].ID+" appears twice") {
		t.Fatalf("repeated task: %v", err)
	}
}
