package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/evosteer/evosteer-go/internal/atomicfile"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/episode"
	"github.com/evosteer/evosteer-go/internal/executor"
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
	// Samples is the episodes per task; 0 takes tasks.pilot.samples, or the paper's 8 when the
	// configuration has no pilot.
	Samples  int
	Paradigm string           // the pilot policy; "" is single_agent (one solver)
	Progress episode.Progress // told after every episode; may be nil
}

// pilotChunk is the number of tasks played between two checkpoints of a pilot in a folder: a
// killed pilot replays at most one chunk.
const pilotChunk = 64

// partsDir is the folder in a pilot's output folder that holds its finished chunks until the
// pilot completes.
const partsDir = ".pilot-parts"

// PilotResult is what a pilot wrote: the table's rows (in training-task order) and the pool.
type PilotResult struct {
	Rows []schema.PilotRow
	Pool []tasks.Task
	// Excluded counts the training tasks of tasks.pilot.exclude_families: not played, not kept.
	Excluded int
	// Resumed is the number of tasks whose rows a killed earlier pilot into the same folder had
	// finished, read back instead of played.
	Resumed int
	// Replayed names each part file found but played again, and why: made from other inputs
	// (its lineage differs: "samples 2, this pilot's 3"), unreadable, or of other tasks.
	Replayed []string
	// JSONLErr is why init --tasks would refuse pool.jsonl (nil when it reads it back equal);
	// PoolTable holds the same rows either way.
	JSONLErr error
}

// Pilot plays Samples episodes of the pilot policy on every training task a run with cfg and
// taskFiles would train on (TrainTasks) outside tasks.pilot.exclude_families, each seeded from
// the config seed, the task id and the sample index, and writes DIR/pilot.arrow (the pilot
// table) and DIR/pool.jsonl: the tasks with 0 < p̂ < 1 in init --tasks' JSONL rows, each with
// prior_rate = p̂ and prior_count = Samples. Both files are written atomically, and the same
// inputs give the same bytes. Finished chunks of tasks are kept in DIR/.pilot-parts until the
// pilot completes, so a killed pilot run again resumes where it stopped and writes the bytes an
// uninterrupted one writes.
func Pilot(ctx context.Context, cfg *config.Config, taskFiles []string, dir string, o PilotOptions) (*PilotResult, error) {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("pilot: --out %s is a file, not a folder: give a folder (created if missing) to write %s and %s into", dir, PilotFile, PoolFile)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("pilot: --out %s: %w", dir, err)
	}
	train, inputs, err := TrainTasks(cfg, taskFiles)
	if err != nil {
		return nil, fmt.Errorf("pilot: %w", err)
	}
	o, err = pilotOptions(cfg, o)
	if err != nil {
		return nil, err
	}
	parts := filepath.Join(dir, partsDir, pilotKey(cfg, o, inputs))
	res, err := playPilot(ctx, cfg, train, o, parts, partLineage(cfg, o, inputs))
	if err != nil {
		return nil, err
	}
	var pool bytes.Buffer
	for _, t := range res.Pool {
		line, err := tasks.FormatJSONL(t)
		if err != nil {
			return nil, fmt.Errorf("pilot: %w", err)
		}
		pool.Write(line)
		pool.WriteByte('\n')
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
	if err := os.RemoveAll(filepath.Join(dir, partsDir)); err != nil {
		return nil, fmt.Errorf("pilot: remove its finished chunks: %w", err)
	}
	if back, err := tasks.ParseJSONL(filepath.Join(dir, PoolFile), bytes.NewReader(pool.Bytes())); err != nil {
		res.JSONLErr = err
	} else if len(back) != len(res.Pool) {
		res.JSONLErr = fmt.Errorf("%s reads back %d rows of %d", PoolFile, len(back), len(res.Pool))
	}
	return res, nil
}

// PilotTrainingPool is the training pool init would write for cfg on the simulated world under
// tasks.pilot (the pilot's kept tasks; PilotPool), without a run folder: what the admission
// study sizes its families by.
func PilotTrainingPool(ctx context.Context, cfg *config.Config) ([]tasks.Task, error) {
	train, _, err := TrainTasks(cfg, nil)
	if err != nil {
		return nil, fmt.Errorf("pilot: %w", err)
	}
	res, err := configuredPilot(ctx, cfg, train)
	if err != nil {
		return nil, err
	}
	return res.Pool, nil
}

