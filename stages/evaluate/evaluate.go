package evaluate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/atomicfile"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/episode"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/paradigms"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// Policy names of the networks.
const (
	EvoSteer  = "evosteer"
	Reference = "reference"
)

// Options choose what is evaluated.
type Options struct {
	Step int // the learner and library of this step (≥ 1)
	Runs int // evaluation runs, each with its own seed
	// Paradigms are fixed paradigms (internal/paradigms names) evaluated beside the networks;
	// searched_workflow first searches its workflows on the training split (SearchPerFamily
	// tasks per task type) and stores them in eval/workflows.json.
	Paradigms       []string
	SearchPerFamily int
	// SkipReference leaves ρ out (a comparison study evaluates it once, not in every variant).
	SkipReference bool
	// Progress is told after each policy of each run, with episodes done of the total.
	Progress func(done, total int)
}

// Run evaluates the run's policies on its test split and writes eval/.
func Run(ctx context.Context, r *rundir.Folder, o Options) ([]schema.EvalRow, error) {
	cfg := r.Config
	if o.Step < 1 {
		return nil, fmt.Errorf("evaluate: step %d has no trained learner (train first, or pass --step)", o.Step)
	}
	if o.Runs < 1 || o.Runs > 1000 {
		return nil, fmt.Errorf("evaluate: runs must be in [1, 1000] (each run plays every test task with every paradigm), got %d", o.Runs)
	}
	read := []string{r.TasksPath("test"), learner.Path(r, o.Step), learner.Path(r, 0)}
	if p := skills.LibraryPath(r, o.Step+1); p != "" {
		read = append(read, p)
	}
	if slices.Contains(o.Paradigms, paradigms.SearchedWorkflow) {
		read = append(read, r.TasksPath("train"))
	}
	inputs, err := r.VerifyInputs(read)
	if err != nil {
		return nil, fmt.Errorf("evaluate step %d: %w", o.Step, err)
	}
	test, err := tasks.ReadFile(r.TasksPath("test"))
	if err != nil {
		return nil, err
	}
	theta, lib, err := learner.Frozen(r, o.Step)
	if err != nil {
		return nil, err
	}
	rho, err := learner.Load(r, 0)
	if err != nil {
		return nil, err
	}
	exec, err := episode.NewExecutor(cfg)
	if err != nil {
		return nil, err
	}
	eng, err := gpu.OpenEngine(cfg.Compute.Backend)
	if err != nil {
		return nil, err
	}
	defer eng.Close()

	type who struct {
		name    string
		learner *gpu.Learner
		script  policy.Policy
		lib     *skills.Library
		test    []tasks.Task // the test tasks it plays
	}
	policies := []who{{EvoSteer, theta, nil, lib, test}}
	if !o.SkipReference {
		// ρ is the untrained architecture: step 0's network with step 0's library, which has
		// no skills (the row the world is calibrated to).
		policies = append(policies, who{Reference, rho, nil, &skills.Library{}, test})
	}
	var searched *paradigms.SearchResult
	for _, name := range o.Paradigms {
		var wf paradigms.Workflows
		played := test
		if name == paradigms.SearchedWorkflow {
			if searched, err = search(ctx, r, exec, o.SearchPerFamily, taskTypes(test)); err != nil {
				return nil, err
			}
			wf = searched.Workflows
			// A benchmark whose task type has no training task has no searched workflow: it is
			// not played, and eval/workflows.json says why (SearchResult.Unsearched).
			played = slices.DeleteFunc(slices.Clone(test), func(t tasks.Task) bool { return searched.Unsearched[taskType(t)] != "" })
		}
		p, err := paradigms.New(name, wf)
		if err != nil {
			return nil, err
		}
		policies = append(policies, who{name, nil, p, lib, played})
	}
	total, done := 0, 0
	for _, p := range policies {
		total += o.Runs * len(p.test)
	}
	var rows []schema.EvalRow
	for run := range o.Runs {
		runSeed := seed.Derive(cfg.Seed, "eval", strconv.Itoa(run))
		for _, p := range policies {
			if len(p.test) == 0 {
				continue
			}
			played, err := episode.Play(ctx, cfg, exec, p.learner, eng, jobs(p.test, p.lib, run, runSeed, p.name, p.script), nil)
			if err != nil {
				return nil, fmt.Errorf("evaluate %s run %d: %w", p.name, run, err)
			}
			version := int64(0)
			if p.learner != nil {
				version = p.learner.PolicyVersion
			}
			rows = append(rows, summarize(cfg.Families, p.name, run, runSeed, version, played)...)
			done += len(p.test)
			if o.Progress != nil {
				o.Progress(done, total)
			}
		}
	}
	if err := write(r, inputs, rows, searched); err != nil {
		return nil, err
	}
	return rows, nil
}

// jobs are one policy's episodes of one evaluation run: every test task, seeded by the run and
// the task (shared by the policies), with the frozen menu of the task's type — an OOD benchmark
// plays with the skills of the IID task type it maps to (paper Table 5 and appendix D).
func jobs(test []tasks.Task, lib *skills.Library, run int, runSeed uint64, name string, script policy.Policy) []episode.Job {
	out := make([]episode.Job, len(test))
	for i, t := range test {
		out[i] = episode.Job{Task: t, ID: fmt.Sprintf("eval/%d/%s/%s", run, name, t.ID), Source: name,
			Seed: seed.Derive(runSeed, t.ID), Theta: true, Script: script, Menu: lib.Menu(t.TaskType)}
	}
	return out
}

