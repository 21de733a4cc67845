package author

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
	"github.com/evosteer/evosteer-go/stages/validate"
)

// newRun initialises a run (relative folder, as on the command line) with eight train tasks
// per family and the author starting at step 2; edit changes the configuration first.
func newRun(t *testing.T, edit func(*config.Config)) *rundir.Folder {
	t.Helper()
	return newRunTasks(t, edit)
}

// newRunTasks is newRun with train tasks only for the families untrained does not name.
func newRunTasks(t *testing.T, edit func(*config.Config), untrained ...string) *rundir.Folder {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Author.StartStep, cfg.Author.StartFamilies = 2, 3
	if edit != nil {
		edit(cfg)
	}
	t.Chdir(t.TempDir())
	r, err := rundir.Init("run", cfg, "test", func(r *rundir.Folder) error {
		var ts []tasks.Task
		for _, f := range cfg.Families {
			if !slices.Contains(untrained, f) {
				ts = append(ts, sim.Tasks(cfg.Sim, cfg.Seed, f, f, "train", 8)...)
			}
		}
		return tasks.WriteFile(r.TasksPath("train"), lineage(cfg, 0, "init"), ts)
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func lineage(cfg *config.Config, step int, stage string) schema.Lineage {
	return schema.Lineage{Run: "run", Step: step, Stage: stage, ConfigSHA256: cfg.SHA256()}
}

// reward is the synthetic reward of episode i of task k of a family: family index fi sets how
// hard the family is, so the families' priorities differ.
func reward(fi, k, i int) float64 {
	if (k+i+fi)%(fi+2) == 0 {
		return 1
	}
	return 0
}

// writeRollout writes step's synthetic rollout: for each family, four tasks with two current
// and two natural-reference episodes each (none for a family without train tasks), one decision (STOP) per episode and one execution
// of node n0 whose output states the reward.
func writeRollout(t *testing.T, r *rundir.Folder, step int) {
	t.Helper()
	byFamily := trainByFamily(t, r)
	var eps []schema.EpisodeRow
	var decs []schema.DecisionRow
	var execs []schema.ExecutionRow
	for fi, f := range r.Config.Families {
		for k, tk := range byFamily[f][:min(4, len(byFamily[f]))] {
			for i, src := range []string{"current", "current", "natural_reference", "natural_reference"} {
				id := fmt.Sprintf("%d/%s/%s/%d", step, tk.ID, src, i%2)
				rw := reward(fi, k, i)
				out := fmt.Sprintf("Answer: %v", rw)
				n0 := "n0"
				eps = append(eps, schema.EpisodeRow{EpisodeID: id, TaskID: tk.ID, Family: f, TaskType: f, Split: "train", ControllerCount: schema.ControllerCountEstimated, Source: src,
					T: 2, Reward: rw, Stopped: true, Healthy: true, OutputNode: &n0, OutputText: out, MenuID: skills.MenuID(nil)})
				decs = append(decs,
					schema.DecisionRow{EpisodeID: id, T: 1, ActionJSON: `{"kind":"STOP"}`, ActionKind: "STOP",
						LegalActions: []string{`{"kind":"STOP"}`}, PriorLogits: []float32{0}},
					schema.DecisionRow{EpisodeID: id, T: 0, ActionJSON: `{"kind":"ADD_AGENT","role":"solver"}`, ActionKind: "ADD_AGENT",
						LegalActions: []string{`{"kind":"ADD_AGENT","role":"solver"}`}, PriorLogits: []float32{0}})
				execs = append(execs, schema.ExecutionRow{EpisodeID: id, T: 0, NodeID: "n0", Role: "solver", Skills: []string{},
					Output: out, Status: "ok", AnswerPresent: true, ToolStatuses: []string{}})
			}
		}
	}
	dir := r.StageDir(step, layout.Rollout)
	lin := lineage(r.Config, step, "rollout")
	for _, err := range []error{
		schema.WriteRows(schema.Episodes, filepath.Join(dir, "episodes.arrow"), lin, eps),
		schema.WriteRows(schema.Decisions, filepath.Join(dir, "decisions.arrow"), lin, decs),
		schema.WriteRows(schema.Executions, filepath.Join(dir, "executions.arrow"), lin, execs),
		schema.WriteRows(schema.Pairs, validate.PairsPath(r, step), lineage(r.Config, step, "aggregate"), []schema.PairRow{}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// stepThrough runs validate and author (with a) of steps 1..k on synthetic rollouts.
func stepThrough(t *testing.T, r *rundir.Folder, k int, a Author) {
	t.Helper()
	for step := 1; step <= k; step++ {
		writeRollout(t, r, step)
		if _, err := r.RunStage(context.Background(), step, validate.Stage{}, false); err != nil {
			t.Fatal(err)
		}
		if _, err := r.RunStage(context.Background(), step, Stage{Author: a}, false); err != nil {
			t.Fatal(err)
		}
	}
}

func proposals(t *testing.T, r *rundir.Folder, step int) []schema.ProposalRow {
	t.Helper()
	rows, err := schema.ReadFile[schema.ProposalRow](schema.Proposals, filepath.Join(r.StageDir(step, layout.Author), layout.ProposalsFile))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// evidenceAt is the evidence the author of step sees: the pool the author of step − 1 carried
// and the step's episodes (details: with decisions and executions).
func evidenceAt(t *testing.T, r *rundir.Folder, step int, details bool) *evidence {
	t.Helper()
	prev, err := readState(r, step)
	if err != nil {
		t.Fatal(err)
	}
	current, err := readEpisodes(r, step)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := loadEvidence(r, step, prev.pool, current, details)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// trainByFamily reads the run's training tasks grouped by family.
func trainByFamily(t *testing.T, r *rundir.Folder) map[string][]tasks.Task {
	t.Helper()
	train, err := tasks.ReadFile(r.TasksPath("train"))
	if err != nil {
		t.Fatal(err)
	}
	byFamily := map[string][]tasks.Task{}
	for _, tk := range train {
		byFamily[tk.Family] = append(byFamily[tk.Family], tk)
	}
	return byFamily
}
