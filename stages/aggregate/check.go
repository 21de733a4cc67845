package aggregate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/stats"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// Tolerance is the largest difference Check accepts between a float written by the SQL and the
// oracle's: 1e-12 absolute, or relative for magnitudes above 1 (bucket excess sums).
const Tolerance = 1e-12

// Tables holds the seven outputs of one step in the oracle's types.
type Tables struct {
	Anchors     []stats.Anchor
	Buckets     []stats.Bucket
	Corrections []stats.Correction
	ValueData   []stats.ValueRow
	Pairs       []stats.Pair
	AnchorPool  []stats.PoolTask
	PairsUsed   []stats.UsedPair
}

// OracleInputs are what the oracle recomputes a step from: the full history, not the running
// state the stage reads (but for the buckets, which carry the previous step's as the stage does).
type OracleInputs struct {
	Steps       [][]stats.Episode // Steps[j−1]: the episodes of step j = 1..k in file order; step k's with their decisions in t order
	Priors      map[string]stats.TaskPrior
	PrevBuckets []stats.Bucket // the cumulative buckets after step k−1
	Pairs       [][]stats.Pair // Pairs[j−1]: the pairs step j = 1..k−1 wrote
}

// TableCheck is the outcome of comparing one output table with the oracle.
type TableCheck struct {
	Table    string
	Rows     int    // rows written
	Exact    bool   // compared bit for bit and row for row in order, not within Tolerance
	Mismatch string // "" when the table agrees
}

// Check recomputes step's seven outputs with the plain-Go oracle (internal/stats) from the
// full history (every step's episodes, every earlier step's pairs; ReadOracleInputs) and
// compares them with the files the stage wrote: the five tables within Tolerance, the two
// running states exactly.
func Check(r *rundir.Folder, step int) ([]TableCheck, error) {
	in, err := FindInputs(r, step)
	if err != nil {
		return nil, err
	}
	oi, err := ReadOracleInputs(r, in)
	if err != nil {
		return nil, err
	}
	got, err := ReadOutputs(r.StageDir(step, layout.Aggregate))
	if err != nil {
		return nil, err
	}
	want, err := Expected(r.Config, oi)
	if err != nil {
		return nil, err
	}
	return Compare(got, want), nil
}

// Expected computes the seven tables with the oracle: the anchors from every episode of steps
// 1..k, and the two states by adding step after step to nothing, as the stage does one step at a
// time.
func Expected(cfg *config.Config, oi *OracleInputs) (*Tables, error) {
	ap := stats.AnchorParams{Beta: cfg.AnchorTB.Beta, KappaGlobal: cfg.Baselines.KappaGlobal,
		KappaCategory: cfg.Baselines.KappaCategory, KappaTask: cfg.Baselines.KappaTask,
		PriorCountCap: cfg.Baselines.PriorCountCap, ColdStart: cfg.Baselines.ColdStart}
	bp := stats.BucketParams{Beta: cfg.AnchorTB.Beta, Minimum: cfg.Buckets.Minimum, Pseudocount: cfg.Buckets.Pseudocount,
		CorrectionBound: cfg.Buckets.CorrectionBound, SourceMode: cfg.Buckets.SourceMode,
		CorrectionsOff: cfg.Ablated("flow-corrections")}
	k := len(oi.Steps)
	if k == 0 || len(oi.Pairs) != k-1 {
		return nil, fmt.Errorf("oracle inputs: the episodes of %d steps and the pairs of %d: want the pairs of every step before the last", k, len(oi.Pairs))
	}
	var pool []stats.Episode
	t := &Tables{}
	for j, eps := range oi.Steps {
		pool = append(pool, eps...)
		var err error
		if t.AnchorPool, err = stats.AnchorPool(t.AnchorPool, eps); err != nil {
			return nil, fmt.Errorf("anchor pool of step %d: %w", j+1, err)
		}
	}
	scored := oi.Steps[k-1]
	t.Anchors = stats.Anchors(ap, pool, scored, oi.Priors)
	anchors := make(map[string]float64, len(t.Anchors))
	for _, a := range t.Anchors {
		anchors[a.EpisodeID] = a.Anchor
	}
	t.Buckets = stats.Buckets(bp, oi.PrevBuckets, scored, anchors)
	t.Corrections = stats.Corrections(bp, oi.PrevBuckets, scored)
	t.ValueData = stats.ValueData(scored)
	var used []stats.UsedPair
	for j, ps := range oi.Pairs {
		used = stats.PairsUsed(used, ps, j+1)
	}
	t.Pairs = stats.Pairs(scored, cfg.Admission.SuccessThreshold, stats.UsedKeys(used), cfg.Admission.AllowRepeatedTasks)
	t.PairsUsed = stats.PairsUsed(used, t.Pairs, k)
	return t, nil
}

