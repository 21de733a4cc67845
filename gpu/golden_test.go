package gpu

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/policy"
)

var writeGoldens = flag.Bool("write-goldens", false, "rewrite gpu/testdata/*.json from the current code")

// updateGolden is what two consecutive AnchorTB updates of the default network produce on a fixed
// batch: the gradient of the first (sampled), the metrics and losses of both, and the learner's
// parameters after them (sampled). Two steps, because AdamW's first step moves every weight by
// about ±lr whatever its gradient's size; the second step's move depends on the gradients' ratios.
type updateGolden struct {
	Grad    map[string][]float64 // policy clip group block → sampled gradient of step 1
	Metrics []map[string]float64 // per step
	Losses  [][]float64          // per step, per trajectory
	Params  map[string][]float64 // trainable block → sampled values after step 2
}

// sampled returns about 48 entries of v spread over its length, in float64.
func sampled(v []float32) []float64 {
	stride := max(1, len(v)/48)
	var out []float64
	for i := 0; i < len(v); i += stride {
		out = append(out, float64(v[i]))
	}
	return out
}

// rescoreInput rewrites every decision's log π_θ and Δℓ with the learner's current network, as
// the rescore stage would before the next update.
func rescoreInput(t testing.TB, e *Engine, l *Learner, in UpdateInput) {
	t.Helper()
	for b := range in.Trajectories {
		tr := &in.Trajectories[b]
		rows := make([]PolicyRow, len(tr.Steps))
		for i, s := range tr.Steps {
			rows[i] = s.Row
		}
		sc, err := l.Policy.Score(e, rows)
		if err != nil {
			t.Fatal(err)
		}
		for i := range tr.Steps {
			s := &tr.Steps[i]
			s.LogpTheta = float64(sc.Theta[i][s.Chosen])
			s.DeltaL = s.LogpTheta - float64(sc.Rho[i][s.Chosen])
		}
	}
}

// computeUpdateGolden runs the two updates with the update's passes as graphs (the reference
// the golden was recorded with) or as the CPU kernels (native.go).
func computeUpdateGolden(t *testing.T, native bool) updateGolden {
	e := testEngine(t)
	e.native = native
	def, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	o := OptionsFromConfig(def, policy.StateWidth(6))
	l := NewLearner(o, nil)
	// θ a little away from ρ and b_ψ away from zero, as after some training, so every path is live.
	randomiseAdapter(l.Policy.(*PolicyNet), 21, 0.02)
	r := rand.New(rand.NewPCG(21, 1))
	for _, p := range []*Param{l.Residual.W2, l.Residual.B2} {
		for i := range p.Value {
			p.Value[i] = float32(0.05 * r.NormFloat64())
		}
	}
	in := benchUpdateInput(t, e, l, 12, 10, 40)
	g := updateGolden{Grad: map[string][]float64{}, Params: map[string][]float64{}}
	_, grads, _, err := l.lossAndGradient(e, in)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range l.PolicyGroup.Params {
		g.Grad[p.Name] = sampled(grads[i])
	}
	for step := int64(1); step <= 2; step++ {
		in.Step = step
		if step > 1 {
			rescoreInput(t, e, l, in)
		}
		res, err := l.Update(e, in)
		if err != nil {
			t.Fatal(err)
		}
		m := res.Metrics
		g.Metrics = append(g.Metrics, map[string]float64{
			"loss": m.Loss, "loss_rho": m.LossRho, "loss_anchor": m.LossAnchor, "grad_norm": m.GradNorm,
			"value_grad_norm": m.ValueGradNorm, "outcome_grad_norm": m.OutcomeGradNorm, "value_loss": m.ValueLoss,
			"value_fit_loss": m.ValueFitLoss, "outcome_loss": m.OutcomeLoss, "policy_abs_log_ratio": m.PolicyAbsLogRatio,
		})
		var losses []float64
		for _, ep := range res.Episodes {
			losses = append(losses, ep.Loss)
		}
		g.Losses = append(g.Losses, losses)
	}
	for _, p := range l.Params() {
		if p.Trainable() || p.Name == l.Published.W1.Name {
			g.Params[p.Name] = sampled(p.Value)
		}
	}
	return g
}

// TestUpdateMatchesGolden pins the update's outputs on a fixed batch of the default network:
// a change of how the update is computed (kernels, chunking, backends) must leave its parameters,
// batch metrics within 1e-6 of the recorded ones (relative for magnitudes above 1), each episode's
// loss within 1e-5, and the gradient within 1e-5 of its block's largest entry. Rewrite with -write-goldens after a change
// that is meant to change the update, and say why.
func TestUpdateMatchesGolden(t *testing.T) {
	path := filepath.Join("testdata", "update_golden.json")
	if *writeGoldens {
		got := computeUpdateGolden(t, false)
		b, err := json.MarshalIndent(got, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want updateGolden
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, native := range []bool{false, true} {
		t.Run(fmt.Sprintf("native=%v", native), func(t *testing.T) { compareUpdateGolden(t, computeUpdateGolden(t, native), want) })
	}
}

func compareUpdateGolden(t *testing.T, got, want updateGolden) {
	worst := map[string]float64{}
	cmp := func(kind, what string, got, want []float64, tol func(w float64) float64) {
		if len(got) != len(want) {
			t.Fatalf("%s %s: %d values, golden %d", kind, what, len(got), len(want))
		}
		for i := range want {
			d := math.Abs(got[i] - want[i])
			worst[kind] = math.Max(worst[kind], d/tol(want[i]))
			if !(d <= tol(want[i])) {
				t.Errorf("%s %s[%d]: %v, golden %v (|Δ| %.3g > %.3g)", kind, what, i, got[i], want[i], d, tol(want[i]))
				return
			}
		}
	}
	out := func(w float64) float64 { return 1e-6 * math.Max(1, math.Abs(w)) }
	for name, w := range want.Grad {
		scale := 0.0
		for _, v := range w {
			scale = math.Max(scale, math.Abs(v))
		}
		cmp("gradient", name, got.Grad[name], w, func(float64) float64 { return 1e-5 * math.Max(scale, 1e-12) })
	}
	for s := range want.Metrics {
		for k, w := range want.Metrics[s] {
			cmp("metric", fmt.Sprintf("step %d %s", s+1, k), []float64{got.Metrics[s][k]}, []float64{w}, out)
		}
		// An episode's loss squares sums of float32 log-ratios (graph and kernels round them
		// differently), so it gets the gradient's 1e-5; the batch metrics average that away.
		cmp("loss", fmt.Sprintf("step %d", s+1), got.Losses[s], want.Losses[s], func(w float64) float64 { return 1e-5 * math.Max(1, math.Abs(w)) })
	}
	if len(got.Params) != len(want.Params) {
		t.Fatalf("%d parameter blocks, golden %d", len(got.Params), len(want.Params))
	}
	for name, w := range want.Params {
		cmp("parameter", name, got.Params[name], w, out)
	}
	t.Logf("largest |Δ|/tolerance: %v", worst)
}
