package rescore

import (
	"context"
	"fmt"
	"math"
	"path/filepath"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/schema"
)

// Name is the stage's folder name; File the table it writes.
const (
	Name         = "rescore"
	File         = "scores.arrow"
	rolloutStage = "rollout"
	// chunk is the number of decisions scored between cancellation checks (the network chunks
	// them further by legal count).
	chunk = 4096
)

// Summary is what a rescore found.
type Summary struct {
	Decisions, Episodes int
	ThetaVersion        int64
	// MaxMismatch is the largest |rescored − behaviour| log-probability over sampled
	// decisions, per source.
	MaxMismatch map[string]float64
	// MeanAbsDeltaL is the mean |Δℓ| over decisions with more than one legal action.
	MeanAbsDeltaL float64
}

// inputs lists the step's rollout files (all shards) and the previous checkpoint.
func inputs(r *rundir.Run, step int) (decisions, episodes []string, err error) {
	dir := r.StageDir(step, rolloutStage)
	if decisions, err = rundir.Shards(dir, "decisions"); err != nil {
		return nil, nil, err
	}
	if episodes, err = rundir.Shards(dir, "episodes"); err != nil {
		return nil, nil, err
	}
	if len(decisions) == 0 || len(decisions) != len(episodes) {
		return nil, nil, fmt.Errorf("step %d has no complete rollout in %s (%d decisions and %d episodes files); run `evosteer rollout --step %d` first",
			step, r.Rel(dir), len(decisions), len(episodes), step)
	}
	return decisions, episodes, nil
}

// Stage returns the rescore stage of one step. A missing rollout makes the stage fail when it
// runs, naming what to run first.
func Stage(r *rundir.Run, step int, sum *Summary) rundir.Stage {
	decisions, episodes, inErr := inputs(r, step)
	st := rundir.Stage{Name: Name, Inputs: []string{r.Rel(learner.Path(r, step-1))}}
	for _, p := range append(append([]string{}, decisions...), episodes...) {
		st.Inputs = append(st.Inputs, r.Rel(p))
	}
	st.Run = func(ctx context.Context, sc *rundir.StageContext) error {
		if inErr != nil {
			return inErr
		}
		s, err := Run(ctx, sc, decisions, episodes)
		if err == nil && sum != nil {
			*sum = *s
		}
		return err
	}
	if inErr != nil {
		st.Inputs = nil // let the stage run and report the problem
	}
	return st
}

// Run scores every decision and writes the scores table into sc.OutDir.
func Run(ctx context.Context, sc *rundir.StageContext, decisionFiles, episodeFiles []string) (*Summary, error) {
	cfg := sc.Run.Config
	l, err := learner.Load(sc.Run, sc.Step-1)
	if err != nil {
		return nil, err
	}
	eng, err := gpu.OpenEngine(cfg.Compute.Backend)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	eps, err := schema.ReadFiles[schema.EpisodeRow](schema.Episodes, episodeFiles)
	if err != nil {
		return nil, err
	}
	source := make(map[string]string, len(eps))
	for _, ep := range eps {
		source[ep.EpisodeID] = ep.Source
	}
	decs, err := schema.ReadFiles[schema.DecisionRow](schema.Decisions, decisionFiles)
	if err != nil {
		return nil, err
	}
	sum := &Summary{Decisions: len(decs), Episodes: len(eps), ThetaVersion: l.PolicyVersion, MaxMismatch: map[string]float64{}}
	scores := make([]schema.ScoreRow, len(decs))
	var absSum float64
	var branch int
	for lo := 0; lo < len(decs); lo += chunk {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := min(lo+chunk, len(decs))
		rows := make([]gpu.PolicyRow, hi-lo)
		for i := range rows {
			if rows[i], err = learner.PolicyRow(&decs[lo+i]); err != nil {
				return nil, fmt.Errorf("rescore: %w", err)
			}
		}
		s, err := l.Policy.Score(eng, rows)
		if err != nil {
			return nil, fmt.Errorf("rescore: decisions %d..%d: %w", lo, hi-1, err)
		}
		for i := range rows {
			d := &decs[lo+i]
			src, ok := source[d.EpisodeID]
			if !ok {
				return nil, fmt.Errorf("rescore: decision %d of episode %s: the episode is not in the step's episodes", d.T, d.EpisodeID)
			}
			lt, lr := float64(s.Theta[i][d.Chosen]), float64(s.Rho[i][d.Chosen])
			scores[lo+i] = schema.ScoreRow{EpisodeID: d.EpisodeID, T: d.T, LogpTheta: lt, LogpRho: lr, DeltaL: lt - lr,
				LegalCount: int32(len(d.LegalActions)), ThetaVersion: l.PolicyVersion}
			if len(d.LegalActions) > 1 {
				branch++
				absSum += math.Abs(lt - lr)
			}
			if d.Forced {
				continue // finalisation or a paired arm's forced first action: not sampled
			}
			// The rollout sampled from the network's log-probabilities at policy.temperature.
			all := s.Rho[i]
			if src == "current" {
				all = s.Theta[i]
			}
			behavior := tempered(all, cfg.Policy.Temperature)[d.Chosen]
			sum.MaxMismatch[src] = math.Max(sum.MaxMismatch[src], math.Abs(behavior-d.LogpBehavior)/math.Max(1, math.Abs(d.LogpBehavior)))
		}
	}
	if branch > 0 {
		sum.MeanAbsDeltaL = absSum / float64(branch)
	}
	for src, m := range sum.MaxMismatch {
		if m > learner.MaxBehaviorMismatch {
			return nil, fmt.Errorf("rescore: %s decisions: rescored log-probabilities differ from the behaviour log-probabilities by up to %.3g relative (> %g): the rollout of step %d was not sampled from the checkpoint of step %d; rerun the rollout",
				src, m, learner.MaxBehaviorMismatch, sc.Step, sc.Step-1)
		}
	}
	rec, err := schema.Build(schema.Scores, scores)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	return sum, schema.Scores.WriteBatches(filepath.Join(sc.OutDir, File), sc.Lineage(), rec)
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
