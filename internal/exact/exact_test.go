package exact

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/config"
)

// setup opens the engine, the default configuration and a world of 2 families × 3 tasks × 3
// roles (small, so the default suite trains in seconds), noisy or not.
func setup(t *testing.T, rewardNoise bool) (*gpu.Engine, *World, *config.Config) {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorld(2, 3, 3, cfg.Seed, rewardNoise)
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
	e, w, cfg := setup(t, false)
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
	if d := maxDiff(w.TargetKL(rho, cfg.AnchorTB.Beta), target); d > 1e-12 || pt.TVKL != pt.TV {
		t.Fatalf("with deterministic rewards P_KL is P*: they differ by %g, TVs %v and %v", d, pt.TVKL, pt.TV)
	}
}

// TestTheNoisyWorldsTargets checks the noisy world against its definition: each episode's reward
// is a draw with the history's success probability, P* ∝ ρ·E[R_β] and P_KL ∝ ρ·exp(β·E[r]) are
// different distributions, and P_KL is the maximiser of J(q) = E_q[β·r] − KL(q‖ρ), with maximum
// log Σ_x ρ(x)·exp(β·E[r(x)]) (the Gibbs variational identity), which P* and ρ fall short of.
func TestTheNoisyWorldsTargets(t *testing.T) {
	e, w, cfg := setup(t, true)
	beta := 4.0
	l := gpu.NewLearner(gpu.OptionsFromConfig(cfg, w.StateWidth()), nil)
	tab, err := w.score(e, l)
	if err != nil {
		t.Fatal(err)
	}
	rho := w.terminal(tab, false)
	star, kl := w.Target(rho, beta), w.TargetKL(rho, beta)
	if d := maxDiff(star, kl); d < 0.01 {
		t.Fatalf("P* and P_KL differ by at most %g: the noisy world should separate them", d)
	}
	j := func(q int, dist []float64) float64 {
		v := 0.0
		for i, p := range dist {
			if p > 0 {
				v += p * (beta*w.Reward(q, i) - math.Log(p/rho[q][i]))
			}
		}
		return v
	}
	for q := range rho {
		z := 0.0
		for i, p := range rho[q] {
			z += p * math.Exp(beta*w.Reward(q, i))
		}
		if d := math.Abs(j(q, kl[q]) - math.Log(z)); d > 1e-9 {
			t.Fatalf("task %d: J(P_KL) differs from log Σ ρ·exp(β·E[r]) by %g", q, d)
		}
		if j(q, star[q]) >= j(q, kl[q])-1e-6 || j(q, rho[q]) >= j(q, kl[q])-1e-6 {
			t.Fatalf("task %d: J(P*) %v and J(ρ) %v should fall short of J(P_KL) %v", q, j(q, star[q]), j(q, rho[q]), j(q, kl[q]))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const draws = 20000
	for _, i := range []int{1, 5, w.Histories() - 1} {
		ones := 0.0
		for range draws {
			ones += w.draw(0, i, rng)
		}
		if p := w.Reward(0, i); p <= 0 || p >= 1 || math.Abs(ones/draws-p) > 0.02 {
			t.Fatalf("history %d: success probability %v, drawn rewards average %v", i, p, ones/draws)
		}
	}
}

func maxDiff(a, b [][]float64) float64 {
	d := 0.0
	for q := range a {
		for i := range a[q] {
			d = math.Max(d, math.Abs(a[q][i]-b[q][i]))
		}
	}
	return d
}

// TestObjectivesMoveTowardTheirFixedPoints trains each objective for a short while with the
// default network and optimizer: AnchorTB and TB must close most of the distance from ρ to P*
// (the full curve, down to TV < 0.05, is `make exact`), PPO and GRPO must pass P*'s expected
// reward on their way to the maximum.
func TestObjectivesMoveTowardTheirFixedPoints(t *testing.T) {
	e, w, cfg := setup(t, false)
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
		verdict, ok := Verdict(c.objective, curve, false)
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

// TestNoisyRewardsLeadToPKL trains AnchorTB and TB in the noisy world at β = 4, where P* and
// P_KL are far apart: each must end nearer P_KL, the maximiser of E[β·r] − KL(θ‖ρ), than P*.
// The control gives AnchorTB each history's success probability as a graded reward instead of a
// draw (the same world without RewardNoise): log R_β of it is log E[R_β], and training ends on P*.
func TestNoisyRewardsLeadToPKL(t *testing.T) {
	e, w, cfg := setup(t, true)
	cfg.AnchorTB.Beta = 4
	cfg.Batch.CurrentRollouts, cfg.Batch.ReferenceRollouts = 8, 8
	for _, objective := range []string{"anchortb", "tb"} {
		cfg.Objective = objective
		curve, err := Train(context.Background(), e, w, cfg, 80, nil)
		if err != nil {
			t.Fatal(err)
		}
		verdict, ok := Verdict(objective, curve, true)
		t.Logf("%s: %s", objective, verdict)
		if !ok {
			t.Errorf("%s in the noisy world: %s", objective, verdict)
		}
	}
	graded := *w
	graded.RewardNoise = false
	cfg.Objective = "anchortb"
	curve, err := Train(context.Background(), e, &graded, cfg, 80, nil)
	if err != nil {
		t.Fatal(err)
	}
	verdict, ok := Verdict("anchortb", curve, false)
	t.Logf("anchortb, graded rewards: %s", verdict)
	if last := curve[len(curve)-1]; !ok || last.TV >= last.TVKL {
		t.Errorf("anchortb with graded rewards should end on P*: %s; TV to P_KL %.4f", verdict, last.TVKL)
	}
}

// TestTrainIsDeterministic: the same configuration and seed give the same curve.
func TestTrainIsDeterministic(t *testing.T) {
	e, w, cfg := setup(t, false)
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
	noisy := *w
	noisy.RewardNoise = true
	c, err := Train(context.Background(), e, &noisy, cfg, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Train(context.Background(), e, &noisy, cfg, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c[3] != d[3] || c[3] == a[3] {
		t.Fatalf("noisy world: step 3 %+v then %+v; deterministic world %+v", c[3], d[3], a[3])
	}
	if _, err := NewWorld(1, 1, 1, 1, false); err == nil {
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
	// noisy is a noisy world's curve of 8 steps after step 0 whose last quarter (steps 7 and 8)
	// has the given distances to P* and P_KL; ρ is 0.17 from P* and 0.31 from P_KL.
	noisy := func(tv7, kl7, tv8, kl8 float64) []Point {
		c := []Point{{TV: 0.17, TVRho: 0.17, TVKL: 0.31, TVKLRho: 0.31}}
		for k := 1; k <= 8; k++ {
			p := Point{Step: k, TV: 0.3, TVRho: 0.17, TVKL: 0.3, TVKLRho: 0.31}
			switch k {
			case 7:
				p.TV, p.TVKL = tv7, kl7
			case 8:
				p.TV, p.TVKL = tv8, kl8
			}
			c = append(c, p)
		}
		return c
	}
	for _, c := range []struct {
		objective string
		curve     []Point
		noisy     bool
		want      string
		ok        bool
	}{
		{"anchortb", []Point{start, at(1, 0.04, 0.85)}, false, "reaches P*", true},
		{"tb", []Point{start, at(1, 0.06, 0.85)}, false, "does NOT reach P*", false},
		{"grpo", []Point{start, at(1, 0.6, 0.98), at(2, 0.55, 0.85)}, false, "goes past P* toward the reward maximum: best reward 0.980 at step 1", true},
		{"ppo", []Point{start, at(1, 0.2, 0.8)}, false, "does NOT go past P*", false},
		{"anchortb", noisy(0.16, 0.08, 0.14, 0.06), true, "heads for P_KL, not P*: mean TV over steps 7–8 to P_KL 0.0700 (ρ 0.3100), to P* 0.1500", true},
		// One step near P_KL is not enough: the quarter's mean is what counts.
		{"tb", noisy(0.16, 0.3, 0.14, 0.04), true, "does NOT head for P_KL", false},
		// Nearer P* than P_KL.
		{"anchortb", noisy(0.04, 0.1, 0.05, 0.1), true, "does NOT head for P_KL", false},
	} {
		got, ok := Verdict(c.objective, c.curve, c.noisy)
		if !strings.HasPrefix(got, c.want) || ok != c.ok {
			t.Errorf("%s: %q (ok %v), want it to start with %q (ok %v)", c.objective, got, ok, c.want, c.ok)
		}
	}
}
