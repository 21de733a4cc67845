package pipeline

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/episode"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// learningConfig is the simulated world of the learning test: two families, a reference that
// picks the first agent's role uniformly, and a finalizer that cannot solve anything alone, so
// that one early decision has a large and learnable effect (ρ starts one episode in six with a
// lost cause). Skills are off to keep the test to the AnchorTB loop; the network and optimizer
// are the defaults.
const learningConfig = `families: [medqa, nq_open]
ood_families: {gpqa_diamond: medqa, triviaqa: nq_open}
ablations: [skill-evolution]
reference_prior:
  add_solver_to_empty_team: 0.0
  add_tool_agent_to_empty_team: 0.0
sim:
  roles:
    finalizer:
      offset: -6.0
tasks:
  train_per_family: 64
  test_per_family: 300
`

// TestAnchorTBLearnsOnTheSimulatedWorld trains 30 AnchorTB steps and checks that learning
// happened where the world rewards it: the loss of the last steps is below the reference level
// (every Δℓ = 0), π_θ gives the lost-cause first action less probability than ρ does in both
// families, and, on 600 held-out tasks played by θ and ρ with the same episode seeds, θ's mean
// reward is higher by more than three standard errors of the paired difference.
func TestAnchorTBLearnsOnTheSimulatedWorld(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: trains 30 steps (about two minutes on 2 cores)")
	}
	cfg, err := config.Parse("learning test", []byte(learningConfig))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := Init(ctx, filepath.Join(t.TempDir(), "learn"), cfg, "test", func(r *rundir.Folder) error {
		lin := schema.Lineage{Run: "learn", Stage: "init", ConfigSHA256: cfg.SHA256()}
		for _, split := range []struct {
			name string
			n    int
		}{{"train", cfg.Tasks.TrainPerFamily}, {"test", cfg.Tasks.TestPerFamily}} {
			var ts []tasks.Task
			for _, f := range cfg.Families {
				ts = append(ts, sim.Tasks(cfg.Sim, cfg.Seed, f, f, split.name, split.n)...)
			}
			if err := tasks.WriteFile(r.TasksPath(split.name), lin, ts); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const steps = 30
	if err := Train(ctx, r, steps, false, nil); err != nil {
		t.Fatal(err)
	}
	var loss, lossRho float64
	for k := steps - 9; k <= steps; k++ {
		m, err := schema.ReadFile[schema.UpdateMetricsRow](schema.UpdateMetrics, filepath.Join(r.StageDir(k, layout.Update), layout.UpdateMetricsFile))
		if err != nil {
			t.Fatal(err)
		}
		loss += m[0].Loss / 10
		lossRho += m[0].LossRho / 10
	}
	t.Logf("mean of the last 10 steps: loss %.4f, reference level %.4f", loss, lossRho)
	if !(loss < lossRho) {
		t.Errorf("loss %.4f is not below the reference level %.4f over the last 10 steps", loss, lossRho)
	}

	l, err := learner.Load(r, steps)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := gpu.OpenEngine("simplego")
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	test, err := tasks.ReadFile(r.TasksPath("test"))
	if err != nil {
		t.Fatal(err)
	}
	exec, err := episode.NewExecutor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := skills.NewLibrary(cfg.Admission, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Both policies on the same tasks with the same seeds.
	var jobs []episode.Job
	for _, theta := range []bool{true, false} {
		for _, task := range test {
			jobs = append(jobs, episode.Job{Task: task, ID: fmt.Sprintf("%v/%s", theta, task.ID), Source: fmt.Sprint(theta),
				Seed: seed.Derive(cfg.Seed, "learning-test", task.ID), Theta: theta, Menu: lib.Menu(task.Family)})
		}
	}
	played, err := episode.Play(ctx, cfg, exec, l, eng, jobs, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := len(test)
	var diff, sq float64
	first := map[bool]map[string]float64{true: {}, false: {}}
	for i := range n {
		d := played[i].Episode.Reward - played[n+i].Episode.Reward
		diff += d
		sq += d * d
		for k, theta := range []bool{true, false} {
			a, _ := orchestra.ParseAction(played[k*n+i].Decisions[0].ActionJSON)
			first[theta][played[k*n+i].Episode.Family+"/"+a.RoleID]++
		}
	}
	mean := diff / float64(n)
	se := math.Sqrt((sq/float64(n) - mean*mean) / float64(n))
	for _, f := range cfg.Families {
		t.Logf("%s: finalizer first θ %v of %d, ρ %v of %d", f, first[true][f+"/finalizer"], n/2, first[false][f+"/finalizer"], n/2)
		if !(first[true][f+"/finalizer"] < first[false][f+"/finalizer"]) {
			t.Errorf("%s: θ starts with the finalizer %v times, ρ %v", f, first[true][f+"/finalizer"], first[false][f+"/finalizer"])
		}
	}
	t.Logf("held-out reward: θ − ρ = %+.4f ± %.4f (paired, %d tasks)", mean, se, n)
	if !(mean > 3*se) {
		t.Errorf("θ − ρ = %+.4f on the same held-out tasks, not above 3 standard errors (%.4f)", mean, 3*se)
	}
}
