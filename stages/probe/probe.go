package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/atomicfile"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/episode"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/probetable"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// The summary files beside the step's table (probetable.StepDir).
const (
	SummaryJSON = "summary.json"
	SummaryMD   = "summary.md"
)

// Defaults of the command's flags: 66 tasks (11 per IID family) and 32 continuations per
// action, the scale of the measurement in issue 15.
const (
	DefaultTasks         = 66
	DefaultContinuations = 32
)

// Source is the episode source of the probe's episodes (they are never written).
const Source = "probe"

// chunkTasks is how many tasks' forced episodes are played together: it bounds the memory held
// by played episodes. A row's score does not depend on its batch, so neither does any output.
const chunkTasks = 6

// Options choose what is probed.
type Options struct {
	Step          int // the learner and library of this step (0: the untrained learner, π_θ = ρ)
	Tasks         int // training tasks sampled
	Continuations int // ρ continuations per (task, first action)
	// TargetWindow is how many training steps, ending at Step, AnchorTB's own first-decision
	// targets are averaged over (the loss_target column); 0 leaves them out.
	TargetWindow int
	// Progress is told after the first decisions are read and after each group of tasks.
	Progress func(Progress)
}

// Progress is how far a probe is.
type Progress struct {
	Tasks, TotalTasks       int // tasks whose forced episodes are played
	Episodes, TotalEpisodes int // forced episodes played (first-decision episodes not counted)
}

// Result is a probe's output.
type Result struct {
	Dir     string // the step's probe folder
	Rows    []schema.ProbeRow
	Summary probetable.Summary
}

// Run probes the learner of o.Step and writes its folder.
func Run(ctx context.Context, r *rundir.Folder, o Options) (*Result, error) {
	cfg := r.Config
	switch {
	case o.Step < 0:
		return nil, fmt.Errorf("probe: step must be >= 0, got %d", o.Step)
	case o.Tasks < 1 || o.Tasks > 100_000:
		return nil, fmt.Errorf("probe: tasks must be in [1, 100000] (each task plays continuations episodes per legal first action), got %d", o.Tasks)
	case o.Continuations < 2 || o.Continuations > 10_000:
		return nil, fmt.Errorf("probe: continuations must be in [2, 10000] (episodes per task and legal first action, split into two independent halves; the default is %d), got %d", DefaultContinuations, o.Continuations)
	case o.TargetWindow < 0:
		return nil, fmt.Errorf("probe: target window must be >= 0 steps (0: no loss targets; the default is %d), got %d", DefaultTargetWindow, o.TargetWindow)
	}
	if err := checkpointExists(r, o.Step); err != nil {
		return nil, err
	}
	lin, err := lineage(r, o.Step)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	l, lib, err := learner.Frozen(r, o.Step)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	// Read before the minutes of forced episodes, so that missing training data fails at once.
	targets, err := lossTargets(r, o.Step, o.TargetWindow)
	if err != nil {
		return nil, fmt.Errorf("probe: %w (--target-window 0 probes without loss targets)", err)
	}
	train, err := tasks.ReadFile(r.TasksPath("train"))
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	picked := Sample(cfg.Seed, cfg.Families, train, o.Tasks)
	if len(picked) == 0 {
		return nil, fmt.Errorf("probe: the training split (%s) has no task of the IID families %s", r.Rel(r.TasksPath("train")), strings.Join(cfg.Families, ", "))
	}
	exec, err := episode.NewExecutor(cfg)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	eng, err := gpu.OpenEngine(cfg.Compute.Backend)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	defer eng.Close()

	firsts, err := firstDecisions(ctx, r, o.Step, exec, l, eng, lib, picked)
	if err != nil {
		return nil, err
	}
	total := 0
	for _, f := range firsts {
		total += len(f.actions) * o.Continuations
	}
	report := func(p Progress) {
		if o.Progress != nil {
			o.Progress(p)
		}
	}
	report(Progress{TotalTasks: len(picked), TotalEpisodes: total})
	beta := cfg.AnchorTB.Beta
	var rows []schema.ProbeRow
	played := 0
	for lo := 0; lo < len(firsts); lo += chunkTasks {
		chunk := firsts[lo:min(lo+chunkTasks, len(firsts))]
		jobs := forcedJobs(cfg.Seed, o.Step, chunk, o.Continuations)
		eps, err := episode.Play(ctx, untempered(cfg), exec, l, eng, jobs, nil)
		if err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
		k := 0
		for _, f := range chunk {
			out := make([][]float64, len(f.actions))
			unhealthy := make([]int32, len(f.actions))
			for a := range f.actions {
				for range o.Continuations {
					p := eps[k]
					if err := f.check(p, a); err != nil {
						return nil, fmt.Errorf("probe: %w", err)
					}
					out[a] = append(out[a], p.Episode.Reward)
					if !p.Episode.Healthy {
						unhealthy[a]++
					}
					k++
				}
			}
			rows = append(rows, taskRows(f, beta, out, unhealthy)...)
		}
		played += len(jobs)
		report(Progress{Tasks: lo + len(chunk), TotalTasks: len(picked), Episodes: played, TotalEpisodes: total})
	}
	setLossTargets(rows, targets)
	sum, err := probetable.Summarize(o.Step, rows)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	dir := probetable.StepDir(r, o.Step)
	if err := write(r, dir, lin, rows, sum); err != nil {
		return nil, fmt.Errorf("probe: write %s: %w", r.Rel(dir), err)
	}
	return &Result{Dir: dir, Rows: rows, Summary: sum}, nil
}

