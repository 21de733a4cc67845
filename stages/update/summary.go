package update

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/schema"
)

// Summary describes a step's update: its metrics row, the gradient clip it ran under and the
// stage's wall time (from the step's manifest).
type Summary struct {
	Step     int
	Metrics  schema.UpdateMetricsRow
	GradClip float64
	WallMS   int64
}

// Summary reads the step's update back (Summarize).
func (Stage) Summary(ctx context.Context, r *rundir.Folder, step int) (rundir.Summary, error) {
	return rundir.AsSummary(Summarize(ctx, r, step))
}

// Summarize reads step's update_metrics.arrow and the stage's record in the step's manifest.
func Summarize(_ context.Context, r *rundir.Folder, step int) (*Summary, error) {
	path := filepath.Join(r.StageDir(step, layout.Update), layout.UpdateMetricsFile)
	rows, err := schema.ReadFile[schema.UpdateMetricsRow](schema.UpdateMetrics, path)
	if err != nil {
		return nil, err
	}
	if len(rows) != 1 {
		return nil, fmt.Errorf("%s: %d rows, want 1", r.Rel(path), len(rows))
	}
	m, err := r.ReadManifest(step)
	if err != nil {
		return nil, err
	}
	return &Summary{Step: step, Metrics: rows[0], GradClip: r.Config.Optimizer.GradClip, WallMS: m.Stages[layout.Update].WallMS}, nil
}

// Write prints the losses, the policy step, the value head and the work per episode.
func (s *Summary) Write(w io.Writer) error {
	m := s.Metrics
	_, err := fmt.Fprintf(w, `update step %d: %d trajectories (%d trained on), %d decisions (%d with a choice), mean reward %.3f
  %s loss %.4f  reference level (Δℓ = 0) %.4f  anchor-only level %.4f  gain %+.4f
  policy: mean Δℓ on current decisions %+.4f, mean |Δℓ| %.4f, gradient norm %.3g (clip %g), %d steps
  value head: MSE %.4f on the step's %d states, %.4f on the replay window after %d steps
  compute: %.1f network rows and %.2f ms of stage wall per episode
`, s.Step, m.Trajectories, m.TrainedTrajectories, m.Decisions, m.BranchDecisions, m.MeanReward, m.Objective, m.Loss, m.LossRho, m.LossAnchor, m.Gain,
		m.PolicyKLCurrent, m.PolicyAbsLogRatio, m.GradNorm, s.GradClip, m.PolicySteps, m.ValueLoss, m.ValueStates, m.ValueFitLoss, m.ValueFitSteps,
		m.RowsPerEpisode, float64(s.WallMS)/float64(max(m.Trajectories, 1)))
	return err
}
