package rollout

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/episode"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// Shard selects part of a batch: shard Index of Count (1-based), by task.
type Shard struct{ Index, Count int }

// ParseShard reads "i/n".
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	sh := Shard{}
	var err1, err2 error
	sh.Index, err1 = strconv.Atoi(i)
	sh.Count, err2 = strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || sh.Count < 1 || sh.Index < 1 || sh.Index > sh.Count {
		return Shard{}, fmt.Errorf("shard %q: want i/n with 1 <= i <= n", s)
	}
	return sh, nil
}

// Stage is the rollout stage of a step, or of one shard of it.
type Stage struct {
	Shard    Shard            // the zero value rolls out the whole batch
	Progress episode.Progress // may be nil
}

// Name is the stage's folder.
func (Stage) Name() string { return layout.Rollout }

// ShardName names the shard ("" for the whole batch).
func (s Stage) ShardName() string { return layout.Shard(s.Shard.Index, s.Shard.Count) }

// Inputs are the training tasks, the learner of the previous step (step 0's is written by init)
// and the skill library the previous step's author wrote (none at step 1).
func (Stage) Inputs(r *rundir.Folder, step int) (rundir.Resolved, error) {
	in := rundir.Files{r.TasksPath("train"), learner.Path(r, step-1)}
	if p := skills.LibraryPath(r, step); p != "" {
		in = append(in, p)
	}
	return in, nil
}

// Outputs are the episodes, decisions and executions of the shard, the controller prompts its
// served reference scored or its causal-LM policy read (config.KeepsPrompts), and the hidden truths of its tasks on the
// simulated world.
func (s Stage) Outputs(r *rundir.Folder, _ int) []string {
	tables := []string{layout.Episodes, layout.Decisions, layout.Executions}
	if r.Config.KeepsPrompts() {
		tables = append(tables, layout.Prompts)
	}
	if r.Config.Executor.Backend == "sim" {
		tables = append(tables, layout.SimTruth)
	}
	out := make([]string, len(tables))
	for i, t := range tables {
		out[i] = layout.ShardFile(t, s.Shard.Index, s.Shard.Count)
	}
	return out
}

// Run plays the step's episodes and writes them into sc.OutDir.
func (s Stage) Run(ctx context.Context, sc *rundir.StageContext) error {
	return run(ctx, sc, s.Shard, s.Progress)
}

func run(ctx context.Context, sc *rundir.StageContext, shard Shard, progress episode.Progress) error {
	cfg := sc.Folder.Config
	train, err := tasks.ReadFile(sc.Folder.TasksPath("train"))
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(train))
	for _, t := range train {
		if seen[t.ID] {
			return fmt.Errorf("%s: task %s appears twice; episode ids name the task, so task ids must be unique", sc.Folder.TasksPath("train"), t.ID)
		}
		seen[t.ID] = true
	}
	exec, err := episode.NewExecutor(cfg)
	if err != nil {
		return err
	}
	l, err := learner.Load(sc.Folder, sc.Step-1)
	if err != nil {
		return err
	}
	lib, err := skills.LoadLibrary(sc.Folder, sc.Step)
	if err != nil {
		return err
	}
	eng, err := gpu.OpenEngine(cfg.Compute.Backend)
	if err != nil {
		return err
	}
	defer eng.Close()
	jobs, picked := plan(cfg, sc.Step, train, shard, lib)
	eps, err := playKeeping(ctx, sc, shard, exec, l, eng, jobs, progress)
	if err != nil {
		return err
	}
	if err := checkHealth(eps, cfg.Rollout.MaxUnhealthyShare); err != nil {
		return err
	}
	var truth []schema.SimTruthRow
	w, onSim := exec.(*sim.World)
	if onSim {
		truth = truthRows(w, picked)
	}
	return writeOutputs(sc, sc.Lineage(), shard, eps, onSim, truth)
}

