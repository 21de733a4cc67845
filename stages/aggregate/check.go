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

// Tables holds the five outputs of one step in the oracle's types.
type Tables struct {
	Anchors     []stats.Anchor
	Buckets     []stats.Bucket
	Corrections []stats.Correction
	ValueData   []stats.ValueRow
	Pairs       []stats.Pair
}

// OracleInputs are a step's inputs in the oracle's types.
type OracleInputs struct {
	Pool        []stats.Episode // every episode of steps 1..k (the statistics pool is filtered by the oracle)
	Scored      []stats.Episode // the episodes of step k, with their decisions in t order
	Priors      map[string]stats.TaskPrior
	PrevBuckets []stats.Bucket     // the cumulative buckets after step k−1
	Used        map[[2]string]bool // (comparison_id, task_id) of the eligible pairs of earlier steps
}

// TableCheck is the outcome of comparing one output table with the oracle.
type TableCheck struct {
	Table    string
	Rows     int    // rows written
	Mismatch string // "" when the table agrees
}

// Check recomputes step's five outputs with the plain-Go oracle (internal/stats) from the same
// input files and compares them with the files the stage wrote.
func Check(r *rundir.Folder, step int) ([]TableCheck, error) {
	in, err := FindInputs(r, step)
	if err != nil {
		return nil, err
	}
	oi, err := ReadOracleInputs(in)
	if err != nil {
		return nil, err
	}
	got, err := ReadOutputs(r.StageDir(step, layout.Aggregate))
	if err != nil {
		return nil, err
	}
	return Compare(got, Expected(r.Config, oi)), nil
}

// Expected computes the five tables with the oracle.
func Expected(cfg *config.Config, oi *OracleInputs) *Tables {
	ap := stats.AnchorParams{Beta: cfg.AnchorTB.Beta, KappaGlobal: cfg.Baselines.KappaGlobal,
		KappaCategory: cfg.Baselines.KappaCategory, KappaTask: cfg.Baselines.KappaTask,
		PriorCountCap: cfg.Baselines.PriorCountCap, ColdStart: cfg.Baselines.ColdStart}
	bp := stats.BucketParams{Beta: cfg.AnchorTB.Beta, Minimum: cfg.Buckets.Minimum, Pseudocount: cfg.Buckets.Pseudocount,
		CorrectionBound: cfg.Buckets.CorrectionBound, SourceMode: cfg.Buckets.SourceMode,
		CorrectionsOff: cfg.Ablated("flow-corrections")}
	t := &Tables{Anchors: stats.Anchors(ap, oi.Pool, oi.Scored, oi.Priors)}
	anchors := make(map[string]float64, len(t.Anchors))
	for _, a := range t.Anchors {
		anchors[a.EpisodeID] = a.Anchor
	}
	t.Buckets = stats.Buckets(bp, oi.PrevBuckets, oi.Scored, anchors)
	t.Corrections = stats.Corrections(bp, oi.PrevBuckets, oi.Scored)
	t.ValueData = stats.ValueData(oi.Scored)
	t.Pairs = stats.Pairs(oi.Scored, cfg.Admission.SuccessThreshold, oi.Used, cfg.Admission.AllowRepeatedTasks)
	return t
}

