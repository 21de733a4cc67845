package aggregate

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/duck"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/schema"
)

// Outputs lists the seven output tables with their file names, in the order they are written:
// the five tables later stages read, and two running states that the next step's aggregate
// reads instead of the whole history (the anchor pool and the pairs' used keys).
var Outputs = []struct {
	Table *schema.Table
	File  string
	SQL   string // the sql/ file that computes it
}{
	{schema.AnchorPool, layout.AnchorPoolFile, "anchor_pool"},
	{schema.Anchors, layout.AnchorsFile, "baselines"},
	{schema.Buckets, layout.BucketsFile, "buckets"},
	{schema.Corrections, layout.CorrectionsFile, "corrections"},
	{schema.ValueData, layout.ValueDataFile, "value_data"},
	{schema.Pairs, layout.PairsFile, "pairs"},
	{schema.PairsUsed, layout.PairsUsedFile, "pairs_used"},
}

// reread are the columns of the outputs that a later SQL file of the same step reads, loaded
// back from the written file into the table of their name: the step's anchor pool
// (baselines.sql), its anchors (buckets.sql) and its pairs (pairs_used.sql).
var reread = map[*schema.Table][]string{
	schema.AnchorPool: poolColumns,
	schema.Anchors:    anchorColumns,
	schema.Pairs:      pairColumns,
}

// Inputs are the files one step's aggregate reads: the step's rollout, the state step − 1's
// aggregate left (none at step 1) and the training tasks. Nothing of an earlier step.
type Inputs struct {
	Step        int
	episodes    []source // every shard of Step
	decisions   []source // every shard of Step
	prevBuckets []source // step Step−1's buckets.arrow (none at step 1)
	prevPool    []source // step Step−1's anchor_pool.arrow (none at step 1)
	prevUsed    []source // step Step−1's pairs_used.arrow (none at step 1)
	tasks       string   // tasks/train.arrow
}

// FindInputs lists the input files of step's aggregate as they are on disk now. A file that
// does not exist is listed all the same (Paths); the stage runner names it with the command
// that writes it. The error says that a step's rollout shards do not fit together.
func FindInputs(r *rundir.Folder, step int) (*Inputs, error) {
	in := &Inputs{Step: step, tasks: r.TasksPath("train")}
	files, err := r.ShardedInputs(step, layout.Rollout, layout.Episodes, layout.Decisions)
	if err != nil {
		return nil, err
	}
	in.episodes, in.decisions = sources(files[0], step), sources(files[1], step)
	if step > 1 {
		agg := r.StageDir(step-1, layout.Aggregate)
		in.prevBuckets = sources([]string{filepath.Join(agg, layout.BucketsFile)}, step-1)
		in.prevPool = sources([]string{filepath.Join(agg, layout.AnchorPoolFile)}, step-1)
		in.prevUsed = sources([]string{filepath.Join(agg, layout.PairsUsedFile)}, step-1)
	}
	return in, nil
}

// sources are files of one step.
func sources(paths []string, step int) []source {
	out := make([]source, len(paths))
	for i, p := range paths {
		out[i] = source{p, step}
	}
	return out
}

// Paths lists every input file.
func (in *Inputs) Paths() []string {
	var out []string
	for _, group := range [][]source{in.episodes, in.decisions, in.prevBuckets, in.prevPool, in.prevUsed} {
		for _, s := range group {
			out = append(out, s.path)
		}
	}
	return append(out, in.tasks)
}

// Stage is the aggregate stage.
type Stage struct{}

// Name is the stage's folder.
func (Stage) Name() string { return layout.Aggregate }

// Inputs are the step's episodes and decisions (every shard), the previous step's buckets,
// anchor pool and used pair keys, and the training tasks (FindInputs).
func (Stage) Inputs(r *rundir.Folder, step int) (rundir.Resolved, error) {
	return FindInputs(r, step)
}

// Outputs are the seven tables (Outputs).
func (Stage) Outputs(*rundir.Folder, int) []string {
	out := make([]string, len(Outputs))
	for i, o := range Outputs {
		out[i] = o.File
	}
	return out
}

// Run loads the inputs into DuckDB, runs the seven SQL files and writes their results into
// sc.OutDir.
func (Stage) Run(ctx context.Context, sc *rundir.StageContext) error {
	in := sc.Resolved.(*Inputs)
	db, err := duck.Open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := loadInputs(ctx, db, in); err != nil {
		return err
	}
	p := Params(sc.Folder.Config, in.Step)
	for _, out := range Outputs {
		path := filepath.Join(sc.OutDir, out.File)
		if err := runSQL(ctx, db, out.SQL, p[out.SQL], out.Table, path, sc.Lineage()); err != nil {
			return err
		}
		if cols, ok := reread[out.Table]; ok {
			if err := appendTable(ctx, db, out.Table.Name, out.Table, cols, []source{{path, in.Step}}); err != nil {
				return fmt.Errorf("load %s back: %w", out.File, err)
			}
		}
	}
	return nil
}

// loadInputs loads the tables the SQL files read.
func loadInputs(ctx context.Context, db *duck.DB, in *Inputs) error {
	tasks := []source{{in.tasks, 0}}
	for _, l := range []struct {
		table *schema.Table
		cols  []string
		srcs  []source
	}{
		{schema.Episodes, episodeColumns, in.episodes},
		{schema.Decisions, decisionColumns, in.decisions},
		{schema.Tasks, taskColumns, tasks},
		{schema.Buckets, bucketColumns, in.prevBuckets},
		{schema.AnchorPool, poolColumns, in.prevPool},
		{schema.PairsUsed, usedColumns, in.prevUsed},
	} {
		if _, err := loadTable(ctx, db, l.table.Name, l.table, l.cols, l.srcs); err != nil {
			return fmt.Errorf("load %s: %w", l.table.Name, err)
		}
	}
	return nil
}

// runSQL runs one SQL file and writes its result as table t at path.
func runSQL(ctx context.Context, db *duck.DB, file string, params map[string]any, t *schema.Table, path string, lin schema.Lineage) error {
	rr, err := db.RunFile(ctx, file, params)
	if err != nil {
		return err
	}
	defer rr.Release()
	if err := t.Write(path, lin, rr); err != nil {
		return fmt.Errorf("sql file %s.sql: %w", file, err)
	}
	return nil
}

// Params are the parameters of each SQL file, from the run configuration.
func Params(cfg *config.Config, step int) map[string]map[string]any {
	s := int64(step)
	return map[string]map[string]any{
		"baselines": {
			"step": s, "beta": cfg.AnchorTB.Beta,
			"kappa_global": cfg.Baselines.KappaGlobal, "kappa_category": cfg.Baselines.KappaCategory,
			"kappa_task": cfg.Baselines.KappaTask, "prior_count_cap": cfg.Baselines.PriorCountCap,
			"cold_start": cfg.Baselines.ColdStart,
		},
		"buckets": {
			"step": s, "beta": cfg.AnchorTB.Beta, "pseudocount": cfg.Buckets.Pseudocount,
			"correction_bound": cfg.Buckets.CorrectionBound, "source_mode": cfg.Buckets.SourceMode,
		},
		"corrections": {"step": s, "minimum": cfg.Buckets.Minimum, "enabled": !cfg.Ablated("flow-corrections")},
		"value_data":  {"step": s},
		"pairs": {
			"step": s, "success_threshold": cfg.Admission.SuccessThreshold,
			"allow_repeated_tasks": cfg.Admission.AllowRepeatedTasks,
		},
		"anchor_pool": {"step": s},
		"pairs_used":  {"step": s},
	}
}
