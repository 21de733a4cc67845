package learner

import (
	"context"
	"os"
	"path/filepath"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/skills"
)

// Initial is the stage that writes the untrained learner (π_θ = ρ, b_ψ = 0, fresh heads) as a
// step's checkpoint, in the update stage's folder: `evosteer init` runs it for step 0; tests run
// it for a later step to roll out the next one without training.
type Initial struct{}

// Name is the update stage's folder, which holds a step's checkpoint.
func (Initial) Name() string { return layout.Update }

// Inputs are the training tasks (the free anchors of the measured-flows ablation).
func (Initial) Inputs(r *rundir.Folder, _ int) (rundir.Resolved, error) {
	return rundir.Files{r.TasksPath("train")}, nil
}

// Outputs is the checkpoint.
func (Initial) Outputs(r *rundir.Folder, _ int) []string { return Outputs(r.Config) }

// Run writes the untrained learner.
func (Initial) Run(_ context.Context, sc *rundir.StageContext) error {
	l, err := New(sc.Folder)
	if err != nil {
		return err
	}
	return Write(filepath.Join(sc.OutDir, filepath.FromSlash(layout.CheckpointFile)), sc.Lineage(), l)
}

// LatestStep is the last step whose update checkpoint exists (0 when none).
func LatestStep(r *rundir.Folder) int {
	k := 0
	for {
		if _, err := os.Stat(Path(r, k+1)); err != nil {
			return k
		}
		k++
	}
}

// Frozen is what a step leaves to be played with: the learner of step (θ with its published
// value head; step 0's is the untrained learner, π_θ = ρ) and the skill library after step (the
// one the rollout of step+1 freezes; its Menu(task type) is a task's menu).
func Frozen(r *rundir.Folder, step int) (*gpu.Learner, *skills.Library, error) {
	l, err := Load(r, step)
	if err != nil {
		return nil, nil, err
	}
	lib, err := skills.LoadLibrary(r, step+1)
	if err != nil {
		return nil, nil, err
	}
	return l, lib, nil
}

// MaxBehaviorMismatch bounds |rescored − behaviour| / max(1, |behaviour|) for the log-probability
// of a sampled decision: the same float32 network on the same inputs. On simplego every row's
// scores are independent of its batch (the engine scores with gpu's plain-Go kernels there), so
// the two agree exactly;
// the bound leaves room for backends (XLA) whose kernels depend on the batch shape.
const MaxBehaviorMismatch = 1e-5
