package exact

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/config"
)

// setup opens the engine, the default configuration and a world of 2 families × 3 tasks × 3
// roles (small, so the default suite trains in seconds).
func setup(t *testing.T) (*gpu.Engine, *World, *config.Config) {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorld(2, 3, 3, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	e, err := gpu.OpenEngine("simplego")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, w, cfg
}

// TestTheTargetIsExact checks the enumeration: ρ's terminal distribution sums to one per task,
// P* ∝ ρ·R_β sums to one, and log R_β(E_ρ[r]) — what the measured anchor estimates — is the log
// partition function log Σ_x ρ(x)·R_β(r(x)) of P*, because R_β is affine in r.
func TestTheTargetIsExact(t *testing.T) {
	e, w, cfg := setup(t)
	l := gpu.NewLearner(gpu.OptionsFromConfig(cfg, w.StateWidth()), nil)
	tab, err := w.score(e, l)
	if err != nil {
		t.Fatal(err)
	}
	rho := w.terminal(tab, false)
	target := w.Target(rho, cfg.AnchorTB.Beta)
	if w.Histories() != 10 {
		t.Fatalf("%d histories, want 1 + 3 roles × 3", w.Histories())
	}
	var rewarded, unrewarded int
	for q := range rho {
		var sr, st, mean, z float64
		for i, p := range rho[q] {
			sr += p
			st += target[q][i]
			mean += p * w.Reward(q, i)
			z += p * math.Exp(gpu.LogRewardBeta(w.Reward(q, i), cfg.AnchorTB.Beta))
			if w.Reward(q, i) == 1 {
				rewarded++
			} else {
				unrewarded++
			}
		}
		if math.Abs(sr-1) > 1e-5 || math.Abs(st-1) > 1e-12 {
			t.Fatalf("task %d: ρ sums to %v, P* to %v", q, sr, st)
		}
		if d := math.Abs(gpu.LogRewardBeta(mean/sr, cfg.AnchorTB.Beta) - math.Log(z/sr)); d > 1e-12 {
			t.Fatalf("task %d: log R_β(E_ρ[r]) differs from log Z* by %g", q, d)
		}
	}
	if rewarded < 15 || unrewarded < 15 {
		t.Fatalf("rewards %d ones and %d zeros: the world should hold both in number", rewarded, unrewarded)
	}
	pt := w.measure(0, w.terminal(tab, true), rho, cfg.AnchorTB.Beta)
	if pt.TV != pt.TVRho || pt.TVRho < 0.2 || pt.RewardTarget < pt.RewardRho+0.2 {
		t.Fatalf("at step 0 θ = ρ and P* must be far from ρ: %+v", pt)
	}
}

// TestObjectivesMoveTowardTheirFixedPoints trains each objective for a short while with the
// default network and optimizer: AnchorTB and TB must close most of the distance from ρ to P*
// (the full curve, down to TV < 0.05, is `make exact`), PPO and GRPO must pass P*'s expected
// reward on their way to the maximum.
func TestObjectivesMoveTowardTheirFixedPoints(t *testing.T) {
	e, w, cfg := setup(t)
	for _, c := range []struct {
		objective string
		steps     int
	}{{"anchortb", 50}, {"tb", 50}, {"ppo", 20}, {"grpo", 30}} {
		cfg.Objective = c.objective
		curve, err := Train(context.Background(), e, w, cfg, c.steps, nil)
		if err != nil {
			t.Fatal(err)
		}
		last := curve[len(curve)-1]
		verdict, ok := Verdict(c.objective, curve)
		t.Logf("%s after %d steps: %s", c.objective, c.steps, verdict)
		switch c.objective {
		case "anchortb", "tb":
			if last.TV > 0.5*last.TVRho {
				t.Errorf("%s: TV(θ, P*) %.4f after %d steps, more than half of TV(ρ, P*) %.4f", c.objective, last.TV, c.steps, last.TVRho)
			}
		default:
			if last.RewardTheta <= last.RewardTarget || last.TV <= last.TVRho || !ok {
				t.Errorf("%s after %d steps: reward %.3f (P* %.3f), TV to P* %.4f (ρ %.4f): not past P* toward the maximum", c.objective, c.steps, last.RewardTheta, last.RewardTarget, last.TV, last.TVRho)
			}
		}
	}
}

// TestTrainIsDeterministic: the same configuration and seed give the same curve.
func TestTrainIsDeterministic(t *testing.T) {
	e, w, cfg := setup(t)
	a, err := Train(context.Background(), e, w, cfg, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Train(context.Background(), e, w, cfg, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("step %d: %+v then %+v", i, a[i], b[i])
		}
	}
	if _, err := NewWorld(1, 1, 1, 1); err == nil {
		t.Fatal("a world of one role was accepted")
	}
}

// TestVerdict reads the curves as stated: P* reached or not; past P* or not.
func TestVerdict(t *testing.T) {
	start := Point{TV: 0.35, TVRho: 0.35, RewardTheta: 0.5, RewardTarget: 0.86, RewardRho: 0.5, RewardMax: 1}
	at := func(step int, tv, reward float64) Point {
		p := start
		p.Step, p.TV, p.RewardTheta = step, tv, reward
		return p
	}
	for _, c := range []struct {
		objective string
		curve     []Point
		want      string
		ok        bool
	}{
		{"anchortb", []Point{start, at(1, 0.04, 0.85)}, "reaches P*", true},
		{"tb", []Point{start, at(1, 0.06, 0.85)}, "does NOT reach P*", false},
		{"grpo", []Point{start, at(1, 0.6, 0.98), at(2, 0.55, 0.85)}, "goes past P* toward the reward maximum: best reward 0.980 at step 1", true},
		{"ppo", []Point{start, at(1, 0.2, 0.8)}, "does NOT go past P*", false},
	} {
		got, ok := Verdict(c.objective, c.curve)
		if !strings.HasPrefix(got, c.want) || ok != c.ok {
			t.Errorf("%s: %q (ok %v), want it to start with %q (ok %v)", c.objective, got, ok, c.want, c.ok)
		}
	}
}