// plan builds the step's episode jobs for every scheduled task of the shard: the current (π_θ)
// and natural-reference (π_ρ) rollouts, each seeded by its episode id and shown the menu of the
// task's type; and, for every skill the library tests in that type (skills.Library.Tested),
// one pair (paper Eq. (10), METHOD.md §5.5): a treatment arm forced to start with
// ADD_AGENT(n0, solver, σ) on the full menu and a control arm forced to ADD_AGENT(n0, solver)
// with σ removed from its menu for the whole episode, both continued by ρ and sharing the
// pair's seed.
func plan(cfg *config.Config, step int, train []tasks.Task, shard Shard, lib *skills.Library) ([]episode.Job, []tasks.Task) {
	byID := make(map[string]tasks.Task, len(train))
	byFamily := map[string][]string{}
	for _, t := range train {
		byID[t.ID] = t
		byFamily[t.Family] = append(byFamily[t.Family], t.ID)
	}
	ids := Schedule(cfg.Seed, step, cfg.Batch.Tasks, cfg.Families, byFamily)
	var jobs []episode.Job
	var picked []tasks.Task
	for i, id := range ids {
		if shard.Count > 1 && i%shard.Count != shard.Index-1 {
			continue
		}
		t := byID[id]
		picked = append(picked, t)
		menu := lib.Menu(t.TaskType)
		for _, src := range []struct {
			name string
			n    int
		}{{"current", cfg.Batch.CurrentRollouts}, {"natural_reference", cfg.Batch.ReferenceRollouts}} {
			for k := 0; k < src.n; k++ {
				eid := fmt.Sprintf("%d/%s/%s/%d", step, id, src.name, k)
				jobs = append(jobs, episode.Job{Task: t, Source: src.name, ID: eid, Seed: seed.Derive(cfg.Seed, eid),
					Theta: src.name == "current", Menu: menu})
			}
		}
		for k, pp := range lib.PlannedPairs(step, id, t.TaskType) {
			info := &episode.Pair{PairID: pp.PairID, ComparisonID: pp.ComparisonID, SkillID: pp.SkillID}
			for _, arm := range []struct {
				source string
				menu   skills.Menu
				first  orchestra.Action
			}{
				{"paired_treatment", menu, orchestra.Action{Kind: orchestra.KindAddAgent, NodeID: "n0", RoleID: pairedRole, SkillID: pp.SkillID}},
				{"paired_control", lib.Background(t.TaskType, pp.SkillID), orchestra.Action{Kind: orchestra.KindAddAgent, NodeID: "n0", RoleID: pairedRole}},
			} {
				first := arm.first
				jobs = append(jobs, episode.Job{Task: t, Source: arm.source, ID: fmt.Sprintf("%d/%s/%s/%d", step, id, arm.source, k),
					Seed: seed.Derive(cfg.Seed, pp.PairID), Menu: arm.menu, First: &first, Pair: info})
			}
		}
	}
	return jobs, picked
}

// playKeeping plays the plan's jobs, keeping finished tasks' episodes as parts in sc.PartsDir
// as they go (parts.go); the tasks whose episodes an earlier, killed run of the same inputs
// kept there are read back instead of played. Progress counts them as done. Results keep the
// jobs' order.
func playKeeping(ctx context.Context, sc *rundir.StageContext, shard Shard, exec executor.Executor, l *gpu.Learner, eng *gpu.Engine, jobs []episode.Job, progress episode.Progress) ([]episode.Played, error) {
	served := sc.Folder.Config.KeepsPrompts()
	keep := sc.PartsDir != ""
	lin := partLineage(sc, shard)
	gs := groups(jobs)
	var old kept
	if keep {
		old = readParts(sc.PartsDir, lin, jobs, gs, served)
	}
	eps := make([]episode.Played, len(jobs))
	var todo []episode.Job
	var at, groupOf []int // the plan index of each job to play; the group of each plan job
	left := make([]int, len(gs))
	resumed, open := 0, 0
	for k, g := range gs {
		for range g.end - g.start {
			groupOf = append(groupOf, k)
		}
		if got := old.eps[k]; got != nil {
			copy(eps[g.start:g.end], got)
			resumed += len(got)
			continue
		}
		for i := g.start; i < g.end; i++ {
			todo, at = append(todo, jobs[i]), append(at, i)
		}
		left[k] = g.end - g.start
		open++
	}
	var mu sync.Mutex
	var pending []int // finished tasks not yet in a part
	var last time.Time
	seq := old.next
	finished := func(i int, p episode.Played) error {
		j := at[i]
		mu.Lock()
		eps[j] = p
		k := groupOf[j]
		if left[k]--; left[k] > 0 {
			mu.Unlock()
			return nil
		}
		open--
		pending = append(pending, k)
		// Not after the last task (the stage's files are written next), nor once the play is
		// cancelled (Ctrl-C, SIGTERM: a call cut short may have made an episode unhealthy).
		if !keep || open == 0 || ctx.Err() != nil || time.Since(last) < keepEvery {
			mu.Unlock()
			return nil
		}
		var part []episode.Played
		for _, k := range pending {
			part = append(part, eps[gs[k].start:gs[k].end]...)
		}
		n := seq
		seq, pending, last = seq+1, nil, time.Now()
		mu.Unlock()
		if err := writePart(sc.PartsDir, n, lin, part, served); err != nil {
			return fmt.Errorf("keep the finished episodes: %w", err)
		}
		return nil
	}
	var told episode.Progress
	if progress != nil {
		told = func(done, _ int) { progress(resumed+done, len(jobs)) }
	}
	if _, err := episode.PlayKeeping(ctx, sc.Folder.Config, exec, l, eng, todo, told, finished); err != nil {
		return nil, err
	}
	return eps, nil
}

