package update

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/textrules"
	"github.com/evosteer/evosteer-go/schema"
)

// files are the inputs of one step's update.
type files struct {
	episodes, decisions          []string // rollout shards of the step
	scores, anchors, corrections string
	valueData                    []string // value_data of the replay window, oldest first; the step's last
	checkpoint                   string
	prompts                      []string // rollout shards' prompts: what the causal-LM policy reads
}

func findInputs(r *rundir.Folder, step int) (*files, error) {
	if step < 1 {
		return nil, fmt.Errorf("update: step must be >= 1, got %d", step)
	}
	f := &files{scores: filepath.Join(r.StageDir(step, layout.Rescore), layout.ScoresFile),
		anchors:     filepath.Join(r.StageDir(step, layout.Aggregate), layout.AnchorsFile),
		corrections: filepath.Join(r.StageDir(step, layout.Aggregate), layout.CorrectionsFile),
		checkpoint:  learner.Path(r, step-1)}
	tables := []string{layout.Episodes, layout.Decisions}
	if r.Config.Policy.IsCausalLM() {
		tables = append(tables, layout.Prompts)
	}
	rollout, err := r.ShardedInputs(step, layout.Rollout, tables...)
	if err != nil {
		return nil, err
	}
	f.episodes, f.decisions = rollout[0], rollout[1]
	if len(rollout) > 2 {
		f.prompts = rollout[2]
	}
	replay := r.Config.ValueHead.ReplaySteps
	for j := max(1, step-replay+1); j <= step; j++ {
		f.valueData = append(f.valueData, filepath.Join(r.StageDir(j, layout.Aggregate), layout.ValueDataFile))
	}
	return f, nil
}

// Paths implements rundir.Resolved: every input file.
func (f *files) Paths() []string {
	return slices.Concat(f.episodes, f.decisions, []string{f.scores, f.anchors, f.corrections, f.checkpoint}, f.valueData, f.prompts)
}

// Stage is the update stage.
type Stage struct{}

// Name is the stage's folder.
func (Stage) Name() string { return layout.Update }

// Inputs are the step's rollout (every shard), scores, anchors and corrections, the value data
// of the replay window and the previous step's checkpoint.
func (Stage) Inputs(r *rundir.Folder, step int) (rundir.Resolved, error) {
	return findInputs(r, step)
}

// Outputs are the losses, coefficients, metrics and the checkpoint.
func (Stage) Outputs(r *rundir.Folder, _ int) []string {
	return append([]string{layout.LossesFile, layout.CoefficientsFile, layout.UpdateMetricsFile}, learner.Outputs(r.Config)...)
}

// Run loads the inputs, updates the learner and writes the outputs into sc.OutDir.
func (Stage) Run(ctx context.Context, sc *rundir.StageContext) error {
	f := sc.Resolved.(*files)
	cfg := sc.Folder.Config
	l, err := learner.Load(sc.Folder, sc.Step-1)
	if err != nil {
		return err
	}
	var texts learner.Texts
	if learner.ReadsText(l) {
		if texts, err = learner.ReadTexts(f.prompts); err != nil {
			return fmt.Errorf("update: %w", err)
		}
	}
	b, err := loadBatch(cfg, f, int64(sc.Step), texts)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	eng, err := gpu.OpenEngine(cfg.Compute.Backend)
	if err != nil {
		return err
	}
	defer eng.Close()
	res, err := l.Update(eng, b.in)
	if err != nil {
		return err
	}
	return write(sc, cfg, l, b, res)
}

// batch is the update's input with the ids needed to write its outputs.
type batch struct {
	in       gpu.UpdateInput
	episodes []string // trajectory b's episode id
}

