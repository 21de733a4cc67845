package exact

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/gpu/qwen3"
	"github.com/evosteer/evosteer-go/gpu/qwen3/qwen3test"
	"github.com/evosteer/evosteer-go/gpu/qwen3/qwen3tok"
	"github.com/evosteer/evosteer-go/internal/config"
)

// lmModelSeed seeds the language-model policy's random weights.
const lmModelSeed = 7

// lmModel writes the language-model policy of these tests into a temporary folder: a random
// Qwen3 of qwen3test.QwenVocab's shape (Qwen3's own tokenizer, so an exact-world prompt is 135
// tokens and an action at most 19; 2 layers, hidden 32, one head of width 16) with
// qwen3test.Weights, except that every layer's q_norm and k_norm gains are doubled. Qwen3
// RMS-normalises each head's q and k, so a random model's attention logits have SD ≈ 1 whatever
// its projections, and its attention is nearly uniform over the prompt: a decision reads the task
// id, a token or two of 135, with a weight of about 1/135. With the gains as drawn the adapter
// learned one tilt for every task, both families alike (TV to P* 0.23 after 110 steps); with the
// gains doubled (logit SD ≈ 4) it tells the families and some of the tasks apart.
func lmModel(t testing.TB) string {
	t.Helper()
	cfg := qwen3test.QwenVocab()
	w := qwen3test.Weights(cfg, lmModelSeed)
	for _, l := range w.Layers {
		for i := range l.QNorm.Data {
			l.QNorm.Data[i] *= 2
			l.KNorm.Data[i] *= 2
		}
	}
	dir := t.TempDir()
	if err := qwen3.WriteFolder(dir, cfg, w, qwen3.F32); err != nil {
		t.Fatal(err)
	}
	if err := qwen3tok.Write(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// lmSetup is setup's engine, world (2 families × 3 tasks × 3 roles, deterministic rewards) and
// default configuration with the language-model policy: lmModel with a LoRA adapter of rank 8,
// α 64 on every projection (α 16 ended 300 steps at TV 0.097 instead of 0.081; rank 32 and
// optimizer.adapter_lr 1e-2 did worse, the latter unstable). Everything else — the world, β, the
// objective's settings, the heads, adapter_lr 3e-3, the rollouts per task — is the default.
func lmSetup(t *testing.T) (*gpu.Engine, *World, *config.Config) {
	t.Helper()
	e, w, cfg := setup(t, false)
	cfg.Policy.Kind = config.PolicyCausalLM
	cfg.Policy.CausalLM = &config.CausalLM{Model: lmModel(t), TargetModules: []string{"all-linear"}, MicroBatch: 16}
	cfg.Policy.AdapterRank, cfg.Policy.AdapterAlpha = 8, 64
	cfg.Objective = "anchortb"
	return e, w, cfg
}

// TestCausalLMIsTheRowsPolicy checks the language model where it enters the exact world: the
// learner's policy is it, every state's row carries the state's texts (the system prompt, the
// user message, the legal actions' canonical JSON in legal order), ρ is the model's own with the
// adapter off — Σρ = 1 in every state, not the built-in prior the rows still carry, scored the
// same alone as in the batch — and P* ∝ ρ·R_β is computed from it. Before training θ = ρ bit for
// bit, so TV(θ, P*) = TV(ρ, P*) exactly. A served reference is refused with it.
func TestCausalLMIsTheRowsPolicy(t *testing.T) {
	e, w, cfg := lmSetup(t)
	l, err := w.NewLearner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lm, ok := l.Policy.(*gpu.CausalLM)
	if !ok {
		t.Fatalf("policy %T, want *gpu.CausalLM", l.Policy)
	}
	tab, err := w.score(e, l)
	if err != nil {
		t.Fatal(err)
	}
	var priorGap float64
	for q := range w.Tasks() {
		for _, s := range w.states(q) {
			i := w.index(s)
			row, theta, rho := tab.rows[q][i], tab.theta[q][i], tab.rho[q][i]
			actions := w.actionTexts(s)
			if row.Text == nil || row.Text.System != systemPrompt || row.Text.User != w.userMessage(s, actions) || strings.Join(row.Text.Actions, "\n") != strings.Join(actions, "\n") {
				t.Fatalf("task %d state %d: the row's text %+v", q, i, row.Text)
			}
			if !strings.Contains(row.Text.User, `"task_id":"`+w.TaskID(q)+`"`) {
				t.Fatalf("task %d state %d: the user message does not name the task: %s", q, i, row.Text.User)
			}
			var sum float64
			for a := range actions {
				if math.Float32bits(theta[a]) != math.Float32bits(rho[a]) {
					t.Fatalf("task %d state %d, %s: log θ %v, log ρ %v before training", q, i, actions[a], theta[a], rho[a])
				}
				sum += math.Exp(float64(rho[a]))
			}
			if math.Abs(sum-1) > 1e-5 {
				t.Fatalf("task %d state %d: Σρ = %v", q, i, sum)
			}
			if len(actions) > 1 {
				prior := logSoftmax(row.Prior)
				for a := range actions {
					priorGap = math.Max(priorGap, math.Abs(float64(rho[a])-prior[a]))
				}
			}
		}
	}
	if priorGap < 0.5 {
		t.Fatalf("the model's log ρ is within %g of the built-in prior's: the test does not tell them apart", priorGap)
	}
	// One state scored alone: the same ρ (a row's scores do not depend on the batch).
	alone := w.row(state{task: 1, kind: afterAgent, role: 2})
	alone.Text = w.text(state{task: 1, kind: afterAgent, role: 2})
	sc, err := lm.Score(e, []gpu.PolicyRow{alone})
	if err != nil {
		t.Fatal(err)
	}
	for a, v := range sc.Rho[0] {
		if got := tab.rho[1][w.index(state{task: 1, kind: afterAgent, role: 2})][a]; got != v {
			t.Fatalf("action %d: log ρ %v in the batch, %v alone", a, got, v)
		}
	}
	rho := w.terminal(tab, false)
	pt := w.measure(0, w.terminal(tab, true), rho, cfg.AnchorTB.Beta)
	t.Logf("step 0: TV(θ, P*) = TV(ρ, P*) = %.4f; reward ρ %.3f, P* %.3f, max %.3f; the model's log ρ up to %.2f from the built-in prior's",
		pt.TV, pt.RewardRho, pt.RewardTarget, pt.RewardMax, priorGap)
	if pt.TV != pt.TVRho || pt.TVRho < 0.2 || pt.RewardTarget < pt.RewardRho+0.2 {
		t.Fatalf("at step 0 θ = ρ and P* must be far from ρ: %+v", pt)
	}
	// P* is the model's ρ tilted, not the built-in prior's.
	net, err := networkRho(e, w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	netTarget := w.Target(net, cfg.AnchorTB.Beta)
	if d := maxDiff(w.Target(rho, cfg.AnchorTB.Beta), netTarget); d < 0.05 {
		t.Fatalf("P* from the model's ρ and from the built-in prior differ by at most %g", d)
	}
	// The built-in prior is the same for every task of a family, so its distance to its P* is at
	// least taskBlindBound.
	netPt := w.measure(0, net, net, cfg.AnchorTB.Beta)
	if b := w.taskBlindBound(netTarget); netPt.TVRho < b || b <= 0 {
		t.Fatalf("the built-in prior is %.4f from its P*, below the task-blind bound %.4f", netPt.TVRho, b)
	}
	t.Logf("a policy blind to the task within a family is at least %.4f from the model's P*", w.taskBlindBound(w.Target(rho, cfg.AnchorTB.Beta)))
	served, err := NewWorld(2, 3, 3, cfg.Seed, false)
	if err != nil {
		t.Fatal(err)
	}
	served.served = w.builtinTable()
	if _, err := served.NewLearner(cfg); err == nil || !strings.Contains(err.Error(), "served reference") {
		t.Fatalf("a served reference with the language model: %v", err)
	}
}

// networkRho is ρ's terminal distribution under the compact network, whose ρ is the
// built-in prior.
func networkRho(e *gpu.Engine, w *World, cfg *config.Config) ([][]float64, error) {
	c := *cfg
	c.Policy.Kind, c.Policy.CausalLM = "", nil
	l, err := w.NewLearner(&c)
	if err != nil {
		return nil, err
	}
	tab, err := w.score(e, l)
	if err != nil {
		return nil, err
	}
	return w.terminal(tab, false), nil
}

// builtinTable is the built-in prior's logits per task and state, in World.index order, as a
// served reference's table is held.
func (w *World) builtinTable() [][][]float32 {
	out := make([][][]float32, w.Tasks())
	for q := range out {
		states := w.states(q)
		out[q] = make([][]float32, len(states))
		for _, s := range states {
			out[q][w.index(s)] = w.row(s).Prior
		}
	}
	return out
}

func logSoftmax(x []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, float64(v))
	}
	var z float64
	for _, v := range x {
		z += math.Exp(float64(v) - m)
	}
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v) - m - math.Log(z)
	}
	return out
}

