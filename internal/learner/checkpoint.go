package learner

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/gpu/qwen3"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/orchestra"
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
	if !cfg.Policy.IsCausalLM() {
		return gpu.NewLearner(o, ids), nil
	}
	lm, err := gpu.OpenCausalLM(cfg.Policy, cfg.Seed)
	if err != nil {
		return nil, err
	}
	return gpu.NewLearnerWith(o, ids, lm), nil
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

// Write saves the learner to path (atomically) with the stage's lineage, and the causal-LM
// policy's adapter beside it as a PEFT adapter folder (layout.AdapterConfigFile,
// AdapterModelFile): the checkpoint table holds the adapter with its optimizer state, the folder
// what a server or PEFT loads.
func Write(path string, lin schema.Lineage, l *gpu.Learner) error {
	rec, err := schema.Build(schema.Checkpoint, Rows(l))
	if err != nil {
		return err
	}
	defer rec.Release()
	if err := schema.Checkpoint.WriteBatches(path, lin, rec); err != nil {
		return err
	}
	if lm, ok := l.Policy.(*gpu.CausalLM); ok {
		dir := filepath.Join(filepath.Dir(path), filepath.Base(filepath.Dir(filepath.FromSlash(layout.AdapterConfigFile))))
		if err := qwen3.WriteAdapter(dir, lm.ModelConfig(), *lm.Adapter(), lm.BaseModel()); err != nil {
			return fmt.Errorf("write the adapter folder: %w", err)
		}
	}
	return nil
}

// Outputs are the files Write writes under a stage folder: the checkpoint, and the adapter
// folder's two files with the causal-LM policy.
func Outputs(cfg *config.Config) []string {
	if cfg.Policy.IsCausalLM() {
		return []string{layout.CheckpointFile, layout.AdapterConfigFile, layout.AdapterModelFile}
	}
	return []string{layout.CheckpointFile}
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

// PolicyRow is the policy's input a rollout stored for a decision, checked for consistency: the
// network inputs of the decision row and, where texts is not nil (the causal-LM policy), the
// decision's controller prompt from the prompts table, with the legal actions' canonical JSON.
func PolicyRow(d *schema.DecisionRow, texts Texts) (gpu.PolicyRow, error) {
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
	row := gpu.PolicyRow{State: d.PolicyInput, Actions: d.ActionInputs, Prior: d.PriorLogits}
	if texts != nil {
		user, ok := texts[decisionKey{d.EpisodeID, d.T}]
		if !ok {
			return gpu.PolicyRow{}, fmt.Errorf("episode %s decision %d: no row in the prompts table: the causal-LM policy reads the decision's controller prompt (rerun the rollout)", d.EpisodeID, d.T)
		}
		row.Text = &gpu.PolicyText{System: orchestra.ControllerSystemPrompt, User: user, Actions: d.LegalActions}
	}
	return row, nil
}

// decisionKey names a decision: its episode and index.
type decisionKey struct {
	episode string
	t       int32
}

// Texts are a step's controller prompts (user messages) by decision, from its prompts table.
type Texts map[decisionKey]string

// ReadsText reports whether l's policy reads the controller prompt (the causal-LM policy), so
// that the stages which score it pass Texts to PolicyRow.
func ReadsText(l *gpu.Learner) bool {
	_, ok := l.Policy.(*gpu.CausalLM)
	return ok
}

// ReadTexts reads the prompts tables files (TextsOf).
func ReadTexts(files []string) (Texts, error) {
	rows, err := schema.ReadFiles[schema.PromptRow](schema.Prompts, files)
	if err != nil {
		return nil, err
	}
	return TextsOf(rows)
}

// TextsOf indexes prompts rows, refusing a row whose system prompt is not this build's
// controller prompt (the policy would read a prompt the rollout did not send) and a decision that
// appears twice.
func TextsOf(rows []schema.PromptRow) (Texts, error) {
	texts := make(Texts, len(rows))
	for i, p := range rows {
		if p.SystemPromptID != orchestra.ControllerSystemPromptID {
			return nil, fmt.Errorf("prompts row %d (episode %s decision %d): column \"system_prompt_id\": %q, this build's controller prompt is %q", i, p.EpisodeID, p.T, p.SystemPromptID, orchestra.ControllerSystemPromptID)
		}
		k := decisionKey{p.EpisodeID, p.T}
		if _, dup := texts[k]; dup {
			return nil, fmt.Errorf("prompts row %d: episode %s decision %d appears twice", i, p.EpisodeID, p.T)
		}
		texts[k] = p.UserMessage
	}
	return texts, nil
}
