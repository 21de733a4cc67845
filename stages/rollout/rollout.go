package rollout

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/executor/openai"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/policy"
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

// Progress is told, after every finished episode, how many of the total are done.
type Progress func(done, total int)

// Stage is the rollout stage of a step, or of one shard of it.
type Stage struct {
	Shard    Shard    // the zero value rolls out the whole batch
	Progress Progress // may be nil
}

// Name is the stage's folder.
func (Stage) Name() string { return layout.Rollout }

// ShardName names the shard ("" for the whole batch).
func (s Stage) ShardName() string { return layout.Shard(s.Shard.Index, s.Shard.Count) }

// Inputs are the training tasks, the learner of the previous step (step 0's is written by init)
// and the skill library the previous step's author wrote (none at step 1).
func (Stage) Inputs(r *rundir.Run, step int) ([]string, error) {
	in := []string{r.TasksPath("train"), learner.Path(r, step-1)}
	if p := skills.LibraryPath(r, step); p != "" {
		in = append(in, p)
	}
	return in, nil
}

// Outputs are the episodes, decisions and executions of the shard, and the hidden truths of
// its tasks on the simulated world.
func (s Stage) Outputs(r *rundir.Run, _ int) []string {
	tables := []string{layout.Episodes, layout.Decisions, layout.Executions}
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

// NewExecutor opens the configured executor backend.
func NewExecutor(cfg *config.Config) (executor.Executor, error) {
	switch cfg.Executor.Backend {
	case "sim":
		return sim.New(cfg.Sim, cfg.Seed), nil
	case "openai":
		return openai.FromConfig(cfg)
	default:
		return nil, fmt.Errorf("executor backend %q is not available in this build (use sim)", cfg.Executor.Backend)
	}
}

func run(ctx context.Context, sc *rundir.StageContext, shard Shard, progress Progress) error {
	cfg := sc.Run.Config
	train, err := tasks.ReadFile(sc.Run.TasksPath("train"))
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(train))
	for _, t := range train {
		if seen[t.ID] {
			return fmt.Errorf("%s: task %s appears twice; episode ids name the task, so task ids must be unique", sc.Run.TasksPath("train"), t.ID)
		}
		seen[t.ID] = true
	}
	exec, err := NewExecutor(cfg)
	if err != nil {
		return err
	}
	l, err := learner.Load(sc.Run, sc.Step-1)
	if err != nil {
		return err
	}
	lib, err := skills.LoadLibrary(sc.Run, sc.Step)
	if err != nil {
		return err
	}
	eng, err := gpu.OpenEngine(cfg.Compute.Backend)
	if err != nil {
		return err
	}
	defer eng.Close()
	jobs, picked := plan(cfg, sc.Step, train, shard, lib)
	e := newEnv(cfg, exec, l, eng, jobs)
	eps, err := runAll(ctx, e, jobs, workers(cfg), progress)
	if err != nil {
		return err
	}
	if err := checkHealth(eps, cfg.Rollout.MaxUnhealthyShare); err != nil {
		return err
	}
	return writeOutputs(sc, sc.Lineage(), shard, eps, exec, picked)
}

// newEnv is the environment of a step's episodes: the executor, the run's orchestration options
// and ablations, and the learner's network for the network jobs.
func newEnv(cfg *config.Config, exec executor.Executor, l *gpu.Learner, eng *gpu.Engine, jobs []job) *env {
	network := 0
	for _, j := range jobs {
		if j.script == nil {
			network++
		}
	}
	return &env{exec: exec, families: cfg.Families, prior: policy.NewPrior(cfg.Prior),
		options: orchestra.Options{Budget: cfg.Budget, Interleaved: !cfg.Ablated("interleaved-execution"),
			Repair: !cfg.Ablated("learnable-repair")},
		waves: newWaves(l, eng, network), useValue: !cfg.Ablated("value-head"), zeroFeatures: cfg.Ablated("execution-features"),
		policyVersion: l.PolicyVersion, valueVersion: l.ValueVersion, temperature: cfg.Policy.Temperature}
}

