package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/policy"
)

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if !closeTo(got, want, 1e-12) {
		t.Fatalf("%s = %.15g, want %.15g", what, got, want)
	}
}

func nearAll(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		near(t, fmt.Sprintf("%s[%d]", what, i), got[i], want[i])
	}
}

// TB on a hand-computed trajectory: log Z = 0.5, Δℓ = (0.2, −0.1, 0.3), r = 1 with β = 2, so
// log R_β = 2 and δ = 0.5 + 0.4 − 2 = −1.1: L = 1.21, every coefficient and ∂L/∂log Z = 2δ = −2.2.
func TestTBLossByHand(t *testing.T) {
	loss, dDelta, dZ := TBLoss(0.5, []float64{0.2, -0.1, 0.3}, LogRewardBeta(1, 2))
	near(t, "loss", loss, 1.21)
	nearAll(t, "∂L/∂Δℓ", dDelta, []float64{-2.2, -2.2, -2.2})
	near(t, "∂L/∂log Z", dZ, -2.2)
}

// TTB on a hand-computed trajectory of T = 2: log Z = 0.2, log π = (−0.5, −1), kinds (0, 1) with
// backward logits (ln 3, 0), so P_B = (3/4, 1/4); token counts (2, 4); log reward −0.3.
//
//	Δ = 0.2 + (−0.5 − ln ¾)/2 + (−1 − ln ¼)/4 + 0.3 = 0.2 − 0.1061590 + 0.0965736 + 0.3 = 0.4904146
//	L = (Δ/2)² = 0.0601266;  ∂L/∂log π = (2Δ/(4·2), 2Δ/(4·4)) = (Δ/4, Δ/8);  ∂L/∂log Z = Δ/2
//	∂L/∂w₀ = −(Δ/2)·[(1 − ¾)/2 + (0 − ¾)/4] = (Δ/2)/16,  ∂L/∂w₁ = −(Δ/2)·[(0 − ¼)/2 + (1 − ¼)/4] = −(Δ/2)/16
func TestTTBLossByHand(t *testing.T) {
	loss, dLogp, dZ, dW := TTBLoss(0.2, []float64{-0.5, -1}, []int{0, 1}, []float64{2, 4}, []float64{math.Log(3), 0}, -0.3)
	const delta = 0.4904146265058631
	near(t, "loss", loss, 0.0601266264727213)
	nearAll(t, "∂L/∂log π", dLogp, []float64{delta / 4, delta / 8})
	near(t, "∂L/∂log Z", dZ, delta/2)
	nearAll(t, "∂L/∂w", dW, []float64{delta / 2 / 16, -delta / 2 / 16})
	near(t, "tempered log reward", TemperedLogReward(0, 2, 0.01), 2*math.Log(0.01))
}

// PPO on a hand-computed trajectory of T = 4 with ε = 0.2:
//
//	t  ratio  A    ρA    clip(ρ)A  min           ∂L/∂log π
//	0  1.5    2    3     2.4       2.4 clipped   0
//	1  0.5   −1   −0.5  −0.8      −0.8 clipped   0
//	2  1      0.5  0.5   0.5       0.5 (tie)     −0.5/4
//	3  0.5    1    0.5   0.8       0.5           −0.5/4
//
// L = −(2.4 − 0.8 + 0.5 + 0.5)/4 = −0.65.
func TestPPOLossByHand(t *testing.T) {
	old := []float64{0, 0, -1, -1}
	logp := []float64{math.Log(1.5), math.Log(0.5), -1, -1 + math.Log(0.5)}
	loss, d := PPOLoss(logp, old, []float64{2, -1, 0.5, 1}, 0.2)
	near(t, "loss", loss, -0.65)
	nearAll(t, "∂L/∂log π", d, []float64{0, 0, -0.125, -0.125})
}

