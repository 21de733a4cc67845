//go:build duckdb_arrow

package aggregate

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/stats"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// A synthetic run: task records and, per step, episodes with their decisions, kept both as the
// oracle's structs (the truth) and written as rollout files through schema.

// world is the generated truth of a run.
type world struct {
	cfg   *config.Config
	tasks []tasks.Task
	steps [][]stats.Episode // steps[k-1] = the episodes of step k
}

// priors is the oracle's view of the task records.
func (w *world) priors() map[string]stats.TaskPrior {
	m := map[string]stats.TaskPrior{}
	for _, t := range w.tasks {
		m[t.ID] = stats.TaskPrior{Rate: t.PriorRate, Count: t.PriorCount}
	}
	return m
}

// newRun initialises a run folder for w (tasks/train.arrow from w.tasks).
func newRun(t testing.TB, w *world) *rundir.Folder {
	t.Helper()
	r, err := rundir.Init(filepath.Join(t.TempDir(), "synth"), w.cfg, "test", func(r *rundir.Folder) error {
		return tasks.WriteFile(r.TasksPath("train"), schema.Lineage{Run: "synth", Stage: "init", ConfigSHA256: w.cfg.SHA256()}, w.tasks)
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func defaultConfig(t testing.TB) *config.Config {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// writeStep writes the episodes and decisions of step k as rollout files, split into the given
// number of shards (1: unsharded file names) of consecutive episodes, so that the files hold
// eps in eps order (the order the stage and Check read them in, which the running sums follow).
func writeStep(t testing.TB, r *rundir.Folder, k int, eps []stats.Episode, nShards int) {
	t.Helper()
	lin := schema.Lineage{Run: r.Name, Step: k, Stage: layout.Rollout, ConfigSHA256: r.Config.SHA256()}
	for s := 0; s < nShards; s++ {
		var er []schema.EpisodeRow
		var dr []schema.DecisionRow
		for _, e := range eps[s*len(eps)/nShards : (s+1)*len(eps)/nShards] {
			er = append(er, episodeRow(e))
			for _, d := range e.Decisions {
				dr = append(dr, decisionRow(e.ID, d))
			}
		}
		writeRows(t, filepath.Join(r.StageDir(k, layout.Rollout), layout.ShardFile(layout.Episodes, s+1, nShards)), schema.Episodes, lin, er)
		writeRows(t, filepath.Join(r.StageDir(k, layout.Rollout), layout.ShardFile(layout.Decisions, s+1, nShards)), schema.Decisions, lin, dr)
	}
}

func writeRows[T any](t testing.TB, path string, tbl *schema.Table, lin schema.Lineage, rows []T) {
	t.Helper()
	rec, err := schema.Build(tbl, rows)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if err := tbl.WriteBatches(path, lin, rec); err != nil {
		t.Fatal(err)
	}
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func episodeRow(e stats.Episode) schema.EpisodeRow {
	row := schema.EpisodeRow{EpisodeID: e.ID, TaskID: e.TaskID, Family: e.Family, TaskType: e.TaskType, Split: "train", ControllerCount: schema.ControllerCountEstimated,
		Source: e.Source, PairID: nilIfEmpty(e.PairID), ComparisonID: nilIfEmpty(e.ComparisonID),
		CandidateSkillID: nilIfEmpty(e.SkillID), T: int32(len(e.Decisions)), Reward: e.Reward, Stopped: true,
		Healthy: e.Healthy, MenuID: "menu", TerminalStructureKey: e.TerminalKey, TerminalCoarseKey: e.TerminalCoarseKey}
	if !e.Healthy {
		row.UnhealthyReason = nilIfEmpty("executor_failed")
	}
	return row
}

func decisionRow(id string, d stats.Decision) schema.DecisionRow {
	return schema.DecisionRow{EpisodeID: id, T: int32(d.T), ActionJSON: "{}", ActionKind: "STOP", LegalActions: []string{"{}"}, PriorLogits: []float32{0},
		Forced: d.Forced, Features: d.Features, PolicyInput: []float32{}, ActionInputs: []float32{},
		StructureKey: d.Key, CoarseKey: d.CoarseKey, NNodes: int32(d.Nodes), NEdges: int32(d.Edges)}
}

// Structure keys in the rollout's canonical form.
func exactKey(hash string, n, e int, stopped bool) string {
	return fmt.Sprintf(`["exact","sha256:%s",%d,%d,%t]`, hash, n, e, stopped)
}

func coarseKey(n, e int, stopped bool) string {
	return fmt.Sprintf(`["coarse","",%d,%d,%t]`, n, e, stopped)
}

// structure is one graph shape: its exact hash and its node and edge counts.
type structure struct {
	hash  string
	nodes int
	edges int
}

// withStates gives e the decision states of the given structures (t = 0, 1, ...) and the
// terminal state term (stopped in 4 of 5 episodes: the budget ends the others), with random
// features.
func withStates(rng *rand.Rand, e stats.Episode, term structure, states ...structure) stats.Episode {
	e.Decisions = nil
	for t, s := range states {
		var f [30]float32
		for i := range f {
			f[i] = rng.Float32()
		}
		e.Decisions = append(e.Decisions, stats.Decision{T: t, Key: exactKey(s.hash, s.nodes, s.edges, false),
			CoarseKey: coarseKey(s.nodes, s.edges, false), Nodes: s.nodes, Edges: s.edges, Forced: t == 0 && isPairedSource(e.Source), Features: f})
	}
	stopped := rng.Float64() < 0.8
	e.TerminalKey, e.TerminalCoarseKey = exactKey(term.hash, term.nodes, term.edges, stopped), coarseKey(term.nodes, term.edges, stopped)
	e.TerminalNodes, e.TerminalEdges, e.TerminalStopped = term.nodes, term.edges, stopped
	return e
}

func isPairedSource(s string) bool { return s == "paired_treatment" || s == "paired_control" }

// genOptions shape one random world.
type genOptions struct {
	steps         int
	emptyPoolStep int // a step without natural_reference episodes (0: none)
}

// genWorld draws a random world from seed: configuration variants, task records with and
// without priors (and episodes of tasks without a record), families without data, rewards 0, 1,
// 1/2 and fractional, single observations, unhealthy episodes, paired arms with unhealthy arms,
// missing arms and repeated (comparison, task) keys within and across steps.
func genWorld(t testing.TB, seed uint64, opt genOptions) *world {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	cfg := defaultConfig(t)
	cfg.AnchorTB.Beta = []float64{2, 0.5, 3, 0.1}[rng.IntN(4)]
	cfg.Buckets.Minimum = []int64{8, 1, 2, 3}[rng.IntN(4)]
	cfg.Buckets.Pseudocount = []float64{8, 1, 0.5}[rng.IntN(3)]
	cfg.Buckets.CorrectionBound = []float64{0.25, 1, 5}[rng.IntN(3)]
	cfg.Buckets.SourceMode = []string{"reference_with_paired", "natural_only"}[rng.IntN(2)]
	cfg.Admission.AllowRepeatedTasks = rng.IntN(3) == 0
	cfg.Admission.SuccessThreshold = []float64{0.5, 0.3, 1}[rng.IntN(3)]
	cfg.Baselines.PriorCountCap = []float64{20, 3}[rng.IntN(2)]
	cfg.Baselines.ColdStart = []float64{0.5, 0.2}[rng.IntN(2)]

	w := &world{cfg: cfg}
	families := []string{"alpha", "beta", "gamma", "delta"}[:2+rng.IntN(3)]
	var taskIDs []string
	for fi, fam := range families {
		for q := 0; q < 1+rng.IntN(4); q++ {
			id := fmt.Sprintf("%s/q%d", fam, q)
			taskIDs = append(taskIDs, id)
			if fi == 0 && q == 0 && rng.IntN(2) == 0 {
				continue // episodes of a task without a task record
			}
			tk := tasks.Task{ID: id, Family: fam, TaskType: "tt-" + fam, Split: "train", SourceID: id, Origin: "synthetic", Prompt: "?"}
			switch rng.IntN(4) {
			case 0: // a prior with a rate, count below or above the cap
				rate := rng.Float64()
				tk.PriorRate, tk.PriorCount = &rate, float64(rng.IntN(40))
			case 1: // a count without a rate: ignored
				tk.PriorCount = float64(1 + rng.IntN(10))
			case 2: // a rate of exactly 0 or 1
				rate := float64(rng.IntN(2))
				tk.PriorRate, tk.PriorCount = &rate, 5
			}
			w.tasks = append(w.tasks, tk)
		}
	}
	// A family with task records but, by construction below, few or no episodes.
	w.tasks = append(w.tasks, tasks.Task{ID: "empty/q0", Family: "empty", TaskType: "tt-empty", Split: "train", SourceID: "e", Origin: "synthetic", Prompt: "?"})

	// A small pool of structures so that buckets collect repeated visits.
	var shapes []structure
	for i := 0; i < 3+rng.IntN(6); i++ {
		n := rng.IntN(4)
		shapes = append(shapes, structure{hash: fmt.Sprintf("%064x", rng.Uint64()), nodes: n, edges: rng.IntN(n + 1)})
	}
	shape := func() structure { return shapes[rng.IntN(len(shapes))] }
	states := func(min int) []structure {
		out := make([]structure, min+rng.IntN(5))
		for i := range out {
			out[i] = shape()
		}
		return out
	}
	reward := func() float64 {
		switch rng.IntN(5) {
		case 0:
			return 0
		case 1:
			return 1
		case 2:
			return 0.5
		default:
			return rng.Float64()
		}
	}
	comparisons := []string{"cmp-1", "cmp-2", "cmp-3"}
	for k := 1; k <= opt.steps; k++ {
		var eps []stats.Episode
		add := func(task, source string, i int, healthy bool, r float64, pair, cmpID, skill string, minStates int) {
			fam := task[:len(task)-3]
			e := stats.Episode{ID: fmt.Sprintf("%d/%s/%s/%d", k, task, source, i), Step: k, TaskID: task, Family: fam,
				TaskType: "tt-" + fam, Source: source, Healthy: healthy, Reward: r, PairID: pair, ComparisonID: cmpID, SkillID: skill}
			eps = append(eps, withStates(rng, e, shape(), states(minStates)...))
		}
		for _, task := range taskIDs {
			if rng.IntN(4) == 0 {
				continue // task not scheduled this step
			}
			for i := 0; i < rng.IntN(3); i++ {
				add(task, "current", i, rng.IntN(8) != 0, reward(), "", "", "", 0)
			}
			if k != opt.emptyPoolStep {
				for i := 0; i < rng.IntN(4); i++ { // 0, 1 (single observation), 2 or 3
					add(task, "natural_reference", i, rng.IntN(8) != 0, reward(), "", "", "", 0)
				}
			}
			for i := 0; i < rng.IntN(3); i++ {
				cmpID := comparisons[rng.IntN(len(comparisons))]
				pair := fmt.Sprintf("%d/%s/%s/%d", k, task, cmpID, i)
				skill := "evosteer-" + cmpID
				arms := rng.IntN(6)
				if arms != 0 {
					add(task, "paired_treatment", i, rng.IntN(6) != 0, reward(), pair, cmpID, skill, 1)
				}
				if arms != 1 {
					add(task, "paired_control", i, rng.IntN(6) != 0, reward(), pair, cmpID, "", 1)
				}
			}
		}
		// A family that never has a natural_reference episode (no category data, no task record).
		add("ghost/q0", "current", 0, true, reward(), "", "", "", 0)
		rng.Shuffle(len(eps), func(i, j int) { eps[i], eps[j] = eps[j], eps[i] })
		w.steps = append(w.steps, eps)
	}
	return w
}

// oracleChain computes the oracle's tables of every step from the generated truth alone: each
// step's previous buckets and earlier pairs are the oracle's own earlier outputs.
func oracleChain(t testing.TB, w *world) []*Tables {
	t.Helper()
	var out []*Tables
	var prev []stats.Bucket
	var pairs [][]stats.Pair
	for k := range w.steps {
		tb, err := Expected(w.cfg, &OracleInputs{Steps: w.steps[:k+1], Priors: w.priors(), PrevBuckets: prev, Pairs: pairs})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tb)
		prev = tb.Buckets
		pairs = append(pairs, tb.Pairs)
	}
	return out
}

// runAggregate runs the aggregate stage of step k and returns its outputs.
func runAggregate(t testing.TB, r *rundir.Folder, k int) *Tables {
	t.Helper()
	if _, err := r.RunStage(context.Background(), k, Stage{}, false); err != nil {
		t.Fatal(err)
	}
	got, err := ReadOutputs(r.StageDir(k, layout.Aggregate))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func failOnMismatch(t testing.TB, what string, checks []TableCheck) {
	t.Helper()
	for _, c := range checks {
		if c.Mismatch != "" {
			t.Errorf("%s: %s: %s", what, c.Table, c.Mismatch)
		}
	}
}

// TestStateOverManySteps runs the stage at every step of a 120-step synthetic run (24 under
// -short: a step costs a DuckDB session however small it is) and checks at every step that the
// two running states equal, bit for bit and row for row, the oracle's recomputation from the
// whole history — both Check's (from the run's files) and the oracle chained on the generated
// truth — and that the five outputs pass Check. The rewards are partly fractional, so a sum's
// last bit depends on the order it is taken in: this shows that the SQL's order is the one the
// oracle defines, over a long history.
func TestStateOverManySteps(t *testing.T) {
	steps := 120
	if testing.Short() {
		steps = 24
	}
	w := genWorld(t, 43, genOptions{steps: steps, emptyPoolStep: 2})
	r := newRun(t, w)
	want := oracleChain(t, w)
	fractional, used := 0, 0
	for k := 1; k <= steps; k++ {
		writeStep(t, r, k, w.steps[k-1], 1+k%2)
		got := runAggregate(t, r, k)
		what := "step " + strconv.Itoa(k)
		checks, err := Check(r, k)
		if err != nil {
			t.Fatalf("%s: check: %v", what, err)
		}
		failOnMismatch(t, what+" (Check)", checks)
		for _, c := range checks[5:] {
			if !c.Exact {
				t.Fatalf("%s: %s compared within a tolerance", what, c.Table)
			}
		}
		failOnMismatch(t, what+" (oracle chain)", Compare(got, want[k-1])[5:])
		if t.Failed() {
			t.FailNow()
		}
		for _, p := range got.AnchorPool {
			if p.RewardSum != math.Trunc(p.RewardSum) {
				fractional++
			}
		}
		used = len(got.PairsUsed)
	}
	if fractional == 0 || used == 0 {
		t.Errorf("the run exercised %d fractional reward sums and %d used pair keys", fractional, used)
	}
}

// A step's aggregate reads its own rollout (every shard), the previous step's three states and
// the training tasks — the same few files at every step, nothing of the steps before k − 1 —
// as the runner records them in the manifest.
func TestInputsAreTheStepAndTheStepBefore(t *testing.T) {
	w := genWorld(t, 44, genOptions{steps: 4})
	r := newRun(t, w)
	for k := 1; k <= 4; k++ {
		shards := 1 + k%3
		writeStep(t, r, k, w.steps[k-1], shards)
		res, err := r.RunStage(context.Background(), k, Stage{}, false)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{layout.TasksFile("train")}
		for s := 1; s <= shards; s++ {
			for _, table := range []string{layout.Episodes, layout.Decisions} {
				want = append(want, path.Join(layout.StepDir(k), layout.Rollout, layout.ShardFile(table, s, shards)))
			}
		}
		if k > 1 {
			for _, f := range []string{layout.BucketsFile, layout.AnchorPoolFile, layout.PairsUsedFile} {
				want = append(want, path.Join(layout.StepDir(k-1), layout.Aggregate, f))
			}
		}
		if got := slices.Sorted(maps.Keys(res.Record.Inputs)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
			t.Errorf("step %d reads\n  %v\nwant\n  %v", k, got, slices.Sorted(slices.Values(want)))
		}
	}
}