// checkpointExists says what to run first when the step has no learner.
func checkpointExists(r *rundir.Folder, step int) error {
	path := learner.Path(r, step)
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("probe: %w", err)
	case step == 0:
		return fmt.Errorf("probe: run %s has no untrained learner (%s); it is written by `evosteer init --run %s`", r.Dir, r.Rel(path), r.Dir)
	default:
		return fmt.Errorf("probe: step %d has no learner checkpoint (%s; the last trained step is %d); train through step %d first: `evosteer train --run %s --steps %d`",
			step, r.Rel(path), learner.LatestStep(r), step, r.Dir, step)
	}
}

// Sample picks n training tasks balanced over the IID families in config order: n/F per family
// (F families with training tasks, the first n mod F families one more; a family with fewer
// tasks gives all it has), each family's tasks in the order of seed.Derive(0, "probe", "sample",
// run seed, task id). It depends on neither the step nor the options but n, so probes of
// different steps see the same tasks. The result is grouped by family, in config order.
func Sample(runSeed uint64, families []string, train []tasks.Task, n int) []tasks.Task {
	byFamily := map[string][]tasks.Task{}
	for _, t := range train {
		byFamily[t.Family] = append(byFamily[t.Family], t)
	}
	var active []string
	for _, f := range families {
		if len(byFamily[f]) > 0 && !slices.Contains(active, f) {
			active = append(active, f)
		}
	}
	var out []tasks.Task
	for i, f := range active {
		share := n / len(active)
		if i < n%len(active) {
			share++
		}
		ts := slices.Clone(byFamily[f])
		// The run seed goes into the hashed key: Derive adds its base, which would shift every
		// key alike and leave the order unchanged.
		key := func(t tasks.Task) uint64 {
			return seed.Derive(0, "probe", "sample", strconv.FormatUint(runSeed, 10), t.ID)
		}
		slices.SortStableFunc(ts, func(a, b tasks.Task) int {
			ka, kb := key(a), key(b)
			switch {
			case ka < kb:
				return -1
			case ka > kb:
				return 1
			}
			return strings.Compare(a.ID, b.ID)
		})
		out = append(out, ts[:min(share, len(ts))]...)
	}
	return out
}

// ContinuationSeed is the episode seed of continuation i of a task: the same for every forced
// first action of the task and at every step.
func ContinuationSeed(runSeed uint64, taskID string, i int) uint64 {
	return seed.Derive(runSeed, "probe", taskID, strconv.Itoa(i))
}

// first is a task's first decision: its legal actions, the network inputs and the scores.
type first struct {
	task     tasks.Task
	menu     skills.Menu
	legal    []string // action JSON, in the decision's order
	actions  []orchestra.Action
	input    []float32 // policy_input of the decision
	logRho   []float32
	logTheta []float32
}

// untempered is the run's configuration with the orchestrator sampling at temperature 1: the
// probe estimates the target P* ∝ ρ·R_β, so its episodes sample ρ itself whatever
// policy.temperature the rollouts explore at.
func untempered(c *config.Config) *config.Config {
	u := *c
	u.Policy.Temperature = 1
	return &u
}

