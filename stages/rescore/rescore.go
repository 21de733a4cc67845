package rescore

import (
	"context"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/schema"
)

// chunk is the number of decisions scored between cancellation checks (the network chunks them
// further by legal count).
const chunk = 4096

// Stage is the rescore stage.
type Stage struct{}

// Name is the stage's folder.
func (Stage) Name() string { return layout.Rescore }

// Inputs are the previous step's checkpoint and the step's rollout decisions and episodes (every
// shard), and the rollout's prompts where it keeps them (served_reference: the drift check;
// the causal-LM policy: what it reads).
func (Stage) Inputs(r *rundir.Folder, step int) (rundir.Resolved, error) {
	tables := []string{layout.Decisions, layout.Episodes}
	if r.Config.KeepsPrompts() {
		tables = append(tables, layout.Prompts)
	}
	files, err := r.ShardedInputs(step, layout.Rollout, tables...)
	if err != nil {
		return nil, err
	}
	in := &inputs{checkpoint: learner.Path(r, step-1), decisions: files[0], episodes: files[1]}
	if r.Config.KeepsPrompts() {
		in.prompts = files[2]
	}
	return in, nil
}

// inputs are the previous step's checkpoint and the step's rollout decisions, episodes and
// (config.KeepsPrompts) prompts, every shard.
type inputs struct {
	checkpoint                   string
	decisions, episodes, prompts []string
}

// Paths implements rundir.Resolved.
func (in *inputs) Paths() []string {
	return slices.Concat([]string{in.checkpoint}, in.decisions, in.episodes, in.prompts)
}

// Outputs is the scores table, and with served_reference the drift of the re-queried ρ.
func (Stage) Outputs(r *rundir.Folder, _ int) []string {
	if r.Config.Served != nil {
		return []string{layout.ScoresFile, layout.RhoDriftFile}
	}
	return []string{layout.ScoresFile}
}

// Run scores every decision and writes the scores table into sc.OutDir. It fails when a sampled
// decision's rescored log-probability differs from its behaviour log-probability by more than
// learner.MaxBehaviorMismatch. With served_reference it also re-queries the server for a sample
// of the scored decisions and writes their drift (rho_drift), failing past
// served_reference.drift_tolerance; log π_ρ is still rescored from the stored prior_logits.
func (Stage) Run(ctx context.Context, sc *rundir.StageContext) error {
	cfg := sc.Folder.Config
	in := sc.Resolved.(*inputs)
	decisionFiles, episodeFiles := in.decisions, in.episodes
	l, err := learner.Load(sc.Folder, sc.Step-1)
	if err != nil {
		return err
	}
	eng, err := gpu.OpenEngine(cfg.Compute.Backend)
	if err != nil {
		return err
	}
	defer eng.Close()
	eps, err := schema.ReadFiles[schema.EpisodeRow](schema.Episodes, episodeFiles)
	if err != nil {
		return err
	}
	source := make(map[string]string, len(eps))
	for _, ep := range eps {
		source[ep.EpisodeID] = ep.Source
	}
	decs, err := schema.ReadFiles[schema.DecisionRow](schema.Decisions, decisionFiles)
	if err != nil {
		return err
	}
	var texts learner.Texts
	if learner.ReadsText(l) {
		if texts, err = learner.ReadTexts(in.prompts); err != nil {
			return fmt.Errorf("rescore: %w", err)
		}
	}
	mismatch := map[string]float64{}
	scores := make([]schema.ScoreRow, len(decs))
	for lo := 0; lo < len(decs); lo += chunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi := min(lo+chunk, len(decs))
		rows := make([]gpu.PolicyRow, hi-lo)
		for i := range rows {
			if rows[i], err = learner.PolicyRow(&decs[lo+i], texts); err != nil {
				return fmt.Errorf("rescore: %w", err)
			}
		}
		s, err := l.Policy.Score(eng, rows)
		if err != nil {
			return fmt.Errorf("rescore: decisions %d..%d: %w", lo, hi-1, err)
		}
		for i := range rows {
			d := &decs[lo+i]
			src, ok := source[d.EpisodeID]
			if !ok {
				return fmt.Errorf("rescore: decision %d of episode %s: the episode is not in the step's episodes", d.T, d.EpisodeID)
			}
			lt, lr := float64(s.Theta[i][d.Chosen]), float64(s.Rho[i][d.Chosen])
			scores[lo+i] = schema.ScoreRow{EpisodeID: d.EpisodeID, T: d.T, LogpTheta: lt, LogpRho: lr, DeltaL: lt - lr,
				LegalCount: int32(len(d.LegalActions)), ThetaVersion: l.PolicyVersion}
			if d.Forced {
				continue // finalisation or a paired arm's forced first action: not sampled
			}
			// The rollout sampled from the network's log-probabilities at policy.temperature.
			all := s.Rho[i]
			if src == "current" {
				all = s.Theta[i]
			}
			behavior := tempered(all, cfg.Policy.Temperature)[d.Chosen]
			mismatch[src] = math.Max(mismatch[src], relativeMismatch(behavior, d.LogpBehavior))
		}
	}
	for _, src := range slices.Sorted(maps.Keys(mismatch)) {
		if m := mismatch[src]; m > learner.MaxBehaviorMismatch {
			return fmt.Errorf("rescore: %s decisions: rescored log-probabilities differ from the behaviour log-probabilities by up to %.3g relative (> %g): the rollout of step %d was not sampled from the checkpoint of step %d; rerun the rollout",
				src, m, learner.MaxBehaviorMismatch, sc.Step, sc.Step-1)
		}
	}
	if sr := cfg.Served; sr != nil {
		rows, err := drift(ctx, sr, sc.Seed, in.prompts, decs)
		if err != nil {
			return err
		}
		if err := schema.WriteRows(schema.RhoDrift, filepath.Join(sc.OutDir, layout.RhoDriftFile), sc.Lineage(), rows); err != nil {
			return err
		}
	}
	return schema.WriteRows(schema.Scores, filepath.Join(sc.OutDir, layout.ScoresFile), sc.Lineage(), scores)
}

// relativeMismatch is |rescored − behaviour| / max(1, |behaviour|).
func relativeMismatch(rescored, behavior float64) float64 {
	return math.Abs(rescored-behavior) / math.Max(1, math.Abs(behavior))
}

// tempered is the distribution the rollout sampled a network decision from: the scored
// log-probabilities at the orchestrator's temperature (policy.Temper), in float64.
func tempered(logp []float32, tau float64) []float64 {
	out := make([]float64, len(logp))
	for i, v := range logp {
		out[i] = float64(v)
	}
	return policy.Temper(out, tau)
}