func loadBatch(cfg *config.Config, f *files, step int64, texts learner.Texts) (*batch, error) {
	eps, err := schema.ReadFiles[schema.EpisodeRow](schema.Episodes, f.episodes)
	if err != nil {
		return nil, err
	}
	decs, err := schema.ReadFiles[schema.DecisionRow](schema.Decisions, f.decisions)
	if err != nil {
		return nil, err
	}
	scores, err := schema.ReadFile[schema.ScoreRow](schema.Scores, f.scores)
	if err != nil {
		return nil, err
	}
	anchors, err := schema.ReadFile[schema.AnchorRow](schema.Anchors, f.anchors)
	if err != nil {
		return nil, err
	}
	corrections, err := schema.ReadFile[schema.CorrectionRow](schema.Corrections, f.corrections)
	if err != nil {
		return nil, err
	}
	type key struct {
		ep string
		t  int32
	}
	score := make(map[key]*schema.ScoreRow, len(scores))
	for i := range scores {
		score[key{scores[i].EpisodeID, scores[i].T}] = &scores[i]
	}
	corr := make(map[key]float64, len(corrections))
	for _, c := range corrections {
		corr[key{c.EpisodeID, c.T}] = c.Correction
	}
	anchor := make(map[string]float64, len(anchors))
	for _, a := range anchors {
		anchor[a.EpisodeID] = a.Anchor
	}
	byEpisode := map[string][]*schema.DecisionRow{}
	for i := range decs {
		byEpisode[decs[i].EpisodeID] = append(byEpisode[decs[i].EpisodeID], &decs[i])
	}

	b := &batch{in: gpu.UpdateInput{Step: step}}
	index := map[string]int{} // episode id -> trajectory
	for _, ep := range eps {
		if !ep.Healthy || !ep.Stopped {
			continue // excluded from learning
		}
		u, ok := anchor[ep.EpisodeID]
		if !ok {
			return nil, fmt.Errorf("update: %s: no anchor for episode %s", f.anchors, ep.EpisodeID)
		}
		ds := byEpisode[ep.EpisodeID]
		slices.SortFunc(ds, func(a, b *schema.DecisionRow) int { return cmp.Compare(a.T, b.T) })
		if len(ds) != int(ep.T) {
			return nil, fmt.Errorf("update: episode %s has T = %d but %d decisions", ep.EpisodeID, ep.T, len(ds))
		}
		tr := gpu.Trajectory{Task: ep.TaskID, Reward: ep.Reward, Anchor: u, Current: ep.Source == "current"}
		for i, d := range ds {
			if int(d.T) != i {
				return nil, fmt.Errorf("update: episode %s: decision %d is missing", ep.EpisodeID, i)
			}
			s, ok := score[key{d.EpisodeID, d.T}]
			if !ok {
				return nil, fmt.Errorf("update: %s has no score for episode %s decision %d; rerun rescore", f.scores, d.EpisodeID, d.T)
			}
			c, ok := corr[key{d.EpisodeID, d.T}]
			if !ok {
				return nil, fmt.Errorf("update: %s has no correction for episode %s decision %d; rerun aggregate", f.corrections, d.EpisodeID, d.T)
			}
			row, err := learner.PolicyRow(d, texts)
			if err != nil {
				return nil, fmt.Errorf("update: %w", err)
			}
			tr.Steps = append(tr.Steps, gpu.Step{Row: row, Chosen: int(d.Chosen), Features: d.Features, Correction: c,
				DeltaL: s.DeltaL, LogpTheta: s.LogpTheta, LogpBehavior: d.LogpBehavior, Tokens: int(textrules.Tokens(d.ActionJSON))})
		}
		index[ep.EpisodeID] = len(b.in.Trajectories)
		b.in.Trajectories = append(b.in.Trajectories, tr)
		b.episodes = append(b.episodes, ep.EpisodeID)
	}
	if len(b.in.Trajectories) == 0 {
		return nil, fmt.Errorf("update: step %d has no healthy, stopped episode to learn from", step)
	}
	for i, p := range f.valueData {
		rows, err := schema.ReadFile[schema.ValueRow](schema.ValueData, p)
		if err != nil {
			return nil, err
		}
		current := i == len(f.valueData)-1
		for r, v := range rows {
			if _, ok := cfg.TaskType(v.TaskType); !ok {
				return nil, fmt.Errorf("update: %s row %d: column \"task_type\": unknown task type %q", p, r, v.TaskType)
			}
			x := gpu.ValueInput(v.Features, orchestra.TaskTypeOneHot(cfg.Families, v.TaskType))
			b.in.ReplayX, b.in.ReplayY = append(b.in.ReplayX, x), append(b.in.ReplayY, float32(v.Label))
			if current {
				b.in.ValueX, b.in.ValueY = append(b.in.ValueX, x), append(b.in.ValueY, float32(v.Label))
				tr, ok := index[v.EpisodeID]
				if !ok {
					return nil, fmt.Errorf("update: %s row %d: episode %s is not a healthy episode of the step", p, r, v.EpisodeID)
				}
				b.in.OutcomeStates = append(b.in.OutcomeStates, gpu.StateRef{Traj: tr, T: int(v.T)})
			}
		}
	}
	return b, nil
}