// configuredPilot plays the pilot tasks.pilot configures (samples, exclusions) on train, with no
// checkpoints: what init and the admission study train on.
func configuredPilot(ctx context.Context, cfg *config.Config, train []tasks.Task) (*PilotResult, error) {
	o, err := pilotOptions(cfg, PilotOptions{})
	if err != nil {
		return nil, err
	}
	return playPilot(ctx, cfg, train, o, "", schema.Lineage{})
}

// pilotOptions fills in the samples from the configuration and checks them.
func pilotOptions(cfg *config.Config, o PilotOptions) (PilotOptions, error) {
	if o.Samples == 0 {
		o.Samples = 8
		if cfg.Tasks.Pilot != nil {
			o.Samples = cfg.Tasks.Pilot.Samples
		}
	}
	if o.Samples < 1 {
		return o, fmt.Errorf("pilot: --samples %d: a pilot plays at least one episode per task", o.Samples)
	}
	if o.Paradigm == "" {
		o.Paradigm = paradigms.SingleAgent
	}
	return o, nil
}

// pilotKey names the checkpoint folder of a pilot by everything its rows depend on, so a
// pilot with other inputs looks in another folder; each part also carries that lineage itself
// (partLineage), checked before it is resumed.
func pilotKey(cfg *config.Config, o PilotOptions, inputs map[string]string) string {
	h := sha256.New()
	fmt.Fprintf(h, "config %s\nsamples %d\nparadigm %s\n", cfg.SHA256(), o.Samples, o.Paradigm)
	for _, p := range slices.Sorted(maps.Keys(inputs)) {
		fmt.Fprintf(h, "input %s %s\n", p, inputs[p])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// The keys of a part's lineage (Lineage.Inputs) that are the pilot's own inputs, not files.
const (
	partSamples  = "pilot:samples"
	partSeed     = "pilot:seed"
	partParadigm = "pilot:paradigm"
)

// partLineage is the lineage a part file carries: the configuration's sha256 and the task
// files' sha256s (pilot.arrow's lineage), and under the pilot: keys of Inputs the samples, the
// seed and the paradigm, so that a part says itself which pilot made it.
func partLineage(cfg *config.Config, o PilotOptions, inputs map[string]string) schema.Lineage {
	in := maps.Clone(inputs)
	if in == nil {
		in = map[string]string{}
	}
	in[partSamples] = strconv.Itoa(o.Samples)
	in[partSeed] = strconv.FormatUint(cfg.Seed, 10)
	in[partParadigm] = o.Paradigm
	return schema.Lineage{Stage: "pilot", ConfigSHA256: cfg.SHA256(), Inputs: in}
}

// lineageDiff says how a part's lineage differs from this pilot's, "" when it does not.
func lineageDiff(got, want schema.Lineage) string {
	if _, ok := got.Inputs[partSamples]; !ok {
		return "no lineage (written by an older evosteer)"
	}
	var diffs []string
	for _, k := range []struct{ key, what string }{{partSamples, "samples"}, {partSeed, "seed"}, {partParadigm, "paradigm"}} {
		if g, w := got.Inputs[k.key], want.Inputs[k.key]; g != w {
			diffs = append(diffs, fmt.Sprintf("%s %s, this pilot's %s", k.what, g, w))
		}
	}
	diffs = append(diffs, schema.InputDiffs(got.Inputs, want.Inputs, "this pilot", func(p string) string {
		if p == partSamples || p == partSeed || p == partParadigm {
			return ""
		}
		return "the task file " + p
	})...)
	if len(diffs) == 0 && got.ConfigSHA256 != want.ConfigSHA256 {
		diffs = append(diffs, fmt.Sprintf("configuration sha256 %s, this pilot's %s", got.ConfigSHA256, want.ConfigSHA256))
	}
	return strings.Join(diffs, "; ")
}

// playPilot plays the pilot on train, chunk by chunk; with parts not "" each finished chunk's
// rows are written there with lin, and a chunk found there with the same lineage and tasks is
// read back instead of played (any other is played again and named in Replayed).
func playPilot(ctx context.Context, cfg *config.Config, train []tasks.Task, o PilotOptions, parts string, lin schema.Lineage) (*PilotResult, error) {
	script, err := paradigms.New(o.Paradigm, nil)
	if err != nil {
		return nil, fmt.Errorf("pilot: %w", err)
	}
	res := &PilotResult{}
	var played []tasks.Task
	for _, t := range train {
		if cfg.Tasks.Pilot != nil && slices.Contains(cfg.Tasks.Pilot.ExcludeFamilies, t.Family) {
			res.Excluded++
			continue
		}
		played = append(played, t)
	}
	var exec executor.Executor
	none := &skills.Library{} // the pilot plays with no skills, as step 1 does
	base := seed.Derive(cfg.Seed, "pilot")
	total := len(played) * o.Samples
	for start := 0; start < len(played); start += pilotChunk {
		chunk := played[start:min(start+pilotChunk, len(played))]
		part := ""
		if parts != "" {
			part = filepath.Join(parts, fmt.Sprintf("part-%06d.arrow", start/pilotChunk))
			rows, why := readPart(part, chunk, lin)
			if why == "" {
				res.Rows = append(res.Rows, rows...)
				res.Resumed += len(chunk)
				continue
			}
			if why != partMissing {
				res.Replayed = append(res.Replayed, fmt.Sprintf("%s: %s; played again", part, why))
			}
		}
		if exec == nil {
			if exec, err = episode.NewExecutor(cfg); err != nil {
				return nil, fmt.Errorf("pilot: %w", err)
			}
		}
		var jobs []episode.Job
		for _, t := range chunk {
			for i := range o.Samples {
				jobs = append(jobs, episode.Job{Task: t, ID: fmt.Sprintf("pilot/%s/%d", t.ID, i), Source: o.Paradigm,
					Seed: seed.Derive(base, t.ID, strconv.Itoa(i)), Theta: true, Script: script, Menu: none.Menu(t.TaskType)})
			}
		}
		var progress episode.Progress
		if o.Progress != nil {
			offset := start * o.Samples
			progress = func(done, _ int) { o.Progress(offset+done, total) }
		}
		eps, err := episode.Play(ctx, cfg, exec, nil, nil, jobs, progress)
		if err != nil {
			return nil, fmt.Errorf("pilot: %w", err)
		}
		var rows []schema.PilotRow
		for k, t := range chunk {
			succ := int64(0)
			for _, p := range eps[k*o.Samples : (k+1)*o.Samples] {
				if p.Episode.Reward >= cfg.Admission.SuccessThreshold {
					succ++
				}
			}
			p := float64(succ) / float64(o.Samples)
			rows = append(rows, schema.PilotRow{TaskID: t.ID, Family: t.Family, Samples: int64(o.Samples), Successes: succ, PHat: p, Kept: p > 0 && p < 1})
		}
		if part != "" {
			if err := os.MkdirAll(parts, 0o755); err != nil {
				return nil, fmt.Errorf("pilot: %w", err)
			}
			if err := schema.WriteRows(schema.Pilot, part, lin, rows); err != nil {
				return nil, fmt.Errorf("pilot: checkpoint: %w", err)
			}
		}
		res.Rows = append(res.Rows, rows...)
	}
	for k, row := range res.Rows {
		if !row.Kept {
			continue
		}
		t, p := played[k], row.PHat
		t.PriorRate, t.PriorCount = &p, float64(o.Samples)
		res.Pool = append(res.Pool, t)
	}
	return res, nil
}

// partMissing is readPart's answer for a chunk no earlier pilot finished.
const partMissing = "missing"

// readPart reads a finished chunk back. It returns why the part cannot be resumed, "" when it
// can: missing (partMissing), unreadable, made from other inputs (its lineage differs from
// want: lineageDiff) or holding other tasks. A pilot killed while writing a part cannot leave a
// half-written one: parts are written atomically.
func readPart(path string, chunk []tasks.Task, want schema.Lineage) ([]schema.PilotRow, string) {
	f, err := schema.Pilot.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, partMissing
	}
	if err != nil {
		return nil, fmt.Sprintf("unreadable (%v)", err)
	}
	diff := lineageDiff(f.Lineage, want)
	f.Close()
	if diff != "" {
		return nil, "made with " + diff
	}
	rows, err := schema.ReadFile[schema.PilotRow](schema.Pilot, path)
	if err != nil {
		return nil, fmt.Sprintf("unreadable (%v)", err)
	}
	if len(rows) != len(chunk) {
		return nil, fmt.Sprintf("holds %d tasks, the chunk %d", len(rows), len(chunk))
	}
	for i, r := range rows {
		if r.TaskID != chunk[i].ID {
			return nil, fmt.Sprintf("holds task %s where the chunk has %s", r.TaskID, chunk[i].ID)
		}
	}
	return rows, ""
}