// The workflow search plays every template on SearchPerFamily tasks per task type, then its
// SearchFinalists best on SearchFinalFactor times as many, and freezes the best of those: the
// searched row is then stable from one seed to the next.
const (
	SearchFinalists   = 4
	SearchFinalFactor = 6
)

// search runs the searched_workflow paradigm's offline search on the training split, for the
// task types of the test split (wanted).
func search(ctx context.Context, r *rundir.Folder, exec executor.Executor, perFamily int, wanted []string) (*paradigms.SearchResult, error) {
	train, err := tasks.ReadFile(r.TasksPath("train"))
	if err != nil {
		return nil, err
	}
	return paradigms.Search(ctx, r.Config, exec, train, paradigms.SearchOptions{PerFamily: max(1, perFamily),
		Finalists: SearchFinalists, FinalPerFamily: SearchFinalFactor * max(1, perFamily), Seed: seed.Derive(r.Config.Seed, "eval", "workflow-search"),
		TaskTypes: wanted})
}

// taskType is the task type a task's workflow and skill menu are chosen by (an OOD benchmark's
// is its IID task type's).
func taskType(t tasks.Task) string { return cmp.Or(t.TaskType, t.Family) }

// taskTypes are the task types of the tasks, sorted.
func taskTypes(ts []tasks.Task) []string {
	set := map[string]bool{}
	for _, t := range ts {
		set[taskType(t)] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// Unavailable are the cells of an evaluation that no score fills, each with the reason:
// policy → benchmark → why (searched_workflow on a benchmark whose task type had no training
// task to search a workflow on). Tables print "n/a: why" there.
type Unavailable map[string]map[string]string

// unavailable are the cells the workflow search left without a workflow (nil without a search).
func unavailable(searched *paradigms.SearchResult, cfg *config.Config) Unavailable {
	if na := searched.Unavailable(cfg); len(na) > 0 {
		return Unavailable{paradigms.SearchedWorkflow: na}
	}
	return nil
}

// ReadUnavailable are the cells of a run's evaluation that no score fills, with the reason,
// from eval/workflows.json (nil when the run's evaluation searched no workflow).
func ReadUnavailable(r *rundir.Folder) (Unavailable, error) {
	path := filepath.Join(r.Dir, layout.Eval, layout.EvalWorkflowsFile)
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return paradigms.UnavailableCells(path, data, r.Config)
}

// summarize is one policy's run: per benchmark, the mean score and tokens per task.
func summarize(iid []string, name string, run int, runSeed uint64, version int64, played []episode.Played) []schema.EvalRow {
	type acc struct{ n, score, tokens, controller float64 }
	by := map[string]*acc{}
	count := schema.ControllerCountEstimated // every episode of a run counts its controller alike
	for _, p := range played {
		a := by[p.Episode.Family]
		if a == nil {
			a = &acc{}
			by[p.Episode.Family] = a
		}
		a.n++
		a.score += p.Episode.Reward // an unhealthy episode scores its reward (0 when it never stopped)
		a.tokens += float64(p.Episode.ExecutorTokensIn + p.Episode.ExecutorTokensOut)
		a.controller += float64(p.Episode.ControllerTokensIn + p.Episode.ControllerTokensOut)
		count = p.Episode.ControllerCount
	}
	var rows []schema.EvalRow
	for _, b := range slices.Sorted(maps.Keys(by)) {
		a := by[b]
		block := "ood"
		if slices.Contains(iid, b) {
			block = "iid"
		}
		rows = append(rows, schema.EvalRow{Policy: name, Benchmark: b, Block: block, Run: int32(run), Seed: runSeed,
			Tasks: int64(a.n), Score: a.score / a.n, TokensPerTask: a.tokens / a.n, ControllerTokensPerTask: a.controller / a.n,
			ControllerCount: count, PolicyVersion: version})
	}
	return rows
}

// WorkflowsFile holds the searched workflows (and every template's search score) when the
// searched_workflow paradigm was evaluated.
const WorkflowsFile = layout.EvalWorkflowsFile

// write puts eval/ in place at once: results.arrow (its lineage records the files read, inputs),
// table.md and, after a workflow search, workflows.json.
func write(r *rundir.Folder, inputs map[string]string, rows []schema.EvalRow, searched *paradigms.SearchResult) error {
	dir := filepath.Join(r.Dir, layout.Eval)
	tmp, err := os.MkdirTemp(r.Dir, ".tmp-eval-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	lin := schema.Lineage{Run: r.Name, Stage: layout.Eval, ConfigSHA256: r.Config.SHA256(), Inputs: inputs}
	if err := schema.WriteRows(schema.EvalResults, filepath.Join(tmp, layout.EvalResultsFile), lin, rows); err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(filepath.Join(tmp, layout.EvalTableFile), []byte(Table(rows, r.Config, unavailable(searched, r.Config))), 0o644); err != nil {
		return err
	}
	if searched != nil {
		data, err := json.MarshalIndent(searched, "", "  ")
		if err != nil {
			return err
		}
		if err := atomicfile.WriteBytes(filepath.Join(tmp, WorkflowsFile), append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	old := dir + ".old"
	os.RemoveAll(old)
	if _, err := os.Stat(dir); err == nil {
		if err := os.Rename(dir, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	return os.RemoveAll(old)
}