// pairedRole is the forced first role of paired arms: roles[0] of the reference configuration.
const pairedRole = "solver"

// writeOutputs writes the tables of the played episodes, in their order, and (onSim) the hidden
// truths of their tasks.
func writeOutputs(sc *rundir.StageContext, lin schema.Lineage, shard Shard, eps []episode.Played, onSim bool, truth []schema.SimTruthRow) error {
	file := func(table string) string {
		return filepath.Join(sc.OutDir, layout.ShardFile(table, shard.Index, shard.Count))
	}
	if err := writeEpisodes(file, lin, eps, sc.Folder.Config.KeepsPrompts()); err != nil {
		return err
	}
	if onSim {
		return writeTable(file(layout.SimTruth), schema.SimTruth, lin, truth)
	}
	return nil
}

// writeEpisodes writes the tables of the played episodes, in their order, each table at
// file(its name): episodes, decisions, executions, and (served) prompts.
func writeEpisodes(file func(table string) string, lin schema.Lineage, eps []episode.Played, served bool) error {
	var episodes []schema.EpisodeRow
	var decisions []schema.DecisionRow
	var executions []schema.ExecutionRow
	var prompts []schema.PromptRow
	for _, ep := range eps {
		episodes = append(episodes, ep.Episode)
		decisions = append(decisions, ep.Decisions...)
		executions = append(executions, ep.Executions...)
		prompts = append(prompts, ep.Prompts...)
	}
	if err := writeTable(file(layout.Episodes), schema.Episodes, lin, episodes); err != nil {
		return err
	}
	if err := writeTable(file(layout.Decisions), schema.Decisions, lin, decisions); err != nil {
		return err
	}
	if err := writeTable(file(layout.Executions), schema.Executions, lin, executions); err != nil {
		return err
	}
	if served {
		return writeTable(file(layout.Prompts), schema.Prompts, lin, prompts)
	}
	return nil
}

func writeTable[T any](path string, t *schema.Table, lin schema.Lineage, rows []T) error {
	rec, err := schema.Build(t, rows)
	if err != nil {
		return err
	}
	defer rec.Release()
	return t.WriteBatches(path, lin, rec)
}

// truthRows are the hidden truths of the batch's tasks.
func truthRows(w *sim.World, picked []tasks.Task) []schema.SimTruthRow {
	rows := make([]schema.SimTruthRow, 0, len(picked))
	for _, t := range picked {
		tr := w.TaskTruth(t)
		row := schema.SimTruthRow{Kind: "task", ID: t.ID, Family: &tr.Family, TaskType: &tr.TaskType, Difficulty: &tr.Difficulty,
			Answer: schema.NullIfZero(tr.Answer), TrapRate: &tr.TrapRate, FailRate: &tr.FailRate, SearchHitRate: &tr.SearchHitRate,
			Unsolvable: &tr.Unsolvable}
		if tr.Requirement > 0 {
			req := int32(tr.Requirement)
			row.Requirement = &req
		}
		rows = append(rows, row)
	}
	return rows
}
