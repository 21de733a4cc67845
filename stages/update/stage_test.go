//go:build duckdb_arrow

package update_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/pipeline"
	"github.com/evosteer/evosteer-go/schema"
	"github.com/evosteer/evosteer-go/stages/update"
)

// newRun initialises a run of the objective on the simulated world with a few tasks per family
// and writes its untrained learner as step 0's checkpoint.
func newRun(t *testing.T, objective string) *rundir.Folder {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Objective, cfg.Batch.Tasks, cfg.Rollout.Workers = objective, 12, 2
	r, err := rundir.Init(filepath.Join(t.TempDir(), "run"), cfg, "test", func(r *rundir.Folder) error {
		var ts []tasks.Task
		for _, f := range cfg.Families {
			ts = append(ts, sim.Tasks(cfg.Sim, cfg.Seed, f, f, "train", 8)...)
		}
		return tasks.WriteFile(r.TasksPath("train"), schema.Lineage{Run: "run", Stage: "init", ConfigSHA256: cfg.SHA256()}, ts)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RunStage(context.Background(), 0, learner.Initial{}, false); err != nil {
		t.Fatal(err)
	}
	return r
}

// step runs the stages of step k up to and including update, each built when its turn comes.
func step(t *testing.T, r *rundir.Folder, k int) {
	t.Helper()
	for _, st := range pipeline.Stages {
		if _, err := r.RunStage(context.Background(), k, st, false); err != nil {
			t.Fatal(err)
		}
	}
}

func outputs(t *testing.T, r *rundir.Folder, k int) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, name := range (update.Stage{}).Outputs(r, k) {
		b, err := os.ReadFile(filepath.Join(r.StageDir(k, layout.Update), name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	return out
}

// Every objective runs as a stage on real rollout output: the losses cover exactly the episodes
// it trains on (all healthy ones; ppo and grpo: the current ones), the metrics hold the objective,
// its policy steps and the work per episode, the next step loads the checkpoint (log Z, backward
// logits, critic), and a forced rerun writes the same bytes.
func TestStageObjectives(t *testing.T) {
	for _, obj := range []string{"tb", "ttb", "ppo", "grpo"} {
		t.Run(obj, func(t *testing.T) {
			r := newRun(t, obj)
			step(t, r, 1)
			eps, err := schema.ReadFile[schema.EpisodeRow](schema.Episodes, filepath.Join(r.StageDir(1, layout.Rollout), layout.File(layout.Episodes)))
			if err != nil {
				t.Fatal(err)
			}
			want, healthy := map[string]bool{}, 0
			for _, ep := range eps {
				if ep.Healthy && ep.Stopped {
					healthy++
					if (obj != "ppo" && obj != "grpo") || ep.Source == "current" {
						want[ep.EpisodeID] = true
					}
				}
			}
			losses, err := schema.ReadFile[schema.LossRow](schema.Losses, filepath.Join(r.StageDir(1, layout.Update), layout.LossesFile))
			if err != nil {
				t.Fatal(err)
			}
			if len(losses) != len(want) || len(want) == 0 {
				t.Fatalf("%d loss rows, want %d", len(losses), len(want))
			}
			for _, l := range losses {
				if !want[l.EpisodeID] || l.Objective != obj || l.LossAnchor != l.LossRho {
					t.Fatalf("loss row %+v", l)
				}
			}
			met, err := schema.ReadFile[schema.UpdateMetricsRow](schema.UpdateMetrics, filepath.Join(r.StageDir(1, layout.Update), layout.UpdateMetricsFile))
			if err != nil {
				t.Fatal(err)
			}
			m := met[0]
			steps := int64(1)
			if obj == "ppo" || obj == "grpo" {
				steps = int64(r.Config.Comparison.Epochs)
			}
			rows := float64(m.PolicyForwardRows+m.PolicyGradRows+m.HeadRows) / float64(m.Trajectories)
			if m.Objective != obj || m.Trajectories != int64(healthy) || m.TrainedTrajectories != int64(len(want)) ||
				m.PolicySteps != steps || m.PolicyGradRows == 0 || m.RowsPerEpisode != rows || (obj == "ppo") != (m.CriticLoss > 0) {
				t.Fatalf("metrics %+v", m)
			}
			sum, err := update.Summarize(context.Background(), r, 1)
			if err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			if err := sum.Write(&text); err != nil || sum.Metrics != m || !strings.Contains(text.String(), fmt.Sprintf("update step 1: %d trajectories (%d trained on)", healthy, len(want))) ||
				!strings.Contains(text.String(), fmt.Sprintf("  %s loss %.4f", obj, m.Loss)) || !strings.Contains(text.String(), "(clip 1)") {
				t.Errorf("summary %v:\n%s", err, text.String())
			}
			before := outputs(t, r, 1)
			if _, err := r.RunStage(context.Background(), 1, update.Stage{}, true); err != nil {
				t.Fatal(err)
			}
			for name, b := range outputs(t, r, 1) {
				if !bytes.Equal(b, before[name]) {
					t.Errorf("%s differs between two runs of the same update", name)
				}
			}
			step(t, r, 2)
			l, err := learner.Load(r, 2)
			if err != nil {
				t.Fatal(err)
			}
			if l.PolicyVersion != 2 || l.PolicyGroup.Step != 2*steps {
				t.Fatalf("after step 2: policy version %d, %d policy steps", l.PolicyVersion, l.PolicyGroup.Step)
			}
		})
	}
}