// GRPO on a hand-computed trajectory of T = 2: ratios 1, Â = 1, ε = 0.2, κ = 0.1, log ρ − log π =
// (ln 2, 0), so the k3 terms are (2 − ln 2 − 1, 0) = (0.3068528, 0):
//
//	L = −(1 + 1)/2 + 0.1·0.3068528/2 = −0.9846574
//	∂L/∂log π = (−1/2 + 0.1·(1 − 2)/2, −1/2) = (−0.55, −0.5)
func TestGRPOLossByHand(t *testing.T) {
	loss, d := GRPOLoss([]float64{-1, -0.5}, []float64{-1, -0.5}, []float64{-1 + math.Log(2), -0.5}, 1, 0.2, 0.1)
	near(t, "loss", loss, -0.9846573590279972)
	nearAll(t, "∂L/∂log π", d, []float64{-0.55, -0.5})
}

// Group advantages by hand: {1, 0} → mean ½, std ½ → (1, −1); {1, 0, 0} → mean ⅓, std √2/3 →
// (√2, −1/√2, −1/√2); equal rewards and a group of one → 0.
func TestGroupAdvantagesByHand(t *testing.T) {
	nearAll(t, "{1,0}", GroupAdvantages([]float64{1, 0}), []float64{1, -1})
	nearAll(t, "{1,0,0}", GroupAdvantages([]float64{1, 0, 0}), []float64{math.Sqrt2, -1 / math.Sqrt2, -1 / math.Sqrt2})
	nearAll(t, "{1,1}", GroupAdvantages([]float64{1, 1}), []float64{0, 0})
	nearAll(t, "{0.5}", GroupAdvantages([]float64{0.5}), []float64{0})
}

// fd is the central difference of f at x[i].
func fd(f func() float64, x *float64) float64 {
	const h = 1e-6
	x0 := *x
	*x = x0 + h
	up := f()
	*x = x0 - h
	down := f()
	*x = x0
	return (up - down) / (2 * h)
}

func checkFD(t *testing.T, what string, analytic float64, f func() float64, x *float64) {
	t.Helper()
	if num := fd(f, x); math.Abs(num-analytic) > 1e-6*math.Max(1, math.Abs(num)) {
		t.Fatalf("%s: derivative %v, finite difference %v", what, analytic, num)
	}
}

// Every objective's derivatives (the coefficients and its own parameters') are the finite
// differences of its loss, on random trajectories.
func TestObjectiveDerivativesMatchFiniteDifferences(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vec := func(n int, lo, hi float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = lo + (hi-lo)*r.Float64()
		}
		return v
	}
	for trial := range 20 {
		T := 1 + r.IntN(6)
		name := fmt.Sprintf("trial %d (T=%d)", trial, T)

		logZ, dl, term := r.NormFloat64(), vec(T, -1, 1), 2*r.Float64()
		_, dDelta, dZ := TBLoss(logZ, dl, term)
		tb := func() float64 { l, _, _ := TBLoss(logZ, dl, term); return l }
		for i := range dl {
			checkFD(t, name+" tb Δℓ", dDelta[i], tb, &dl[i])
		}
		checkFD(t, name+" tb log Z", dZ, tb, &logZ)

		logp, w, norm, kinds := vec(T, -3, 0), vec(4, -1, 1), vec(T, 1, 9), make([]int, T)
		for i := range kinds {
			kinds[i] = r.IntN(len(w))
		}
		_, dLogp, dZ, dW := TTBLoss(logZ, logp, kinds, norm, w, term)
		ttb := func() float64 { l, _, _, _ := TTBLoss(logZ, logp, kinds, norm, w, term); return l }
		for i := range logp {
			checkFD(t, name+" ttb log π", dLogp[i], ttb, &logp[i])
		}
		checkFD(t, name+" ttb log Z", dZ, ttb, &logZ)
		for j := range w {
			checkFD(t, name+" ttb w", dW[j], ttb, &w[j])
		}

		// Ratios away from the clip edges (the surrogate has kinks there).
		old, adv, rho := vec(T, -3, 0), vec(T, -2, 2), vec(T, -3, 0)
		for i := range logp {
			for {
				ratio := 0.5 + r.Float64()
				if math.Abs(ratio-0.8) > 1e-3 && math.Abs(ratio-1.2) > 1e-3 {
					logp[i] = old[i] + math.Log(ratio)
					break
				}
			}
		}
		_, dPPO := PPOLoss(logp, old, adv, 0.2)
		ppo := func() float64 { l, _ := PPOLoss(logp, old, adv, 0.2); return l }
		a := adv[0]
		_, dGRPO := GRPOLoss(logp, old, rho, a, 0.2, 0.3)
		grpo := func() float64 { l, _ := GRPOLoss(logp, old, rho, a, 0.2, 0.3); return l }
		for i := range logp {
			checkFD(t, name+" ppo log π", dPPO[i], ppo, &logp[i])
			checkFD(t, name+" grpo log π", dGRPO[i], grpo, &logp[i])
		}
	}
}