// ReadOracleInputs reads the oracle's inputs of step in.Step (schema.Rows): the stage's inputs
// in, and the history the stage no longer reads, the episodes (every shard) and pairs of every
// earlier step.
func ReadOracleInputs(r *rundir.Folder, in *Inputs) (*OracleInputs, error) {
	oi := &OracleInputs{Steps: make([][]stats.Episode, in.Step), Pairs: make([][]stats.Pair, in.Step-1),
		Priors: map[string]stats.TaskPrior{}}
	for j := 1; j < in.Step; j++ {
		files, err := r.ShardedInputs(j, layout.Rollout, layout.Episodes)
		if err != nil {
			return nil, err
		}
		if oi.Steps[j-1], err = readEpisodes(sources(files[0], j)); err != nil {
			return nil, err
		}
		rows, err := schema.ReadFile[schema.PairRow](schema.Pairs, filepath.Join(r.StageDir(j, layout.Aggregate), layout.PairsFile))
		if err != nil {
			return nil, err
		}
		for _, p := range rows {
			oi.Pairs[j-1] = append(oi.Pairs[j-1], oraclePair(p))
		}
	}
	scored, err := readEpisodes(in.episodes)
	if err != nil {
		return nil, err
	}
	index := make(map[string]int, len(scored)) // episode id → index in scored
	for i, e := range scored {
		index[e.ID] = i
	}
	for _, s := range in.decisions {
		rows, err := schema.ReadFile[schema.DecisionRow](schema.Decisions, s.path)
		if err != nil {
			return nil, err
		}
		for _, d := range rows {
			i, ok := index[d.EpisodeID]
			if !ok {
				return nil, fmt.Errorf("%s: decision %d of episode %q, which no episodes file of step %d holds", s.path, d.T, d.EpisodeID, in.Step)
			}
			scored[i].Decisions = append(scored[i].Decisions, stats.Decision{T: int(d.T), Key: d.StructureKey,
				CoarseKey: d.CoarseKey, Nodes: int(d.NNodes), Edges: int(d.NEdges), Forced: d.Forced, Features: d.Features})
		}
	}
	for i := range scored {
		slices.SortFunc(scored[i].Decisions, func(a, b stats.Decision) int { return cmp.Compare(a.T, b.T) })
	}
	oi.Steps[in.Step-1] = scored
	ts, err := tasks.ReadFile(in.tasks)
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		oi.Priors[t.ID] = stats.TaskPrior{Rate: t.PriorRate, Count: t.PriorCount}
	}
	for _, s := range in.prevBuckets {
		rows, err := schema.ReadFile[schema.BucketRow](schema.Buckets, s.path)
		if err != nil {
			return nil, err
		}
		for _, b := range rows {
			oi.PrevBuckets = append(oi.PrevBuckets, oracleBucket(b))
		}
	}
	return oi, nil
}

// readEpisodes reads the episodes files of one step, in order.
func readEpisodes(files []source) ([]stats.Episode, error) {
	var out []stats.Episode
	for _, s := range files {
		rows, err := schema.ReadFile[schema.EpisodeRow](schema.Episodes, s.path)
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			e, err := oracleEpisode(row, s.step)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.path, err)
			}
			out = append(out, e)
		}
	}
	return out, nil
}

func oracleEpisode(row schema.EpisodeRow, step int) (stats.Episode, error) {
	nodes, edges, stopped, err := ParseCoarseKey(row.TerminalCoarseKey)
	if err != nil {
		return stats.Episode{}, fmt.Errorf("episode %s: terminal_coarse_key: %w", row.EpisodeID, err)
	}
	return stats.Episode{ID: row.EpisodeID, Step: step, TaskID: row.TaskID, Family: row.Family, TaskType: row.TaskType,
		Source: row.Source, Healthy: row.Healthy, Reward: row.Reward,
		PairID: deref(row.PairID), ComparisonID: deref(row.ComparisonID), SkillID: deref(row.CandidateSkillID),
		TerminalKey: row.TerminalStructureKey, TerminalCoarseKey: row.TerminalCoarseKey,
		TerminalNodes: nodes, TerminalEdges: edges, TerminalStopped: stopped}, nil
}