// firstDecisions plays one ρ episode per task with continuation 0's seed (the first decision's
// state does not depend on anything the episode draws later) and scores its first decision with
// the step's network, from the stored inputs, as rollout and rescore do.
func firstDecisions(ctx context.Context, r *rundir.Folder, step int, exec executor.Executor, l *gpu.Learner, eng *gpu.Engine, lib *skills.Library, picked []tasks.Task) ([]*first, error) {
	cfg := r.Config
	jobs := make([]episode.Job, len(picked))
	for i, t := range picked {
		jobs[i] = episode.Job{Task: t, ID: fmt.Sprintf("probe/%d/%s/first", step, t.ID), Source: Source,
			Seed: ContinuationSeed(cfg.Seed, t.ID, 0), Menu: lib.Menu(t.TaskType)}
	}
	eps, err := episode.Play(ctx, untempered(cfg), exec, l, eng, jobs, nil)
	if err != nil {
		return nil, fmt.Errorf("probe: first decisions: %w", err)
	}
	out := make([]*first, len(picked))
	rows := make([]gpu.PolicyRow, len(picked))
	for i, p := range eps {
		t := picked[i]
		if len(p.Decisions) == 0 {
			return nil, fmt.Errorf("probe: task %s: the episode ended before its first decision: %s", t.ID, noDecision(p))
		}
		d := &p.Decisions[0]
		var texts learner.Texts
		if learner.ReadsText(l) {
			if texts, err = learner.TextsOf(p.Prompts); err != nil {
				return nil, fmt.Errorf("probe: task %s: %w", t.ID, err)
			}
		}
		if rows[i], err = learner.PolicyRow(d, texts); err != nil {
			return nil, fmt.Errorf("probe: task %s: %w", t.ID, err)
		}
		f := &first{task: t, menu: jobs[i].Menu, legal: d.LegalActions, input: d.PolicyInput}
		for _, s := range d.LegalActions {
			a, err := orchestra.ParseAction(s)
			if err != nil {
				return nil, fmt.Errorf("probe: task %s: legal action %s: %w", t.ID, s, err)
			}
			f.actions = append(f.actions, a)
		}
		out[i] = f
	}
	s, err := l.Policy.Score(eng, rows)
	if err != nil {
		return nil, fmt.Errorf("probe: score the first decisions: %w", err)
	}
	for i, f := range out {
		f.logRho, f.logTheta = s.Rho[i], s.Theta[i]
		// The episode sampled its first action from ρ: its behaviour log-probability is the
		// score of the same inputs (see learner.MaxBehaviorMismatch).
		d := eps[i].Decisions[0]
		if len(d.LegalActions) > 1 {
			got, want := float64(f.logRho[d.Chosen]), d.LogpBehavior
			if math.Abs(got-want)/math.Max(1, math.Abs(want)) > learner.MaxBehaviorMismatch {
				return nil, fmt.Errorf("probe: task %s: the network scores the first decision's action %d at log π_ρ %g, the episode sampled it at %g", f.task.ID, d.Chosen, got, want)
			}
		}
	}
	return out, nil
}

// forcedJobs are the episodes of a group of tasks: for each task, each legal first action a and
// each continuation i, an episode forced to take a first and continued by ρ, with the seed of
// continuation i. The forced action stands for a sampled one, so it is charged like one (and
// the episode starts from the scored state). Jobs are in (task, action, continuation) order.
func forcedJobs(runSeed uint64, step int, fs []*first, continuations int) []episode.Job {
	var jobs []episode.Job
	for _, f := range fs {
		for a := range f.actions {
			for i := range continuations {
				jobs = append(jobs, episode.Job{Task: f.task, ID: fmt.Sprintf("probe/%d/%s/%d/%d", step, f.task.ID, a, i), Source: Source,
					Seed: ContinuationSeed(runSeed, f.task.ID, i), Menu: f.menu, First: &f.actions[a], ChargeFirst: true})
			}
		}
	}
	return jobs
}

