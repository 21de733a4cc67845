package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/evosteer/evosteer-go/internal/atomicfile"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/episode"
	"github.com/evosteer/evosteer-go/internal/paradigms"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// The pilot's files in its output folder.
const (
	PilotFile = "pilot.arrow" // the pilot table: one row per training task
	PoolFile  = "pool.jsonl"  // the kept tasks, for init --tasks
	// PoolTable is the same rows as a tasks table, which init --tasks also reads: the simulated
	// world's code and ALFWorld tasks lack the reference rows' hidden-test and game fields that
	// the JSONL reader requires, so a simulated pool trains from this file.
	PoolTable = "pool.arrow"
)

// PilotOptions configure a pilot.
type PilotOptions struct {
	Samples  int              // episodes per task (the paper's 8)
	Paradigm string           // the pilot policy; "" is single_agent (one solver)
	Progress episode.Progress // told after every episode; may be nil
}

// PilotResult is what a pilot wrote: the table's rows (in training-task order) and the pool.
type PilotResult struct {
	Rows []schema.PilotRow
	Pool []tasks.Task
	// JSONLErr is why init --tasks would refuse pool.jsonl (nil when it reads it back equal);
	// PoolTable holds the same rows either way.
	JSONLErr error
}

// Pilot plays Samples episodes of the pilot policy on every training task a run with cfg and
// taskFiles would train on (TrainTasks), each seeded from the config seed, the task id and the
// sample index, and writes DIR/pilot.arrow (the pilot table) and DIR/pool.jsonl: the tasks with
// 0 < p̂ < 1 in init --tasks' JSONL rows, each with prior_rate = p̂ and prior_count = Samples.
// Both files are written atomically, and the same inputs give the same bytes.
func Pilot(ctx context.Context, cfg *config.Config, taskFiles []string, dir string, o PilotOptions) (*PilotResult, error) {
	if o.Samples < 1 {
		return nil, fmt.Errorf("pilot: --samples %d: a pilot plays at least one episode per task", o.Samples)
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("pilot: --out %s is a file, not a folder: give a folder (created if missing) to write %s and %s into", dir, PilotFile, PoolFile)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("pilot: --out %s: %w", dir, err)
	}
	name := o.Paradigm
	if name == "" {
		name = paradigms.SingleAgent
	}
	script, err := paradigms.New(name, nil)
	if err != nil {
		return nil, fmt.Errorf("pilot: %w", err)
	}
	train, inputs, err := TrainTasks(cfg, taskFiles)
	if err != nil {
		return nil, fmt.Errorf("pilot: %w", err)
	}
	exec, err := episode.NewExecutor(cfg)
	if err != nil {
		return nil, fmt.Errorf("pilot: %w", err)
	}
	none := &skills.Library{} // the pilot plays with no skills, as step 1 does
	base := seed.Derive(cfg.Seed, "pilot")
	var jobs []episode.Job
	for _, t := range train {
		for i := range o.Samples {
			jobs = append(jobs, episode.Job{Task: t, ID: fmt.Sprintf("pilot/%s/%d", t.ID, i), Source: name,
				Seed: seed.Derive(base, t.ID, strconv.Itoa(i)), Theta: true, Script: script, Menu: none.Menu(t.TaskType)})
		}
	}
	played, err := episode.Play(ctx, cfg, exec, nil, nil, jobs, o.Progress)
	if err != nil {
		return nil, fmt.Errorf("pilot: %w", err)
	}
	res := &PilotResult{}
	var pool bytes.Buffer
	for k, t := range train {
		succ := int64(0)
		for _, p := range played[k*o.Samples : (k+1)*o.Samples] {
			if p.Episode.Reward >= cfg.Admission.SuccessThreshold {
				succ++
			}
		}
		p := float64(succ) / float64(o.Samples)
		row := schema.PilotRow{TaskID: t.ID, Family: t.Family, Samples: int64(o.Samples), Successes: succ, PHat: p, Kept: p > 0 && p < 1}
		res.Rows = append(res.Rows, row)
		if !row.Kept {
			continue
		}
		t.PriorRate, t.PriorCount = &p, float64(o.Samples)
		line, err := tasks.FormatJSONL(t)
		if err != nil {
			return nil, fmt.Errorf("pilot: %w", err)
		}
		pool.Write(line)
		pool.WriteByte('\n')
		res.Pool = append(res.Pool, t)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pilot: %w", err)
	}
	lin := schema.Lineage{Run: filepath.Base(dir), Stage: "pilot", ConfigSHA256: cfg.SHA256(), Inputs: inputs}
	if err := schema.WriteRows(schema.Pilot, filepath.Join(dir, PilotFile), lin, res.Rows); err != nil {
		return nil, fmt.Errorf("pilot: %w", err)
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, PoolFile), pool.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("pilot: %w", err)
	}
	if err := tasks.WriteFile(filepath.Join(dir, PoolTable), lin, res.Pool); err != nil {
		return nil, fmt.Errorf("pilot: %w", err)
	}
	if back, err := tasks.ParseJSONL(filepath.Join(dir, PoolFile), bytes.NewReader(pool.Bytes())); err != nil {
		res.JSONLErr = err
	} else if len(back) != len(res.Pool) {
		res.JSONLErr = fmt.Errorf("%s reads back %d rows of %d", PoolFile, len(back), len(res.Pool))
	}
	return res, nil
}
