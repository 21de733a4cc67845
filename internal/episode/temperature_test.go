package episode

import (
	"context"
	"math"
	"testing"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/policy"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/schema"
)

// playAt plays π_θ on two tasks per family with the orchestrator at temperature tau and returns
// the decisions with the network that scored them. It runs on the first world, whose hand-set
// prior spreads the untrained network's choices: the calibrated prior is so sure of most
// decisions that two dozen episodes may not show a temperature at all.
func playAt(t *testing.T, tau float64) ([]schema.DecisionRow, *gpu.Learner, *gpu.Engine) {
	t.Helper()
	cfg, err := config.Load("../../configs/world-v1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policy.Temperature = tau
	var jobs []Job
	for _, f := range cfg.Families {
		for _, task := range sim.Tasks(cfg.Sim, cfg.Seed, f, f, "train", 2) {
			jobs = append(jobs, Job{Task: task, ID: task.ID, Source: "current", Seed: 11, Theta: true})
		}
	}
	eng, err := gpu.OpenEngine("simplego")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	l := gpu.NewLearner(gpu.OptionsFromConfig(cfg, policy.StateWidth(len(cfg.Families))), nil)
	played, err := Play(context.Background(), cfg, sim.New(cfg.Sim, cfg.Seed), l, eng, jobs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var decs []schema.DecisionRow
	for _, p := range played {
		decs = append(decs, p.Decisions...)
	}
	return decs, l, eng
}

// policy.temperature τ is used: a network decision samples from log π/τ renormalised and records
// that distribution's log-probability of its choice as the behaviour log-probability (what the
// rescore check and the ratios of ppo and grpo divide by); τ = 1 samples π itself.
func TestSamplingTemperature(t *testing.T) {
	chosen := map[float64][]int32{}
	for _, tau := range []float64{1, 0.25} {
		decs, l, eng := playAt(t, tau)
		var rows []gpu.PolicyRow
		var sampled []schema.DecisionRow
		for i := range decs {
			if len(decs[i].LegalActions) > 1 && !decs[i].Forced {
				row, err := learner.PolicyRow(&decs[i], nil)
				if err != nil {
					t.Fatal(err)
				}
				rows, sampled = append(rows, row), append(sampled, decs[i])
			}
		}
		if len(rows) < 20 {
			t.Fatalf("τ = %g: only %d sampled decisions", tau, len(rows))
		}
		s, err := l.Policy.Score(eng, rows)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range sampled {
			logp := make([]float64, len(s.Theta[i]))
			for k, v := range s.Theta[i] {
				logp[k] = float64(v)
			}
			want := policy.Temper(logp, tau)[d.Chosen]
			if math.Abs(d.LogpBehavior-want) > 1e-9 {
				t.Fatalf("τ = %g: episode %s decision %d: behaviour log-prob %g, the tempered network gives %g (untempered %g)",
					tau, d.EpisodeID, d.T, d.LogpBehavior, want, logp[d.Chosen])
			}
			chosen[tau] = append(chosen[tau], d.Chosen)
		}
	}
	same := len(chosen[1]) == len(chosen[0.25])
	for i := 0; same && i < len(chosen[1]); i++ {
		same = chosen[1][i] == chosen[0.25][i]
	}
	if same {
		t.Fatal("τ = 0.25 chose exactly what τ = 1 chose")
	}
}