// ReadOracleInputs reads a step's input files (schema.Rows) into the oracle's types.
func ReadOracleInputs(in *Inputs) (*OracleInputs, error) {
	oi := &OracleInputs{Priors: map[string]stats.TaskPrior{}, Used: map[[2]string]bool{}}
	scored := map[string]int{} // episode id → index in oi.Scored
	for _, s := range in.episodes {
		rows, err := schema.ReadFile[schema.EpisodeRow](schema.Episodes, s.path)
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			e, err := oracleEpisode(row, s.step)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.path, err)
			}
			oi.Pool = append(oi.Pool, e)
			if s.step == in.Step {
				scored[e.ID] = len(oi.Scored)
				oi.Scored = append(oi.Scored, e)
			}
		}
	}
	for _, s := range in.decisions {
		rows, err := schema.ReadFile[schema.DecisionRow](schema.Decisions, s.path)
		if err != nil {
			return nil, err
		}
		for _, d := range rows {
			i, ok := scored[d.EpisodeID]
			if !ok {
				return nil, fmt.Errorf("%s: decision %d of episode %q, which no episodes file of step %d holds", s.path, d.T, d.EpisodeID, in.Step)
			}
			oi.Scored[i].Decisions = append(oi.Scored[i].Decisions, stats.Decision{T: int(d.T), Key: d.StructureKey,
				CoarseKey: d.CoarseKey, Nodes: int(d.NNodes), Edges: int(d.NEdges), Forced: d.Forced, Features: d.Features})
		}
	}
	for i := range oi.Scored {
		slices.SortFunc(oi.Scored[i].Decisions, func(a, b stats.Decision) int { return cmp.Compare(a.T, b.T) })
	}
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
	for _, s := range in.pairs {
		rows, err := schema.ReadFile[schema.PairRow](schema.Pairs, s.path)
		if err != nil {
			return nil, err
		}
		for _, p := range rows {
			if p.Eligible {
				oi.Used[[2]string{p.ComparisonID, p.TaskID}] = true
			}
		}
	}
	return oi, nil
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

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ReadOutputs reads the five files of an aggregate folder into the oracle's types.
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
		t.Pairs = append(t.Pairs, stats.Pair{PairID: p.PairID, ComparisonID: p.ComparisonID, SkillID: p.SkillID, TaskID: p.TaskID,
			Family: p.Family, BPlus: p.BPlus, BMinus: p.BMinus, Outcome: p.Outcome, Eligible: p.Eligible, SkipReason: deref(p.SkipReason)})
	}
	return t, nil
}

// Compare compares the written tables (got) with the oracle's (want), row by row after sorting
// both by each table's key, and reports per table the first mismatch.
func Compare(got, want *Tables) []TableCheck {
	return []TableCheck{
		compareRows("anchors", got.Anchors, want.Anchors, func(a stats.Anchor) string { return a.EpisodeID }),
		compareRows("buckets", got.Buckets, want.Buckets, func(b stats.Bucket) string { return b.Kind + " " + b.Key }),
		compareRows("corrections", got.Corrections, want.Corrections, func(c stats.Correction) string {
			return fmt.Sprintf("%s t=%06d", c.EpisodeID, c.T)
		}),
		compareRows("value_data", got.ValueData, want.ValueData, func(v stats.ValueRow) string {
			return fmt.Sprintf("%s t=%06d", v.EpisodeID, v.T)
		}),
		compareRows("pairs", got.Pairs, want.Pairs, func(p stats.Pair) string { return p.PairID }),
	}
}

func compareRows[T any](table string, got, want []T, key func(T) string) TableCheck {
	tc := TableCheck{Table: table, Rows: len(got)}
	got, want = slices.Clone(got), slices.Clone(want)
	byKey := func(a, b T) int { return strings.Compare(key(a), key(b)) }
	slices.SortStableFunc(got, byKey)
	slices.SortStableFunc(want, byKey)
	for i := 0; i < max(len(got), len(want)); i++ {
		switch {
		case i >= len(got):
			tc.Mismatch = fmt.Sprintf("row %q missing (%d rows written, oracle has %d)", key(want[i]), len(got), len(want))
		case i >= len(want):
			tc.Mismatch = fmt.Sprintf("extra row %q (%d rows written, oracle has %d)", key(got[i]), len(got), len(want))
		case key(got[i]) < key(want[i]):
			tc.Mismatch = fmt.Sprintf("extra row %q (%d rows written, oracle has %d)", key(got[i]), len(got), len(want))
		case key(got[i]) > key(want[i]):
			tc.Mismatch = fmt.Sprintf("row %q missing (%d rows written, oracle has %d)", key(want[i]), len(got), len(want))
		default:
			if d := diffFields(reflect.ValueOf(got[i]), reflect.ValueOf(want[i])); d != "" {
				tc.Mismatch = fmt.Sprintf("row %q: %s", key(got[i]), d)
			}
		}
		if tc.Mismatch != "" {
			return tc
		}
	}
	return tc
}

// diffFields names the first field of two structs that differ: floats beyond Tolerance,
// anything else when not equal.
func diffFields(g, w reflect.Value) string {
	for i := range g.NumField() {
		name := g.Type().Field(i).Name
		gf, wf := g.Field(i), w.Field(i)
		if gf.Kind() == reflect.Float64 {
			if !Agree(gf.Float(), wf.Float()) {
				return fmt.Sprintf("%s = %.17g, oracle %.17g (difference %.3g)", name, gf.Float(), wf.Float(), gf.Float()-wf.Float())
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