// TestCausalLMTrainsDeterministically trains AnchorTB with the language-model policy for a few
// steps, twice from the same seed: the shorter run's curve is the longer one's beginning, point
// for point, and TV(θ, P*) falls well below TV(ρ, P*) (the full curve, to TV < 0.05 in 300 steps,
// is TestCausalLMReachesItsTarget). About 25 seconds on 2 cores.
func TestCausalLMTrainsDeterministically(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: trains the language-model policy 10 + 2 steps (about 25 seconds on 2 cores)")
	}
	e, w, cfg := lmSetup(t)
	start := time.Now()
	a, err := Train(context.Background(), e, w, cfg, lmShortSteps, nil)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	b, err := Train(context.Background(), e, w, cfg, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		if a[i] != b[i] {
			t.Fatalf("step %d: %+v, then %+v", i, a[i], b[i])
		}
	}
	first, last := a[0], a[len(a)-1]
	t.Logf("%d steps (%v): TV(θ, P*) %.4f → %.4f; reward θ %.3f → %.3f (P* %.3f)", lmShortSteps, elapsed.Round(time.Millisecond), first.TV, last.TV, first.RewardTheta, last.RewardTheta, last.RewardTarget)
	if first.TV != first.TVRho || last.TV > lmShortFactor*first.TV {
		t.Fatalf("after %d steps TV(θ, P*) %.4f, want below %.2f × TV(ρ, P*) %.4f", lmShortSteps, last.TV, lmShortFactor, first.TV)
	}
}