func objectiveOptions(objective string) LearnerOptions {
	o := testLearnerOptions()
	o.Objective = objective
	o.Comparison = config.Comparison{LogZLR: 0.1, TTBBeta: 1, TTBEpsilon: 0.01, Clip: 0.2, Epochs: 3, GRPOKL: 0.04}
	return o
}

// objectiveInput is randomUpdateInput with every legal action's descriptor carrying a kind
// one-hot (ttb's backward policy reads it), a token count per action, and log-probabilities
// rescored after that change; the behaviour log-probability is π_θ's (the rollout sampled
// current episodes from this θ).
func objectiveInput(t *testing.T, e *Engine, l *Learner, B, maxT int, seed uint64) UpdateInput {
	t.Helper()
	in := randomUpdateInput(t, e, l, B, maxT, seed)
	for b := range in.Trajectories {
		steps := in.Trajectories[b].Steps
		rows := make([]PolicyRow, len(steps))
		for i := range steps {
			s := &steps[i]
			for j := range s.Row.Legal() {
				kind := s.Row.Actions[j*policy.ActionWidth : j*policy.ActionWidth+len(policy.Kinds)]
				clear(kind)
				kind[(b+i+j)%len(kind)] = 1
			}
			s.Tokens = 1 + (b+i)%5
			rows[i] = s.Row
		}
		sc, err := l.Policy.Score(e, rows)
		if err != nil {
			t.Fatal(err)
		}
		for i := range steps {
			s := &steps[i]
			s.LogpTheta = float64(sc.Theta[i][s.Chosen])
			s.DeltaL, s.LogpBehavior = s.LogpTheta-float64(sc.Rho[i][s.Chosen]), s.LogpTheta
		}
	}
	return in
}

// meanLoss is the batch-mean loss over the trained trajectories.
func meanLoss(r *UpdateResult) float64 {
	var s, n float64
	for _, ep := range r.Episodes {
		if ep.Trained {
			s, n = s+ep.Loss, n+1
		}
	}
	return s / n
}