// ParseCoarseKey reads N, E and stopped from a coarse structure key ["coarse","",N,E,stopped].
func ParseCoarseKey(key string) (nodes, edges int, stopped bool, err error) {
	var v []any
	if err := json.Unmarshal([]byte(key), &v); err != nil {
		return 0, 0, false, err
	}
	if len(v) != 5 {
		return 0, 0, false, fmt.Errorf("%q: want 5 elements", key)
	}
	n, ok1 := v[2].(float64)
	e, ok2 := v[3].(float64)
	s, ok3 := v[4].(bool)
	if !ok1 || !ok2 || !ok3 {
		return 0, 0, false, fmt.Errorf("%q: want [kind, key, N, E, stopped]", key)
	}
	return int(n), int(e), s, nil
}

func oracleBucket(b schema.BucketRow) stats.Bucket {
	return stats.Bucket{Kind: b.Kind, Key: b.Key, Nodes: int(b.NNodes), Edges: int(b.NEdges), Stopped: b.Stopped,
		Visits: b.Visits, ExcessSum: b.ExcessSum, LogPooledRatio: b.LogPooledRatio, Correction: b.Correction}
}

func oraclePair(p schema.PairRow) stats.Pair {
	return stats.Pair{PairID: p.PairID, ComparisonID: p.ComparisonID, SkillID: p.SkillID, TaskID: p.TaskID,
		Family: p.Family, BPlus: p.BPlus, BMinus: p.BMinus, Outcome: p.Outcome, Eligible: p.Eligible, SkipReason: deref(p.SkipReason)}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ReadOutputs reads the seven files of an aggregate folder into the oracle's types.
func ReadOutputs(dir string) (*Tables, error) {
	t := &Tables{}
	anchors, err := schema.ReadFile[schema.AnchorRow](schema.Anchors, filepath.Join(dir, layout.AnchorsFile))
	if err != nil {
		return nil, err
	}
	for _, a := range anchors {
		t.Anchors = append(t.Anchors, stats.Anchor{EpisodeID: a.EpisodeID, TaskID: a.TaskID, Family: a.Family,
			MGlobal: a.MGlobal, MCategory: a.MCategory, MPrior: a.MPrior, PHat: a.PHat, LOO: a.LOO, Anchor: a.Anchor})
	}
	buckets, err := schema.ReadFile[schema.BucketRow](schema.Buckets, filepath.Join(dir, layout.BucketsFile))
	if err != nil {
		return nil, err
	}
	for _, b := range buckets {
		t.Buckets = append(t.Buckets, oracleBucket(b))
	}
	corrections, err := schema.ReadFile[schema.CorrectionRow](schema.Corrections, filepath.Join(dir, layout.CorrectionsFile))
	if err != nil {
		return nil, err
	}
	for _, c := range corrections {
		t.Corrections = append(t.Corrections, stats.Correction{EpisodeID: c.EpisodeID, T: int(c.T), Kind: c.Kind,
			LogPooledRatio: c.LogPooledRatio, Correction: c.Correction})
	}
	values, err := schema.ReadFile[schema.ValueRow](schema.ValueData, filepath.Join(dir, layout.ValueDataFile))
	if err != nil {
		return nil, err
	}
	for _, v := range values {
		t.ValueData = append(t.ValueData, stats.ValueRow{EpisodeID: v.EpisodeID, T: int(v.T), Features: v.Features, TaskType: v.TaskType, Label: v.Label})
	}
	pairs, err := schema.ReadFile[schema.PairRow](schema.Pairs, filepath.Join(dir, layout.PairsFile))
	if err != nil {
		return nil, err
	}
	for _, p := range pairs {
		t.Pairs = append(t.Pairs, oraclePair(p))
	}
	pool, err := schema.ReadFile[schema.AnchorPoolRow](schema.AnchorPool, filepath.Join(dir, layout.AnchorPoolFile))
	if err != nil {
		return nil, err
	}
	for _, p := range pool {
		t.AnchorPool = append(t.AnchorPool, stats.PoolTask{TaskID: p.TaskID, Family: p.Family, RewardSum: p.RewardSum, Episodes: p.Episodes})
	}
	used, err := schema.ReadFile[schema.PairsUsedRow](schema.PairsUsed, filepath.Join(dir, layout.PairsUsedFile))
	if err != nil {
		return nil, err
	}
	for _, u := range used {
		t.PairsUsed = append(t.PairsUsed, stats.UsedPair{ComparisonID: u.ComparisonID, TaskID: u.TaskID, FirstStep: int(u.FirstStep)})
	}
	return t, nil
}

// Compare compares the written tables (got) with the oracle's (want) and reports per table the
// first mismatch: the five tables row by row after sorting both by each table's key, floats
// within Tolerance; the two running states row by row in their written order, floats bit for
// bit (the oracle follows their definition exactly).
func Compare(got, want *Tables) []TableCheck {
	return []TableCheck{
		compareRows("anchors", got.Anchors, want.Anchors, false, func(a stats.Anchor) string { return a.EpisodeID }),
		compareRows("buckets", got.Buckets, want.Buckets, false, func(b stats.Bucket) string { return b.Kind + " " + b.Key }),
		compareRows("corrections", got.Corrections, want.Corrections, false, func(c stats.Correction) string {
			return fmt.Sprintf("%s t=%06d", c.EpisodeID, c.T)
		}),
		compareRows("value_data", got.ValueData, want.ValueData, false, func(v stats.ValueRow) string {
			return fmt.Sprintf("%s t=%06d", v.EpisodeID, v.T)
		}),
		compareRows("pairs", got.Pairs, want.Pairs, false, func(p stats.Pair) string { return p.PairID }),
		compareRows("anchor_pool", got.AnchorPool, want.AnchorPool, true, func(p stats.PoolTask) string { return p.TaskID }),
		compareRows("pairs_used", got.PairsUsed, want.PairsUsed, true, func(u stats.UsedPair) string {
			return u.ComparisonID + " " + u.TaskID
		}),
	}
}

func compareRows[T any](table string, got, want []T, exact bool, key func(T) string) TableCheck {
	tc := TableCheck{Table: table, Rows: len(got), Exact: exact}
	if !exact {
		got, want = slices.Clone(got), slices.Clone(want)
		byKey := func(a, b T) int { return strings.Compare(key(a), key(b)) }
		slices.SortStableFunc(got, byKey)
		slices.SortStableFunc(want, byKey)
	}
	for i := 0; i < max(len(got), len(want)); i++ {
		switch {
		case i >= len(got):
			tc.Mismatch = fmt.Sprintf("row %q missing (%d rows written, oracle has %d)", key(want[i]), len(got), len(want))
		case i >= len(want):
			tc.Mismatch = fmt.Sprintf("extra row %q (%d rows written, oracle has %d)", key(got[i]), len(got), len(want))
		case exact && key(got[i]) != key(want[i]):
			tc.Mismatch = fmt.Sprintf("row %d is %q, oracle %q (%d rows written, oracle has %d)", i, key(got[i]), key(want[i]), len(got), len(want))
		case key(got[i]) < key(want[i]):
			tc.Mismatch = fmt.Sprintf("extra row %q (%d rows written, oracle has %d)", key(got[i]), len(got), len(want))
		case key(got[i]) > key(want[i]):
			tc.Mismatch = fmt.Sprintf("row %q missing (%d rows written, oracle has %d)", key(want[i]), len(got), len(want))
		default:
			if d := diffFields(reflect.ValueOf(got[i]), reflect.ValueOf(want[i]), exact); d != "" {
				tc.Mismatch = fmt.Sprintf("row %q: %s", key(got[i]), d)
			}
		}
		if tc.Mismatch != "" {
			return tc
		}
	}
	return tc
}

// diffFields names the first field of two structs that differ: floats beyond Tolerance (exact:
// in any bit), anything else when not equal.
func diffFields(g, w reflect.Value, exact bool) string {
	for i := range g.NumField() {
		name := g.Type().Field(i).Name
		gf, wf := g.Field(i), w.Field(i)
		if gf.Kind() == reflect.Float64 {
			a, b := gf.Float(), wf.Float()
			if exact && math.Float64bits(a) != math.Float64bits(b) || !exact && !Agree(a, b) {
				return fmt.Sprintf("%s = %.17g, oracle %.17g (difference %.3g)", name, a, b, a-b)
			}
			continue
		}
		if !gf.Equal(wf) {
			return fmt.Sprintf("%s = %v, oracle %v", name, gf.Interface(), wf.Interface())
		}
	}
	return ""
}

// Agree reports whether two floats agree within Tolerance (NaN agrees only with NaN).
func Agree(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= Tolerance*max(1, math.Abs(a), math.Abs(b))
}
