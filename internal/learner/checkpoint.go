package learner

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// Path is the checkpoint of a step (step 0: the initial learner), written by the update stage.
func Path(r *rundir.Folder, step int) string {
	return filepath.Join(r.StageDir(step, layout.Update), filepath.FromSlash(layout.CheckpointFile))
}

// New builds the step-0 learner of a run from its configuration: π_θ = ρ, b_ψ = 0, fresh heads.
// When the learner keeps a per-task table (the measured-flows ablation's free anchors, log Z of
// tb and ttb) it reads the training tasks.
func New(r *rundir.Folder) (*gpu.Learner, error) {
	cfg := r.Config
	o := gpu.OptionsFromConfig(cfg, policy.StateWidth(len(cfg.Families)))
	var ids []string
	if o.NeedsTasks() {
		train, err := tasks.ReadFile(r.TasksPath("train"))
		if err != nil {
			return nil, err
		}
		for _, t := range train {
			ids = append(ids, t.ID)
		}
	}
	return gpu.NewLearner(o, ids), nil
}

// Load builds the run's learner and restores the checkpoint of step into it.
func Load(r *rundir.Folder, step int) (*gpu.Learner, error) {
	l, err := New(r)
	if err != nil {
		return nil, err
	}
	path := Path(r, step)
	rows, err := schema.ReadFile[schema.CheckpointRow](schema.Checkpoint, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, r.MissingInput(path)
	}
	if err != nil {
		return nil, fmt.Errorf("load checkpoint of step %d: %w", step, err)
	}
	if err := restore(l, rows); err != nil {
		return nil, fmt.Errorf("load checkpoint %s: %w", r.Rel(path), err)
	}
	return l, nil
}

// Write saves the learner to path (atomically) with the stage's lineage.
func Write(path string, lin schema.Lineage, l *gpu.Learner) error {
	rec, err := schema.Build(schema.Checkpoint, Rows(l))
	if err != nil {
		return err
	}
	defer rec.Release()
	return schema.Checkpoint.WriteBatches(path, lin, rec)
}

// Rows is the learner as checkpoint rows: every parameter block in the learner's order, then
// the counters by name.
func Rows(l *gpu.Learner) []schema.CheckpointRow {
	var rows []schema.CheckpointRow
	for _, p := range l.Params() {
		dims := make([]int32, len(p.Dims))
		for i, d := range p.Dims {
			dims[i] = int32(d)
		}
		row := schema.CheckpointRow{Name: p.Name, Kind: "param", Dims: dims, Value: p.Value,
			M: nonNil(p.M), V: nonNil(p.V), Labels: []string{}}
		if p == l.Anchors || p == l.LogZ {
			row.Labels = l.AnchorTasks
		}
		rows = append(rows, row)
	}
	counters := l.Counters()
	for _, name := range slices.Sorted(maps.Keys(counters)) {
		rows = append(rows, schema.CheckpointRow{Name: name, Kind: "counter", Dims: []int32{}, Value: []float32{},
			M: []float32{}, V: []float32{}, Count: counters[name], Labels: []string{}})
	}
	return rows
}

func restore(l *gpu.Learner, rows []schema.CheckpointRow) error {
	var params []*gpu.Param
	counters := map[string]int64{}
	var labels []string
	for i, row := range rows {
		switch row.Kind {
		case "param":
			dims := make([]int, len(row.Dims))
			for j, d := range row.Dims {
				dims[j] = int(d)
			}
			p := &gpu.Param{Name: row.Name, Dims: dims, Value: row.Value}
			if len(row.M) > 0 || len(row.V) > 0 {
				p.M, p.V = row.M, row.V
			}
			params = append(params, p)
			if len(row.Labels) > 0 {
				labels = row.Labels
			}
		case "counter":
			if _, dup := counters[row.Name]; dup {
				return fmt.Errorf("row %d: counter %q appears twice", i, row.Name)
			}
			counters[row.Name] = row.Count
		default:
			return fmt.Errorf("row %d (%s): column \"kind\": %q is neither param nor counter", i, row.Name, row.Kind)
		}
	}
	return l.Restore(params, counters, labels)
}

func nonNil(s []float32) []float32 {
	if s == nil {
		return []float32{}
	}
	return s
}

// PolicyRow is the network input a rollout stored for a decision, checked for consistency.
func PolicyRow(d *schema.DecisionRow) (gpu.PolicyRow, error) {
	n := len(d.LegalActions)
	switch {
	case int(d.ActionWidth) != policy.ActionWidth:
		return gpu.PolicyRow{}, fmt.Errorf("episode %s decision %d: column \"action_width\": %d, this build's descriptors have %d", d.EpisodeID, d.T, d.ActionWidth, policy.ActionWidth)
	case len(d.ActionInputs) != n*policy.ActionWidth:
		return gpu.PolicyRow{}, fmt.Errorf("episode %s decision %d: column \"action_inputs\": %d values for %d legal actions", d.EpisodeID, d.T, len(d.ActionInputs), n)
	case len(d.PriorLogits) != n:
		return gpu.PolicyRow{}, fmt.Errorf("episode %s decision %d: column \"prior_logits\": %d values for %d legal actions", d.EpisodeID, d.T, len(d.PriorLogits), n)
	case int(d.Chosen) < 0 || int(d.Chosen) >= n:
		return gpu.PolicyRow{}, fmt.Errorf("episode %s decision %d: column \"chosen\": %d of %d legal actions", d.EpisodeID, d.T, d.Chosen, n)
	}
	return gpu.PolicyRow{State: d.PolicyInput, Actions: d.ActionInputs, Prior: d.PriorLogits}, nil
}
