package probe

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/schema"
)

// MinTargetEpisodes is how many trained episodes of a family must have taken a first action for
// the action's loss target to be reported: fewer give a mean too noisy to regress on.
const MinTargetEpisodes = 20

// DefaultTargetWindow is how many training steps, ending at the probed one, the loss targets
// average over: the later half of a 120-step run, where θ has settled.
const DefaultTargetWindow = 60

// cell is a family's first action.
type cell struct{ family, action string }

// lossTarget is the mean of τ over the episodes of a cell.
type lossTarget struct {
	sum float64
	n   int
}

// lossTargets returns, per (family, first action), AnchorTB's own target for log(θ/ρ) of that
// action over the trained episodes of steps [step−window+1, step]: the mean of
//
//	τ = Δℓ_0 − (T+1)·Γ_0/4,
//
// because AnchorTB's first-decision coefficient is exactly Γ_0 = 4/(T+1)·(Δℓ_0 − τ) with τ the
// mean over j = 1..T of F_j − Σ_{1≤t<j} Δℓ_t, less F_0 (docs/METHOD.md §4.1,
// gpu.TestAnchorTBFirstDecisionTarget): the gradient pulls each episode's first log-ratio toward
// its τ. Γ_0 comes from the update's coefficients (one row per trained decision), Δℓ_0 from the
// step's scores, T from the episodes. Nil under any other objective, whose coefficients mean
// something else.
func lossTargets(r *rundir.Folder, step, window int) (map[cell]*lossTarget, error) {
	if r.Config.Objective != "anchortb" || step < 1 || window < 1 {
		return nil, nil
	}
	out := map[cell]*lossTarget{}
	for j := max(1, step-window+1); j <= step; j++ {
		if err := addTargets(r, j, out); err != nil {
			return nil, fmt.Errorf("loss targets of step %d: %w", j, err)
		}
	}
	return out, nil
}

// addTargets adds step j's trained episodes to the cells.
func addTargets(r *rundir.Folder, j int, out map[cell]*lossTarget) error {
	type first struct {
		family, action string
		T              int32
		deltaL         float64
		hasAction      bool // its decision t = 0 was read
		hasDelta       bool // and its score
	}
	eps := map[string]*first{}
	shards, err := r.ShardedInputs(j, layout.Rollout, layout.Episodes, layout.Decisions)
	if err != nil {
		return err
	}
	scoresPath := filepath.Join(r.StageDir(j, layout.Rescore), layout.ScoresFile)
	coefPath := filepath.Join(r.StageDir(j, layout.Update), layout.CoefficientsFile)
	if _, err := r.VerifyInputs(append(slices.Concat(shards...), scoresPath, coefPath)); err != nil {
		return err
	}
	episodes, err := schema.ReadFiles[schema.EpisodeRow](schema.Episodes, shards[0])
	if err != nil {
		return err
	}
	for _, e := range episodes {
		eps[e.EpisodeID] = &first{family: e.Family, T: e.T}
	}
	decisions, err := schema.ReadFiles[schema.DecisionRow](schema.Decisions, shards[1])
	if err != nil {
		return err
	}
	for _, d := range decisions {
		if e := eps[d.EpisodeID]; d.T == 0 && e != nil {
			e.action, e.hasAction = d.ActionJSON, true
		}
	}
	scores, err := schema.ReadFile[schema.ScoreRow](schema.Scores, scoresPath)
	if err != nil {
		return err
	}
	for _, s := range scores {
		if e := eps[s.EpisodeID]; s.T == 0 && e != nil {
			e.deltaL, e.hasDelta = s.DeltaL, true
		}
	}
	coefs, err := schema.ReadFile[schema.CoefficientRow](schema.Coefficients, coefPath)
	if err != nil {
		return err
	}
	for i, c := range coefs {
		if c.T != 0 {
			continue
		}
		e := eps[c.EpisodeID]
		if e == nil || !e.hasAction || !e.hasDelta {
			return fmt.Errorf("%s row %d: episode %s has no first decision or score in step %d", coefPath, i, c.EpisodeID, j)
		}
		k := cell{e.family, e.action}
		if out[k] == nil {
			out[k] = &lossTarget{}
		}
		out[k].sum += e.deltaL - float64(e.T+1)*c.Coefficient/4
		out[k].n++
	}
	return nil
}

// setLossTargets fills each row's loss target from its family's cell of its action (null below
// MinTargetEpisodes).
func setLossTargets(rows []schema.ProbeRow, targets map[cell]*lossTarget) {
	for i := range rows {
		lt := targets[cell{rows[i].Family, rows[i].ActionJSON}]
		if lt == nil {
			continue
		}
		rows[i].LossTargetN = int32(lt.n)
		if lt.n >= MinTargetEpisodes {
			v := lt.sum / float64(lt.n)
			rows[i].LossTarget = &v
		}
	}
}
