package gpu

import (
	"math"
	"slices"
	"testing"

	"github.com/evosteer/evosteer-go/gpu/qwen3"
	"github.com/evosteer/evosteer-go/gpu/qwen3/qwen3test"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/policy"
)

// tinyLM is the causal-LM policy on qwen3test's tiny model (the tiny tokenizer: short texts are
// cheap) and a learner around it with the default configuration's optimizer and heads.
func tinyLM(t *testing.T) (*Learner, *CausalLM, *Engine) {
	t.Helper()
	dir := qwen3test.Folder(t, qwen3test.Config(), 5, qwen3.F32, 1)
	f, err := qwen3.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	def, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	p := def.Policy
	p.Kind, p.AdapterRank, p.AdapterAlpha, p.EncoderDim = config.PolicyCausalLM, 2, 4, 8
	p.CausalLM = &config.CausalLM{Model: dir, TargetModules: []string{"all-linear"}, MicroBatch: 3}
	lm, err := NewCausalLM(f, p, 7)
	if err != nil {
		t.Fatal(err)
	}
	def.Policy = p
	l := NewLearnerWith(OptionsFromConfig(def, policy.StateWidth(len(def.Families))), nil, lm)
	e, err := OpenEngine("simplego")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return l, lm, e
}

// textRow is a decision of the tiny model: a short user message and n actions.
func textRow(user string, n int) PolicyRow {
	acts := []string{`{"kind":"STOP"}`, `{"kind":"ADD_AGENT","role_id":"solver"}`, `{"kind":"ADD_AGENT","role_id":"verifier"}`, `{"kind":"RERUN_AGENT","node_id":"n1"}`}[:n]
	return PolicyRow{Prior: make([]float32, n), Text: &PolicyText{System: "Pick an action.", User: user, Actions: acts}}
}

// TestCausalLMStartsAtTheReference: with B = 0, θ's log-probabilities are ρ's bit for bit (both
// computed), they are a distribution over the legal actions, Behaviour equals Score, and the
// shared system turn gives the same scores on every call.
func TestCausalLMStartsAtTheReference(t *testing.T) {
	_, lm, e := tinyLM(t)
	rows := []PolicyRow{textRow(`{"team":[]}`, 4), textRow(`{"team":["n1"]}`, 3), textRow(`{"team":["n1","n2"]}`, 1)}
	s, err := lm.Score(e, rows)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		if !slices.Equal(s.Theta[i], s.Rho[i]) {
			t.Errorf("row %d: θ %v ≠ ρ %v at step 0", i, s.Theta[i], s.Rho[i])
		}
		var z float64
		for _, v := range s.Rho[i] {
			z += math.Exp(float64(v))
		}
		if math.Abs(z-1) > 1e-5 {
			t.Errorf("row %d: ρ sums to %v", i, z)
		}
		if len(s.H[i]) != lm.HiddenWidth() {
			t.Errorf("row %d: h_ρ has %d values, want %d", i, len(s.H[i]), lm.HiddenWidth())
		}
	}
	b, _, err := lm.Behaviour(e, rows, []bool{true, false, true})
	if err != nil {
		t.Fatal(err)
	}
	again, err := lm.Score(e, rows)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		if !slices.Equal(b[i], s.Rho[i]) || !slices.Equal(again.Rho[i], s.Rho[i]) || !slices.Equal(again.H[i], s.H[i]) {
			t.Errorf("row %d: Behaviour or a second Score differs from the first", i)
		}
	}
	if _, err := lm.Score(e, []PolicyRow{{Prior: make([]float32, 2)}}); err == nil {
		t.Error("a row without text was scored")
	}
}

// TestCausalLMUpdateMovesTheAdapter: one AnchorTB update through the adapter changes θ and not
// ρ, the update's recomputed log π_θ equals the scores it was given, and the gradient equals a
// finite difference of Σ_d c_d·log π_θ(a_d|s_d).
func TestCausalLMUpdateMovesTheAdapter(t *testing.T) {
	l, lm, e := tinyLM(t)
	rows := []PolicyRow{textRow(`{"team":[]}`, 4), textRow(`{"team":["n1"]}`, 3), textRow(`{"team":["n1"],"done":1}`, 1)}
	s, err := lm.Score(e, rows)
	if err != nil {
		t.Fatal(err)
	}
	chosen := []int{1, 2, 0}
	var tr []Trajectory
	for k, reward := range []float64{1, 0} {
		traj := Trajectory{Task: "q", Reward: reward, Anchor: 0.5, Current: k == 0}
		for i, r := range rows {
			lt := float64(s.Theta[i][chosen[i]])
			traj.Steps = append(traj.Steps, Step{Row: r, Chosen: chosen[i], LogpTheta: lt, LogpBehavior: lt})
		}
		tr = append(tr, traj)
	}
	res, err := l.Update(e, UpdateInput{Trajectories: tr, Step: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !(res.Metrics.GradNorm > 0) || res.Metrics.RescoreMismatch > 1e-5 {
		t.Fatalf("grad norm %v, rescore mismatch %v", res.Metrics.GradNorm, res.Metrics.RescoreMismatch)
	}
	after, err := lm.Score(e, rows)
	if err != nil {
		t.Fatal(err)
	}
	moved := 0.0
	for i := range rows {
		if !slices.Equal(after.Rho[i], s.Rho[i]) {
			t.Errorf("row %d: ρ moved with the adapter", i)
		}
		for a := range after.Theta[i] {
			moved = math.Max(moved, math.Abs(float64(after.Theta[i][a]-s.Theta[i][a])))
		}
	}
	t.Logf("after one update: max |Δ log π_θ| %.3g", moved)
	if moved == 0 {
		t.Error("the update did not change θ")
	}

	// The gradient against a central difference along a random direction of the adapter.
	coef := []float32{0.7, -1.3, 2}
	g, _, err := lm.gradient(e, rows, chosen, coef)
	if err != nil {
		t.Fatal(err)
	}
	objective := func() float64 {
		sc, err := lm.Score(e, rows)
		if err != nil {
			t.Fatal(err)
		}
		var j float64
		for i := range rows {
			j += float64(coef[i]) * float64(sc.Theta[i][chosen[i]])
		}
		return j
	}
	const eps = 1e-3
	var dir [][]float32
	var want float64
	for k, p := range lm.AdapterParams() {
		d := make([]float32, len(p.Value))
		for i := range d {
			d[i] = float32(math.Sin(float64(7*k + 3*i + 1)))
			want += float64(d[i]) * float64(g[k][i])
		}
		dir = append(dir, d)
	}
	step := func(sign float32) {
		for k, p := range lm.AdapterParams() {
			for i := range p.Value {
				p.Value[i] += sign * eps * dir[k][i]
			}
		}
	}
	step(1)
	up := objective()
	step(-2)
	down := objective()
	step(1)
	got := (up - down) / (2 * eps)
	t.Logf("directional derivative: gradient %.6g, finite difference %.6g", want, got)
	if math.Abs(got-want) > 2e-2*math.Max(1, math.Abs(want)) {
		t.Errorf("gradient %v, finite difference %v", want, got)
	}
}