// The default suite's run: steps and the factor by which TV(θ, P*) must have fallen.
const (
	lmShortSteps  = 10
	lmShortFactor = 0.7
)

// TestCausalLMReachesItsTarget trains AnchorTB for 300 steps with the language-model policy on
// setup's world: θ must end within TargetTV of P* ∝ ρ·R_β, ρ the model with its adapter off (the
// issue's acceptance criterion). It takes about 6.5 minutes on 2 cores, so it runs only when
// EVOSTEER_EXACT_LM=1 (make exact-lm). It does not pass yet: θ ends at TV 0.081. It first checks
// what θ does reach: below taskBlindBound, the distance to P* that no policy giving every task
// of a family the same distribution can beat, so θ has learned to tell tasks apart from their
// task ids, but not enough (see docs/RESULTS.md, "The exact world with the language-model
// orchestrator").
func TestCausalLMReachesItsTarget(t *testing.T) {
	if os.Getenv("EVOSTEER_EXACT_LM") != "1" {
		t.Skip("set EVOSTEER_EXACT_LM=1 (make exact-lm): trains the language-model policy 300 steps (about 6.5 minutes on 2 cores)")
	}
	e, w, cfg := lmSetup(t)
	start := time.Now()
	curve, err := Train(context.Background(), e, w, cfg, 300, func(p Point) {
		switch p.Step {
		case 0, 50, 100, 150, 200, 250, 300:
			t.Logf("step %3d (%v): TV(θ, P*) %.4f (ρ %.4f); reward θ %.3f, P* %.3f, ρ %.3f", p.Step, time.Since(start).Round(time.Second), p.TV, p.TVRho, p.RewardTheta, p.RewardTarget, p.RewardRho)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// ρ is the model with its adapter off, the same in a fresh learner.
	l, err := w.NewLearner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := w.score(e, l)
	if err != nil {
		t.Fatal(err)
	}
	bound := w.taskBlindBound(w.Target(w.terminal(tab, false), cfg.AnchorTB.Beta))
	last := curve[len(curve)-1]
	verdict, ok := Verdict("anchortb", curve, false)
	t.Logf("after 300 steps (%v): %s; a policy blind to the task within a family is at least %.4f from P*", time.Since(start).Round(time.Second), verdict, bound)
	if last.TV >= bound {
		t.Fatalf("TV(θ, P*) %.4f after 300 steps, not below %.4f: θ has not learned to tell the tasks of a family apart", last.TV, bound)
	}
	if !ok {
		t.Fatalf("AnchorTB with the language-model policy: %s", verdict)
	}
}

// taskBlindBound is a lower bound on the mean TV to target of any policy that gives every task
// of a family the same terminal distribution θ_f: for two tasks q, q' of a family,
// TV(θ_f, P_q) + TV(θ_f, P_q') ≥ TV(P_q, P_q'), and summing over the family's n(n−1)/2 pairs,
// each task in n−1 of them, the family's mean is at least Σ_pairs TV(P_q, P_q') / (n(n−1)).
func (w *World) taskBlindBound(target [][]float64) float64 {
	n := w.TasksPerFamily
	if n < 2 {
		return 0
	}
	var b float64
	for f := range w.Families {
		for a := range n {
			for c := a + 1; c < n; c++ {
				var d float64
				for i, p := range target[f*n+a] {
					d += math.Abs(p-target[f*n+c][i]) / 2
				}
				b += d / float64(n*(n-1)) / float64(w.Families)
			}
		}
	}
	return b
}
