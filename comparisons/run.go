package comparisons

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/pipeline"
	"github.com/evosteer/evosteer-go/schema"
	"github.com/evosteer/evosteer-go/stages/evaluate"
)

// Options set the scale of a study.
type Options struct {
	Dir string // study folder: one run folder per variant and seed, the timings and the tables
	// Config loads the base configuration of every run (the built-in one, or a file overlaid on
	// it); the study then sets the seed, the ablation, objective or β and the scale below.
	Config        func() (*config.Config, error)
	Variants      []Variant
	Seeds         int // runs per variant; seed k uses the base seed + k − 1
	Steps         int // training steps per run
	Tasks         int // batch.tasks of every run (task records per step)
	TestPerFamily int // tasks.test_per_family of every run
	EvalRuns      int // evaluation runs per run
	// Paradigms are the fixed paradigms evaluated, with ρ, in the full method's runs.
	Paradigms       []string
	SearchPerFamily int
	Jobs            int    // runs trained at once (each is mostly one core's work)
	Version         string // code version recorded in new run folders
	Log             io.Writer
}

// spec is one run of the study.
type spec struct {
	variant Variant
	seed    int
}

func (s spec) name() string { return fmt.Sprintf("%s-s%d", s.variant.Name, s.seed) }

// TimingsFolder holds, per run, the wall time of every stage the study ran (not stored in the
// run folders, whose files must be reproducible byte for byte).
const TimingsFolder = "timings"

// Run trains and evaluates every variant and seed (resuming what an earlier call left), then
// writes the tables (Tabulate) into the study folder and returns them.
func Run(ctx context.Context, o Options) (*Tables, error) {
	if o.Seeds < 1 || o.Steps < 1 || o.EvalRuns < 1 || o.Jobs < 1 {
		return nil, fmt.Errorf("comparisons: seeds, steps, eval runs and jobs must be >= 1 (got %d, %d, %d, %d)", o.Seeds, o.Steps, o.EvalRuns, o.Jobs)
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, TimingsFolder), 0o755); err != nil {
		return nil, err
	}
	specs := o.specs()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		next     = make(chan spec)
	)
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}
	for range o.Jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range next {
				if err := runOne(ctx, o, s, logf); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("%s: %w", s.name(), err)
					}
					mu.Unlock()
					cancel()
				}
			}
		}()
	}
	for i, s := range specs {
		select {
		case next <- s:
			logf("[%d/%d] %s started", i+1, len(specs), s.name())
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return WriteTables(ctx, o.Dir, o.runDirs())
}

// specs are the study's runs, seed by seed (the full method first in each).
func (o Options) specs() []spec {
	var specs []spec
	for seed := 1; seed <= o.Seeds; seed++ {
		for _, v := range o.Variants {
			specs = append(specs, spec{v, seed})
		}
	}
	return specs
}

func (o Options) runDirs() []string {
	var dirs []string
	for _, s := range o.specs() {
		dirs = append(dirs, filepath.Join(o.Dir, s.name()))
	}
	return dirs
}

// runOne initialises (or reopens), trains and evaluates one run.
func runOne(ctx context.Context, o Options, s spec, logf func(string, ...any)) error {
	cfg, err := o.Config()
	if err != nil {
		return err
	}
	cfg.Seed += uint64(s.seed - 1)
	cfg.Steps = o.Steps
	cfg.Batch.Tasks = o.Tasks
	cfg.Tasks.TestPerFamily = o.TestPerFamily
	cfg.Objective = s.variant.Objective
	if s.variant.Beta != 0 {
		cfg.AnchorTB.Beta = s.variant.Beta
	}
	if s.variant.Ablation != "" {
		if err := cfg.Ablate(s.variant.Ablation); err != nil {
			return err
		}
	}
	dir := filepath.Join(o.Dir, s.name())
	r, err := openOrInit(ctx, dir, cfg, o.Version)
	if err != nil {
		return err
	}
	defer r.Unlock()
	timings, err := os.OpenFile(filepath.Join(o.Dir, TimingsFolder, s.name()+".tsv"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer timings.Close()
	stepStart := time.Now()
	err = pipeline.Train(ctx, r, o.Steps, false, func(d pipeline.StageDone) {
		if !d.Skipped {
			fmt.Fprintf(timings, "%d\t%s\t%.3f\n", d.Step, d.Stage, float64(d.Wall.Microseconds())/1000)
		}
		if d.Stage == pipeline.Stages[len(pipeline.Stages)-1].Name() {
			if !d.Skipped {
				logf("%s: step %d/%d trained in %s", s.name(), d.Step, o.Steps, time.Since(stepStart).Round(10*time.Millisecond))
			}
			stepStart = time.Now()
		}
	})
	if err != nil {
		return err
	}
	if done, err := evaluated(r, o, s); err != nil || done {
		return err
	}
	logf("%s: evaluating (%d runs)", s.name(), o.EvalRuns)
	eo := evaluate.Options{Step: o.Steps, Runs: o.EvalRuns, SkipReference: !s.variant.evaluatesReference(), SearchPerFamily: o.SearchPerFamily}
	if s.variant.Name == Full {
		eo.Paradigms = o.Paradigms
	}
	if _, err := evaluate.Run(ctx, r, eo); err != nil {
		return err
	}
	logf("%s: done", s.name())
	return nil
}

// openOrInit opens the run folder made by an earlier call of the study, checking it was made
// with the same configuration, or creates it; the run it returns holds its lock.
func openOrInit(ctx context.Context, dir string, cfg *config.Config, version string) (*rundir.Folder, error) {
	if _, err := os.Stat(filepath.Join(dir, "run.yaml")); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return pipeline.Init(ctx, dir, cfg, version, pipeline.WriteSimTasks)
	}
	r, err := rundir.Open(dir)
	if err != nil {
		return nil, err
	}
	if r.Config.SHA256() != cfg.SHA256() {
		return nil, fmt.Errorf("run %s was made with another configuration (sha256 %s, this study's is %s): use another study folder or remove it",
			dir, r.Config.SHA256(), cfg.SHA256())
	}
	if _, err := os.Stat(learner.Path(r, 0)); err != nil {
		return nil, fmt.Errorf("run %s has no step-0 learner (an interrupted init?): remove it and start again: %w", dir, err)
	}
	if err := r.Lock(); err != nil {
		return nil, err
	}
	return r, nil
}

// evaluated says whether the run's eval/results.arrow already holds what the study asks: the
// trained policy of the last step with the requested number of runs, ρ too in the full method's
// and the β study's runs, and the paradigms in the full method's.
func evaluated(r *rundir.Folder, o Options, s spec) (bool, error) {
	path := filepath.Join(r.Dir, layout.Eval, layout.EvalResultsFile)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	rows, err := schema.ReadFiles[schema.EvalRow](schema.EvalResults, []string{path})
	if err != nil {
		return false, err
	}
	want := map[string]bool{evaluate.EvoSteer: true}
	if s.variant.evaluatesReference() {
		want[evaluate.Reference] = true
	}
	if s.variant.Name == Full {
		for _, p := range o.Paradigms {
			want[p] = true
		}
	}
	runs := map[string]map[int32]bool{}
	for _, row := range rows {
		if row.Policy == evaluate.EvoSteer && row.PolicyVersion != int64(o.Steps) {
			return false, nil
		}
		if runs[row.Policy] == nil {
			runs[row.Policy] = map[int32]bool{}
		}
		runs[row.Policy][row.Run] = true
	}
	for p := range want {
		if len(runs[p]) != o.EvalRuns {
			return false, nil
		}
	}
	return len(runs) == len(want), nil
}
