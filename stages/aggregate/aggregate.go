package aggregate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/duck"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/schema"
)

// Name is the stage's folder name.
const Name = "aggregate"

// RolloutStage is the folder of the stage whose files this one reads.
const RolloutStage = "rollout"

// The files this stage writes into its folder.
const (
	AnchorsFile     = "anchors.arrow"
	BucketsFile     = "buckets.arrow"
	CorrectionsFile = "corrections.arrow"
	ValueDataFile   = "value_data.arrow"
	PairsFile       = "pairs.arrow"
)

// Outputs lists the five output tables with their file names, in the order they are written.
var Outputs = []struct {
	Table *schema.Table
	File  string
	SQL   string // the sql/ file that computes it
}{
	{schema.Anchors, AnchorsFile, "baselines"},
	{schema.Buckets, BucketsFile, "buckets"},
	{schema.Corrections, CorrectionsFile, "corrections"},
	{schema.ValueData, ValueDataFile, "value_data"},
	{schema.Pairs, PairsFile, "pairs"},
}

// Inputs are the files one step's aggregate reads.
type Inputs struct {
	Step        int
	episodes    []source // every shard of steps 1..Step, by step
	decisions   []source // every shard of Step
	prevBuckets []source // step Step−1's buckets.arrow (none at step 1)
	pairs       []source // pairs.arrow of steps 1..Step−1
	tasks       string   // tasks/train.arrow
	missing     []string // required files that do not exist or do not fit together, as messages
}

// FindInputs lists the input files of step's aggregate as they are on disk now. Missing
// required files are reported by Err.
func FindInputs(r *rundir.Run, step int) *Inputs {
	in := &Inputs{Step: step, tasks: r.TasksPath("train")}
	for j := 1; j <= step; j++ {
		eps, err := rundir.Shards(r.StageDir(j, RolloutStage), "episodes")
		if err != nil {
			in.missing = append(in.missing, err.Error())
		} else if len(eps) == 0 {
			in.missing = append(in.missing, fmt.Sprintf("step %d has no rollout episodes (%s); run `evosteer rollout --step %d` first",
				j, r.Rel(r.StageDir(j, RolloutStage)), j))
		}
		for _, p := range eps {
			in.episodes = append(in.episodes, source{p, j})
		}
		if j == step {
			dec, err := rundir.Shards(r.StageDir(j, RolloutStage), "decisions")
			if err != nil {
				in.missing = append(in.missing, err.Error())
			} else if len(dec) != len(eps) && len(eps) > 0 {
				in.missing = append(in.missing, fmt.Sprintf("step %d: %d episodes files but %d decisions files in %s", j, len(eps), len(dec), r.Rel(r.StageDir(j, RolloutStage))))
			}
			for _, p := range dec {
				in.decisions = append(in.decisions, source{p, j})
			}
			continue
		}
		agg := r.StageDir(j, Name)
		for _, f := range []string{PairsFile, BucketsFile} {
			p := filepath.Join(agg, f)
			if _, err := os.Stat(p); err != nil {
				if f == PairsFile || j == step-1 {
					in.missing = append(in.missing, fmt.Sprintf("step %d has no %s; run `evosteer aggregate --step %d` first", j, r.Rel(p), j))
				}
				continue
			}
			switch {
			case f == PairsFile:
				in.pairs = append(in.pairs, source{p, j})
			case j == step-1:
				in.prevBuckets = append(in.prevBuckets, source{p, j})
			}
		}
	}
	if _, err := os.Stat(in.tasks); err != nil {
		in.missing = append(in.missing, fmt.Sprintf("no task records %s", r.Rel(in.tasks)))
	}
	return in
}

// Err names every missing or inconsistent required input, or is nil.
func (in *Inputs) Err() error {
	if len(in.missing) == 0 {
		return nil
	}
	errs := make([]error, len(in.missing))
	for i, m := range in.missing {
		errs[i] = errors.New(m)
	}
	return errors.Join(errs...)
}

// Paths lists every input file (for the stage's manifest), relative to the run folder.
func (in *Inputs) Paths(r *rundir.Run) []string {
	var out []string
	for _, group := range [][]source{in.episodes, in.decisions, in.prevBuckets, in.pairs} {
		for _, s := range group {
			out = append(out, r.Rel(s.path))
		}
	}
	if _, err := os.Stat(in.tasks); err == nil {
		out = append(out, r.Rel(in.tasks))
	}
	return out
}

// Stage returns the aggregate stage of one step. Its inputs are the files on disk when it is
// built, so a changed, added or removed rollout shard, earlier step or task file reruns it.
func Stage(r *rundir.Run, step int) rundir.Stage {
	in := FindInputs(r, step)
	return rundir.Stage{Name: Name, Inputs: in.Paths(r), Run: func(ctx context.Context, sc *rundir.StageContext) error {
		return Run(ctx, sc.Run.Config, in, sc.OutDir, sc.Lineage())
	}}
}

// Run loads the inputs into DuckDB, runs the five SQL files and writes their results into
// outDir with lineage lin.
func Run(ctx context.Context, cfg *config.Config, in *Inputs, outDir string, lin schema.Lineage) error {
	if err := in.Err(); err != nil {
		return err
	}
	db, err := duck.Open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := loadInputs(ctx, db, in); err != nil {
		return err
	}
	p := Params(cfg, in.Step)
	for _, out := range Outputs {
		path := filepath.Join(outDir, out.File)
		if err := runSQL(ctx, db, out.SQL, p[out.SQL], out.Table, path, lin); err != nil {
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