// TB and TTB in the learner: the written losses and coefficients are TBLoss's and TTBLoss's on
// the scores' log-probabilities, and the gradients of log Z and of the backward logits are the
// finite differences of the batch-mean loss; b_ψ is not part of the policy group.
func TestBalanceObjectivesInTheLearner(t *testing.T) {
	e := testEngine(t)
	for _, obj := range []string{ObjectiveTB, ObjectiveTTB} {
		l := NewLearner(objectiveOptions(obj), testTasks)
		perturb(l, 21)
		in := objectiveInput(t, e, l, 8, 5, 22)
		res, _, set, err := l.trainingSet(e, in, l.opt.obj())
		if err != nil {
			t.Fatal(err)
		}
		grads, err := l.balanceGradient(e, in.Trajectories, set, res, obj == ObjectiveTTB)
		if err != nil {
			t.Fatal(err)
		}
		if len(grads) != len(l.PolicyGroup.Params) || slices.Contains(l.PolicyGroup.Params, l.Residual.W2) {
			t.Fatalf("%s: %d gradient blocks for a policy group of %d", obj, len(grads), len(l.PolicyGroup.Params))
		}
		w := make([]float64, len(policy.Kinds))
		if l.Backward != nil {
			for j, v := range l.Backward.Value {
				w[j] = float64(v)
			}
		}
		for b, tr := range in.Trajectories {
			logZ := float64(l.LogZ.Value[slices.Index(l.AnchorTasks, tr.Task)])
			T := len(tr.Steps)
			var loss float64
			var coef []float64
			if obj == ObjectiveTB {
				dl := make([]float64, T)
				for i, s := range tr.Steps {
					dl[i] = s.DeltaL
				}
				loss, coef, _ = TBLoss(logZ, dl, LogRewardBeta(tr.Reward, 2))
			} else {
				logp, kinds, norm := make([]float64, T), make([]int, T), make([]float64, T)
				for i, s := range tr.Steps {
					k, err := chosenKind(s)
					if err != nil {
						t.Fatal(err)
					}
					logp[i], kinds[i], norm[i] = s.LogpTheta, k, float64(s.Tokens)
				}
				loss, coef, _, _ = TTBLoss(logZ, logp, kinds, norm, w, TemperedLogReward(tr.Reward, 1, 0.01))
			}
			if ep := res.Episodes[b]; !ep.Trained || !closeTo(ep.Loss, loss, 1e-12) {
				t.Fatalf("%s trajectory %d: loss %v (trained %v), want %v", obj, b, ep.Loss, ep.Trained, loss)
			}
			for i := range coef {
				if got := res.Steps[b][i].Coefficient; !closeTo(got, coef[i], 1e-12) {
					t.Fatalf("%s trajectory %d decision %d: coefficient %v, want %v", obj, b, i, got, coef[i])
				}
			}
		}
		// The extra blocks follow the adapter: log Z, then the backward logits.
		extra := []*Param{l.LogZ}
		if l.Backward != nil {
			extra = append(extra, l.Backward)
		}
		for k, p := range extra {
			g := grads[len(l.Policy.AdapterParams())+k]
			for i := range p.Value {
				const eps = 1e-2
				batch := func(d float32) float64 {
					p.Value[i] += d
					defer func() { p.Value[i] -= d }()
					r, _, s, err := l.trainingSet(e, in, l.opt.obj())
					if err != nil {
						t.Fatal(err)
					}
					if _, err := l.balanceGradient(e, in.Trajectories, s, r, obj == ObjectiveTTB); err != nil {
						t.Fatal(err)
					}
					return meanLoss(r)
				}
				num := (batch(eps) - batch(-eps)) / (2 * eps)
				if math.Abs(num-float64(g[i])) > 1e-3*math.Max(1, math.Abs(num)) {
					t.Fatalf("%s %s[%d]: gradient %v, finite difference %v", obj, p.Name, i, g[i], num)
				}
			}
		}
		before := slices.Clone(l.LogZ.Value)
		if _, err := l.Update(e, in); err != nil {
			t.Fatal(err)
		}
		if slices.Equal(before, l.LogZ.Value) {
			t.Fatalf("%s: the update left log Z unchanged", obj)
		}
		bad := in
		bad.Trajectories = slices.Clone(in.Trajectories)
		bad.Trajectories[0].Task = "not-a-training-task"
		if _, err := l.Update(e, bad); err == nil || !strings.Contains(err.Error(), "has no log Z") {
			t.Fatalf("%s: unknown task: %v", obj, err)
		}
	}
}