// plan builds the step's episode jobs for every scheduled task of the shard: the current (π_θ)
// and natural-reference (π_ρ) rollouts, each seeded by its episode id and shown the menu of the
// task's type; and, for every skill the library tests in that type (skills.Library.Tested),
// one pair (paper Eq. (10), METHOD.md §5.5): a treatment arm forced to start with
// ADD_AGENT(n0, solver, σ) on the full menu and a control arm forced to ADD_AGENT(n0, solver)
// with σ removed from its menu for the whole episode, both continued by ρ and sharing the
// pair's seed.
func plan(cfg *config.Config, step int, train []tasks.Task, shard Shard, lib *skills.Library) ([]job, []tasks.Task) {
	byID := make(map[string]tasks.Task, len(train))
	byFamily := map[string][]string{}
	for _, t := range train {
		byID[t.ID] = t
		byFamily[t.Family] = append(byFamily[t.Family], t.ID)
	}
	ids := Schedule(cfg.Seed, step, cfg.Batch.Tasks, cfg.Families, byFamily)
	var jobs []job
	var picked []tasks.Task
	add := func(j job) {
		j.order = len(jobs)
		jobs = append(jobs, j)
	}
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
				add(job{task: t, source: src.name, index: k, id: eid, seed: seed.Derive(cfg.Seed, eid),
					theta: src.name == "current", menu: menu})
			}
		}
		for k, s := range lib.Tested(t.TaskType, step) {
			comp, _ := lib.Comparison(s.ID, step)
			pid := skills.PairID(step, id, comp)
			info := &pairInfo{pairID: pid, comparisonID: comp, skillID: s.ID}
			for _, arm := range []struct {
				source string
				menu   skills.Menu
				first  orchestra.Action
			}{
				{"paired_treatment", menu, orchestra.Action{Kind: orchestra.KindAddAgent, NodeID: "n0", RoleID: pairedRole, SkillID: s.ID}},
				{"paired_control", lib.Background(t.TaskType, s.ID), orchestra.Action{Kind: orchestra.KindAddAgent, NodeID: "n0", RoleID: pairedRole}},
			} {
				first := arm.first
				add(job{task: t, source: arm.source, index: k, id: fmt.Sprintf("%d/%s/%s/%d", step, id, arm.source, k),
					seed: seed.Derive(cfg.Seed, pid), menu: arm.menu, first: &first, pair: info})
			}
		}
	}
	return jobs, picked
}

// pairedRole is the forced first role of paired arms: roles[0] of the reference configuration.
const pairedRole = "solver"

func workers(cfg *config.Config) int {
	if cfg.Rollout.Workers > 0 {
		return cfg.Rollout.Workers
	}
	return 4 * runtime.NumCPU()
}

// runAll plays every job, all in flight at once (network episodes advance in lockstep waves,
// which needs every one of them running), with at most n doing CPU work at a time. Results keep
// the jobs' order, so the output does not depend on scheduling.
func runAll(ctx context.Context, e *env, jobs []job, n int, progress Progress) ([]*episode, error) {
	e.slots = make(chan struct{}, max(1, n))
	out := make([]*episode, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = e.run(ctx, jobs[i])
			mu.Lock()
			done++
			if progress != nil {
				progress(done, len(jobs))
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// checkHealth fails the stage when too many episodes were unhealthy, naming the reasons.
func checkHealth(eps []*episode, maxShare float64) error {
	reasons := map[string]int{}
	bad := 0
	for _, ep := range eps {
		if !ep.row.Healthy {
			bad++
			reasons[*ep.row.UnhealthyReason]++
		}
	}
	if len(eps) == 0 || float64(bad)/float64(len(eps)) <= maxShare {
		return nil
	}
	keys := make([]string, 0, len(reasons))
	for k := range reasons {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return reasons[keys[i]] > reasons[keys[j]] || (reasons[keys[i]] == reasons[keys[j]] && keys[i] < keys[j])
	})
	var b strings.Builder
	for _, k := range keys[:min(5, len(keys))] {
		fmt.Fprintf(&b, "\n  %d x %s", reasons[k], k)
	}
	return fmt.Errorf("%d of %d episodes unhealthy (more than rollout.max_unhealthy_share = %g); reasons:%s", bad, len(eps), maxShare, b.String())
}

func writeOutputs(sc *rundir.StageContext, lin schema.Lineage, shard Shard, eps []*episode, exec executor.Executor, picked []tasks.Task) error {
	var episodes []schema.EpisodeRow
	var decisions []schema.DecisionRow
	var executions []schema.ExecutionRow
	for _, ep := range eps {
		episodes = append(episodes, ep.row)
		decisions = append(decisions, ep.decisions...)
		executions = append(executions, ep.executions...)
	}
	file := func(table string) string {
		return filepath.Join(sc.OutDir, layout.ShardFile(table, shard.Index, shard.Count))
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
	if w, ok := exec.(*sim.World); ok {
		return writeTable(file(layout.SimTruth), schema.SimTruth, lin, truthRows(w, picked))
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
			Answer: ptr(tr.Answer), TrapRate: &tr.TrapRate, FailRate: &tr.FailRate, SearchHitRate: &tr.SearchHitRate}
		if tr.Requirement > 0 {
			req := int32(tr.Requirement)
			row.Requirement = &req
		}
		rows = append(rows, row)
	}
	return rows
}
