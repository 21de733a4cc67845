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

// Outputs lists the five output tables with their file names, in the order they are written.
var Outputs = []struct {
	Table *schema.Table
	File  string
	SQL   string // the sql/ file that computes it
}{
	{schema.Anchors, layout.AnchorsFile, "baselines"},
	{schema.Buckets, layout.BucketsFile, "buckets"},
	{schema.Corrections, layout.CorrectionsFile, "corrections"},
	{schema.ValueData, layout.ValueDataFile, "value_data"},
	{schema.Pairs, layout.PairsFile, "pairs"},
}

// Inputs are the files one step's aggregate reads.
type Inputs struct {
	Step        int
	episodes    []source // every shard of steps 1..Step, by step
	decisions   []source // every shard of Step
	prevBuckets []source // step Step−1's buckets.arrow (none at step 1)
	pairs       []source // pairs.arrow of steps 1..Step−1
	tasks       string   // tasks/train.arrow
}

// FindInputs lists the input files of step's aggregate as they are on disk now. A file that
// does not exist is listed all the same (Paths); the stage runner names it with the command
// that writes it. The error says that a step's rollout shards do not fit together.
func FindInputs(r *rundir.Folder, step int) (*Inputs, error) {
	in := &Inputs{Step: step, tasks: r.TasksPath("train")}
	for j := 1; j <= step; j++ {
		tables := []string{layout.Episodes}
		if j == step {
			tables = append(tables, layout.Decisions)
		}
		files, err := r.ShardedInputs(j, layout.Rollout, tables...)
		if err != nil {
			return nil, err
		}
		for _, p := range files[0] {
			in.episodes = append(in.episodes, source{p, j})
		}
		if j == step {
			for _, p := range files[1] {
				in.decisions = append(in.decisions, source{p, j})
			}
			continue
		}
		agg := r.StageDir(j, layout.Aggregate)
		in.pairs = append(in.pairs, source{filepath.Join(agg, layout.PairsFile), j})
		if j == step-1 {
			in.prevBuckets = append(in.prevBuckets, source{filepath.Join(agg, layout.BucketsFile), j})
		}
	}
	return in, nil
}

// Paths lists every input file.
func (in *Inputs) Paths() []string {
	var out []string
	for _, group := range [][]source{in.episodes, in.decisions, in.prevBuckets, in.pairs} {
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

// Inputs are the episodes of steps 1..step (every shard), the step's decisions, the previous
// step's buckets, the pairs of the earlier steps and the training tasks (FindInputs).
func (Stage) Inputs(r *rundir.Folder, step int) (rundir.Resolved, error) {
	return FindInputs(r, step)
}

// Outputs are the five tables (Outputs).
func (Stage) Outputs(*rundir.Folder, int) []string {
	out := make([]string, len(Outputs))
	for i, o := range Outputs {
		out[i] = o.File
	}
	return out
}

// Run loads the inputs into DuckDB, runs the five SQL files and writes their results into
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
		if out.Table == schema.Anchors {
			// buckets.sql reads this step's anchors: load them back from the written file.
			if _, err := loadTable(ctx, db, "anchors", schema.Anchors, anchorColumns, []source{{path, in.Step}}); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadInputs loads the tables the SQL files read.
func loadInputs(ctx context.Context, db *duck.DB, in *Inputs) error {
	tasks := []source{{in.tasks, 0}}
	for _, l := range []struct {
		name  string
		table *schema.Table
		cols  []string
		srcs  []source
	}{
		{"episodes", schema.Episodes, episodeColumns, in.episodes},
		{"decisions", schema.Decisions, decisionColumns, in.decisions},
		{"tasks", schema.Tasks, taskColumns, tasks},
		{"buckets", schema.Buckets, bucketColumns, in.prevBuckets},
		{"pairs", schema.Pairs, pairColumns, in.pairs},
	} {
		if _, err := loadTable(ctx, db, l.name, l.table, l.cols, l.srcs); err != nil {
			return fmt.Errorf("load %s: %w", l.name, err)
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
	}
}