// PPO and GRPO in the learner: only current trajectories are trained; losses and coefficients are
// those of PPOLoss (advantage r − V(s) from the critic before the update) and GRPOLoss (the task
// group's advantage); the policy takes `epochs` steps, the critic as many; the work counts are
// exact.
func TestSurrogateObjectivesInTheLearner(t *testing.T) {
	e := testEngine(t)
	for _, obj := range []string{ObjectivePPO, ObjectiveGRPO} {
		l := NewLearner(objectiveOptions(obj), testTasks)
		perturb(l, 31)
		in := objectiveInput(t, e, l, 10, 5, 32)
		rows, refs, err := flatten(in)
		if err != nil {
			t.Fatal(err)
		}
		resIn, err := l.residualInputs(e, rows, refs, in.Trajectories)
		if err != nil {
			t.Fatal(err)
		}
		var v []float32
		if obj == ObjectivePPO {
			if v, err = l.Critic.Predict(e, resIn); err != nil { // as the update predicts
				t.Fatal(err)
			}
		}
		critic0 := cloneParams(l.Params())
		res, err := l.Update(e, in)
		if err != nil {
			t.Fatal(err)
		}
		groups := map[string][]float64{}
		for _, tr := range in.Trajectories {
			if tr.Current {
				groups[tr.Task] = append(groups[tr.Task], tr.Reward)
			}
		}
		var all, cur int
		k := 0
		for b, tr := range in.Trajectories {
			T := len(tr.Steps)
			all += T
			ep := res.Episodes[b]
			if !tr.Current {
				if ep.Trained || ep.Loss != 0 || res.Steps[b][0].Coefficient != 0 {
					t.Fatalf("%s: reference trajectory %d was trained on: %+v", obj, b, ep)
				}
				k += T
				continue
			}
			cur += T
			lp, old, rho, adv := make([]float64, T), make([]float64, T), make([]float64, T), make([]float64, T)
			for i, s := range tr.Steps {
				lp[i], old[i], rho[i] = s.LogpTheta, s.LogpBehavior, s.LogpTheta-s.DeltaL
				if v != nil {
					adv[i] = tr.Reward - float64(v[k+i])
				}
			}
			k += T
			var loss float64
			var coef []float64
			if obj == ObjectivePPO {
				loss, coef = PPOLoss(lp, old, adv, 0.2)
			} else {
				g := groups[tr.Task]
				var mine float64
				for i, a := range GroupAdvantages(g) {
					if g[i] == tr.Reward {
						mine = a
					}
				}
				loss, coef = GRPOLoss(lp, old, rho, mine, 0.2, 0.04)
			}
			if !ep.Trained || !closeTo(ep.Loss, loss, 1e-12) {
				t.Fatalf("%s trajectory %d: loss %v (trained %v), want %v", obj, b, ep.Loss, ep.Trained, loss)
			}
			for i := range coef {
				if got := res.Steps[b][i].Coefficient; !closeTo(got, coef[i], 1e-12) {
					t.Fatalf("%s trajectory %d decision %d: coefficient %v, want %v", obj, b, i, got, coef[i])
				}
			}
		}
		m := res.Metrics
		heads := len(in.ValueX) + len(in.ReplayX)*(m.ValueFitSteps-1) + len(in.OutcomeStates)*2 // value and outcome fits
		if obj == ObjectivePPO {
			heads += cur + 3*cur // critic prediction, three critic steps
		}
		if m.PolicySteps != 3 || l.PolicyGroup.Step != 3 || m.PolicyForwardRows != all+2*cur || m.PolicyGradRows != 3*cur ||
			m.HeadRows != heads || m.TrainedTrajectories == 0 || m.TrainedTrajectories == m.Trajectories {
			t.Fatalf("%s: metrics %+v (all %d, current %d decisions, head rows want %d)", obj, m, all, cur, heads)
		}
		if obj == ObjectivePPO && (l.CriticGroup.Step != 3 || slices.Equal(critic0[len(critic0)-4].Value, l.Critic.W1.Value)) {
			t.Fatalf("ppo: critic steps %d, critic moved %v", l.CriticGroup.Step, !slices.Equal(critic0[len(critic0)-4].Value, l.Critic.W1.Value))
		}
		if obj == ObjectiveGRPO && l.Critic != nil {
			t.Fatal("grpo has a critic")
		}
	}
}

// A batch without current episodes cannot train ppo or grpo.
func TestSurrogateObjectivesNeedCurrentEpisodes(t *testing.T) {
	e := testEngine(t)
	l := NewLearner(objectiveOptions(ObjectiveGRPO), testTasks)
	in := objectiveInput(t, e, l, 4, 3, 41)
	for b := range in.Trajectories {
		in.Trajectories[b].Current = false
	}
	if _, err := l.Update(e, in); err == nil || !strings.Contains(err.Error(), "current") {
		t.Fatalf("no current episodes: %v", err)
	}
	if l.PolicyGroup.Step != 0 {
		t.Fatal("a failed update changed the learner")
	}
}

