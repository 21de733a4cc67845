package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/paradigms"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/schema"
)

// EvalFile is where `evosteer eval` writes its results, relative to the run folder.
const EvalFile = layout.Eval + "/" + layout.EvalResultsFile

// data is what the report reads from a run folder.
type data struct {
	steps     []int // step folders ≥ 1 with rollout episodes, increasing
	episodes  []StepEpisode
	anchors   []StepAnchor
	metrics   []stepMetrics
	decisions []EditDecision
	segments  []skills.Segment // ledger segments in log order
	library   []schema.SkillRow
	libPath   string // the snapshot library came from, relative to the run ("" when none)
	eval      []schema.EvalRow
	evalFound bool
	// evalNA are the evaluation's cells no score fills, with the reason: policy → benchmark →
	// why (eval/workflows.json's task types without a searched workflow).
	evalNA map[string]map[string]string
}

type stepMetrics struct {
	Step int
	schema.UpdateMetricsRow
}

// load reads every table the report needs. Missing stage outputs of a step (a run stopped
// mid-step) are skipped; unreadable files are errors.
func load(r *rundir.Folder) (*data, error) {
	d := &data{}
	entries, err := os.ReadDir(r.Dir)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	for _, e := range entries {
		step, ok := layout.ParseStepDir(e.Name())
		if !ok || !e.IsDir() || step < 1 {
			continue
		}
		eps, err := rundir.Shards(r.StageDir(step, layout.Rollout), layout.Episodes)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		if len(eps) == 0 {
			continue
		}
		d.steps = append(d.steps, step)
		if err := d.loadStep(r, step, eps); err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
	}
	slices.Sort(d.steps)
	if len(d.steps) > 0 {
		if err := d.loadSkills(r); err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
	}
	d.eval, err = schema.ReadFile[schema.EvalRow](schema.EvalResults, filepath.Join(r.Dir, EvalFile))
	switch {
	case err == nil:
		d.evalFound = true
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("report: %w", err)
	}
	if d.evalFound {
		if d.evalNA, err = readUnavailable(r); err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
	}
	return d, nil
}

// readUnavailable reads eval/workflows.json, when the evaluation searched workflows, for the
// benchmarks searched_workflow has no workflow for and why (paradigms.SearchResult.Unavailable).
func readUnavailable(r *rundir.Folder) (map[string]map[string]string, error) {
	path := filepath.Join(r.Dir, layout.Eval, layout.EvalWorkflowsFile)
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return paradigms.UnavailableCells(path, data, r.Config)
}

func (d *data) loadStep(r *rundir.Folder, step int, episodePaths []string) error {
	eps, err := schema.ReadFiles[schema.EpisodeRow](schema.Episodes, episodePaths)
	if err != nil {
		return err
	}
	for _, e := range eps {
		d.episodes = append(d.episodes, StepEpisode{step, e})
	}
	decs, err := rundir.Shards(r.StageDir(step, layout.Rollout), layout.Decisions)
	if err != nil {
		return err
	}
	for _, p := range decs {
		if d.decisions, err = readEditDecisions(p, d.decisions); err != nil {
			return err
		}
	}
	anchors, err := readIfPresent[schema.AnchorRow](schema.Anchors, filepath.Join(r.StageDir(step, layout.Aggregate), layout.AnchorsFile))
	if err != nil {
		return err
	}
	for _, a := range anchors {
		d.anchors = append(d.anchors, StepAnchor{step, a})
	}
	metrics, err := readIfPresent[schema.UpdateMetricsRow](schema.UpdateMetrics, filepath.Join(r.StageDir(step, layout.Update), layout.UpdateMetricsFile))
	if err != nil {
		return err
	}
	for _, m := range metrics {
		d.metrics = append(d.metrics, stepMetrics{step, m})
	}
	return nil
}

// loadSkills reads the ledger segments through the last step and the newest library snapshot.
func (d *data) loadSkills(r *rundir.Folder) error {
	last := d.steps[len(d.steps)-1]
	for _, s := range skills.SegmentPaths(r, last+1, layout.Validate) {
		rows, err := schema.ReadFile[schema.LedgerRow](schema.Ledger, s.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // the stage has not run (yet) at this step
		}
		if err != nil {
			return err
		}
		s.Rows = rows
		d.segments = append(d.segments, s)
		snap := filepath.Join(filepath.Dir(s.Path), layout.SkillsFile)
		lib, err := readIfPresent[schema.SkillRow](schema.Skills, snap)
		if err != nil {
			return err
		}
		if lib != nil {
			d.library, d.libPath = lib, r.Rel(snap)
		}
	}
	return nil
}

// readIfPresent reads a file of table t, or nothing when the file does not exist.
func readIfPresent[T any](t *schema.Table, path string) ([]T, error) {
	rows, err := schema.ReadFile[T](t, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return rows, err
}

// readEditDecisions appends the four columns the edit outcomes need from one decisions file,
// without materialising the wide network-input columns as Go values.
func readEditDecisions(path string, out []EditDecision) ([]EditDecision, error) {
	err := schema.Decisions.EachBatch(path, func(rec arrow.RecordBatch) error {
		ids, err1 := schema.Column[*array.String](rec, "episode_id")
		ts, err2 := schema.Column[*array.Int32](rec, "t")
		kinds, err3 := schema.Column[*array.String](rec, "action_kind")
		scores, err4 := schema.Column[*array.Float64](rec, "output_score")
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return err
		}
		for i := range int(rec.NumRows()) {
			d := EditDecision{EpisodeID: strings.Clone(ids.Value(i)), T: ts.Value(i), Kind: strings.Clone(kinds.Value(i))}
			if scores.IsValid(i) {
				s := scores.Value(i)
				d.OutputScore = &s
			}
			out = append(out, d)
		}
		return nil
	})
	return out, err
}