// check makes sure a forced episode started from the first decision that was scored: the same
// legal actions and network inputs, and the forced action taken.
func (f *first) check(p episode.Played, a int) error {
	if len(p.Decisions) == 0 {
		return fmt.Errorf("episode %s: no first decision: %s", p.Episode.EpisodeID, noDecision(p))
	}
	d := p.Decisions[0]
	switch {
	case !slices.Equal(d.LegalActions, f.legal):
		return fmt.Errorf("episode %s: the first decision's legal actions differ from those scored for task %s (they depend on the episode seed)", p.Episode.EpisodeID, f.task.ID)
	case !slices.Equal(d.PolicyInput, f.input):
		return fmt.Errorf("episode %s: the first decision's network input differs from the one scored for task %s (it depends on the episode seed)", p.Episode.EpisodeID, f.task.ID)
	case !d.Forced || d.ActionJSON != f.legal[a]:
		return fmt.Errorf("episode %s: first action %s, want %s forced", p.Episode.EpisodeID, d.ActionJSON, f.legal[a])
	}
	return nil
}

// noDecision is why an episode took no decision: its unhealthy reason when it has one.
func noDecision(p episode.Played) string {
	if p.Episode.UnhealthyReason != nil {
		return *p.Episode.UnhealthyReason
	}
	return "no decision"
}

// taskRows are a task's rows: rewards[a] holds the rewards of action a's continuations, at least
// two, in continuation order.
func taskRows(f *first, beta float64, rewards [][]float64, unhealthy []int32) []schema.ProbeRow {
	rows := make([]schema.ProbeRow, len(f.actions))
	z := 0.0
	for a, act := range f.actions {
		rs := rewards[a]
		var m float64
		var u [2]float64 // sums of R_β over the even and the odd continuations
		for i, r := range rs {
			m += r
			u[i%2] += math.Exp(gpu.LogRewardBeta(r, beta))
		}
		n, odd := float64(len(rs)), float64(len(rs)/2)
		m /= n
		sd := 0.0
		for _, r := range rs {
			sd += (r - m) * (r - m)
		}
		sd = math.Sqrt(sd / (n - 1))
		role := act.Kind
		if act.Kind == orchestra.KindAddAgent {
			role = act.RoleID
		}
		lr, lt := float64(f.logRho[a]), float64(f.logTheta[a])
		rows[a] = schema.ProbeRow{TaskID: f.task.ID, Family: f.task.Family, ActionIndex: int32(a), ActionJSON: f.legal[a], Role: role,
			Beta: beta, Rho: math.Exp(lr), Theta: math.Exp(lt), LogRho: lr, LogTheta: lt,
			U: (u[0] + u[1]) / n, UEven: u[0] / (n - odd), UOdd: u[1] / odd, MeanReward: m, RewardSD: sd,
			Continuations: int32(len(rs)), Unhealthy: unhealthy[a]}
		z += rows[a].Rho * rows[a].U
	}
	for a := range rows {
		rows[a].PiStar = rows[a].Rho * rows[a].U / z
	}
	return rows
}

// lineage records the probed step and the hashes of what the probe reads, each verified against
// its manifest (rundir.VerifyInputs) before it is read.
func lineage(r *rundir.Folder, step int) (schema.Lineage, error) {
	paths := []string{r.TasksPath("train"), learner.Path(r, step)}
	if p := skills.LibraryPath(r, step+1); p != "" {
		paths = append(paths, p)
	}
	inputs, err := r.VerifyInputs(paths)
	if err != nil {
		return schema.Lineage{}, err
	}
	return schema.Lineage{Run: r.Name, Step: step, Stage: probetable.Folder, ConfigSHA256: r.Config.SHA256(), Inputs: inputs}, nil
}

// write puts the step's folder in place at once: the table, summary.json and summary.md go into
// a hidden temporary folder under probe/, which then replaces the step's folder whole.
func write(r *rundir.Folder, dir string, lin schema.Lineage, rows []schema.ProbeRow, sum probetable.Summary) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed into place
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := schema.WriteRows(schema.Probe, filepath.Join(tmp, probetable.TableFile), lin, rows); err != nil {
		return err
	}
	js, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(filepath.Join(tmp, SummaryJSON), append(js, '\n'), 0o644); err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(filepath.Join(tmp, SummaryMD), []byte(sum.Markdown(r.Config.Executor.Backend == "sim")), 0o644); err != nil {
		return err
	}
	return atomicfile.ReplaceDir(tmp, dir)
}