// TestObjectivesLearnABandit is TestUpdateLearnsABandit for every comparison objective: one
// two-way decision per episode (both actions ADD_AGENT, one token), action 0 always rewarded;
// episodes sampled from π_θ. Each objective must move π_θ(0) well above ρ's ½.
func TestObjectivesLearnABandit(t *testing.T) {
	e := testEngine(t)
	for _, obj := range []string{ObjectiveTB, ObjectiveTTB, ObjectivePPO, ObjectiveGRPO} {
		o := objectiveOptions(obj)
		o.Optimizer.AdapterLR = 3e-2
		l := NewLearner(o, testTasks)
		r := rand.New(rand.NewPCG(1, 2))
		row := randomRows(l.Policy.(*PolicyNet), 2, 2, 3)[1]
		row.Actions, row.Prior = row.Actions[:2*policy.ActionWidth], []float32{0, 0}
		for j := range 2 {
			kind := row.Actions[j*policy.ActionWidth : j*policy.ActionWidth+len(policy.Kinds)]
			clear(kind)
			kind[0] = 1
		}
		var p0 float64
		for step := 1; step <= 30; step++ {
			s, err := l.Policy.Score(e, []PolicyRow{row})
			if err != nil {
				t.Fatal(err)
			}
			p0 = math.Exp(float64(s.Theta[0][0]))
			in := UpdateInput{Step: int64(step)}
			for range 16 {
				a := 1
				if r.Float64() < p0 {
					a = 0
				}
				st := Step{Row: row, Chosen: a, LogpTheta: float64(s.Theta[0][a]), DeltaL: float64(s.Theta[0][a] - s.Rho[0][a]),
					LogpBehavior: float64(s.Theta[0][a]), Tokens: 1}
				in.Trajectories = append(in.Trajectories, Trajectory{Task: "t/a", Reward: float64(1 - a), Current: true, Steps: []Step{st}})
			}
			if _, err = l.Update(e, in); err != nil {
				t.Fatalf("%s: %v", obj, err)
			}
		}
		if p0 < 0.8 {
			t.Errorf("%s: π_θ(rewarded action) = %.3f after 30 steps, want ≥ 0.8 (ρ: 0.5)", obj, p0)
		}
	}
}

// A checkpoint of each objective's learner (log Z with its task labels, backward logits, critic
// and its step counter) restores bit for bit, and the next update from both is identical.
func TestObjectiveRestoreIsBitExact(t *testing.T) {
	e := testEngine(t)
	for _, obj := range []string{ObjectiveTB, ObjectiveTTB, ObjectivePPO, ObjectiveGRPO} {
		o := objectiveOptions(obj)
		l := NewLearner(o, testTasks)
		if _, err := l.Update(e, objectiveInput(t, e, l, 5, 4, 51)); err != nil {
			t.Fatal(err)
		}
		m := NewLearner(o, testTasks)
		if err := m.Restore(cloneParams(l.Params()), l.Counters(), l.AnchorTasks); err != nil {
			t.Fatalf("%s: %v", obj, err)
		}
		in := objectiveInput(t, e, l, 5, 4, 52)
		if _, err := l.Update(e, in); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Update(e, in); err != nil {
			t.Fatal(err)
		}
		for i, p := range m.Params() {
			if q := l.Params()[i]; p.Name != q.Name || !slices.Equal(p.Value, q.Value) || !slices.Equal(p.M, q.M) {
				t.Fatalf("%s: after one more update %s differs", obj, p.Name)
			}
		}
		if fmt.Sprint(m.Counters()) != fmt.Sprint(l.Counters()) {
			t.Fatalf("%s: counters %v, want %v", obj, m.Counters(), l.Counters())
		}
		if obj == ObjectiveTB || obj == ObjectiveTTB {
			if err := NewLearner(o, testTasks).Restore(cloneParams(l.Params()), l.Counters(), []string{"x"}); err == nil {
				t.Fatalf("%s: other log Z tasks were accepted", obj)
			}
		}
		// An AnchorTB checkpoint lacks the objective's blocks (grpo has none: its learner is
		// AnchorTB's).
		anchor := NewLearner(testLearnerOptions(), testTasks)
		if err := NewLearner(o, testTasks).Restore(cloneParams(anchor.Params()), anchor.Counters(), nil); (err == nil) != (obj == ObjectiveGRPO) {
			t.Fatalf("%s: restoring an anchortb checkpoint: %v", obj, err)
		}
	}
}

// TestObjectivesMatchTheConfiguration: the update's registry holds exactly the objectives the
// configuration accepts (config.Objectives), so validation and --help name what runs.
func TestObjectivesMatchTheConfiguration(t *testing.T) {
	want := slices.Sorted(slices.Values(config.Objectives))
	if got := ObjectiveNames(); !slices.Equal(got, want) {
		t.Fatalf("registered objectives %v, configuration %v", got, want)
	}
}