func write(sc *rundir.StageContext, cfg *config.Config, l *gpu.Learner, b *batch, res *gpu.UpdateResult) error {
	lin := sc.Lineage()
	losses := make([]schema.LossRow, 0, len(b.episodes))
	var coefs []schema.CoefficientRow
	for i, id := range b.episodes {
		ep := res.Episodes[i]
		if !ep.Trained {
			continue // the objective does not train on it (ppo, grpo: not a current episode)
		}
		losses = append(losses, schema.LossRow{EpisodeID: id, Objective: cfg.Objective, T: int32(len(res.Steps[i])), Loss: ep.Loss, LossRho: ep.LossRho, LossAnchor: ep.LossAnchor})
		for t, c := range res.Steps[i] {
			coefs = append(coefs, schema.CoefficientRow{EpisodeID: id, T: int32(t), Flow: c.Flow, Measured: c.Measured, Residual: c.Residual, Coefficient: c.Coefficient})
		}
	}
	m := res.Metrics
	metrics := []schema.UpdateMetricsRow{{Objective: cfg.Objective, Trajectories: int64(m.Trajectories), TrainedTrajectories: int64(m.TrainedTrajectories),
		Decisions: int64(m.Decisions), BranchDecisions: int64(m.BranchDecisions), MeanReward: m.MeanReward,
		Loss: m.Loss, LossRho: m.LossRho, LossAnchor: m.LossAnchor, Gain: m.LossRho - m.Loss,
		PolicyKLCurrent: m.PolicyKLCurrent, PolicyAbsLogRatio: m.PolicyAbsLogRatio, GradNorm: m.GradNorm,
		ValueGradNorm: m.ValueGradNorm, OutcomeGradNorm: m.OutcomeGradNorm, ValueStates: int64(m.ValueStates), ValueLoss: m.ValueLoss, ValueFitLoss: m.ValueFitLoss,
		ValueFitStates: int64(m.ValueFitStates), ValueFitSteps: int64(m.ValueFitSteps), OutcomeLoss: m.OutcomeLoss,
		RescoreMismatch: m.RescoreMismatch, PolicySteps: int64(m.PolicySteps), CriticLoss: m.CriticLoss, CriticGradNorm: m.CriticGradNorm,
		PolicyForwardRows: int64(m.PolicyForwardRows), PolicyGradRows: int64(m.PolicyGradRows), HeadRows: int64(m.HeadRows),
		RowsPerEpisode: m.RowsPerEpisode(), PolicyVersion: l.PolicyVersion, ValueVersion: l.ValueVersion}}
	if err := writeRows(filepath.Join(sc.OutDir, layout.LossesFile), schema.Losses, lin, losses); err != nil {
		return err
	}
	if err := writeRows(filepath.Join(sc.OutDir, layout.CoefficientsFile), schema.Coefficients, lin, coefs); err != nil {
		return err
	}
	if err := writeRows(filepath.Join(sc.OutDir, layout.UpdateMetricsFile), schema.UpdateMetrics, lin, metrics); err != nil {
		return err
	}
	return learner.Write(filepath.Join(sc.OutDir, filepath.FromSlash(layout.CheckpointFile)), lin, l)
}

func writeRows[T any](path string, t *schema.Table, lin schema.Lineage, rows []T) error {
	rec, err := schema.Build(t, rows)
	if err != nil {
		return err
	}
	defer rec.Release()
	return t.WriteBatches(path, lin, rec)
}
