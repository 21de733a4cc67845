package gpu

import (
	"math"
	"os"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/policy"
)

// TestBackendsAgree runs scoring and one update on the CPU kernels and on a second backend and
// checks that they agree: log-probabilities within 1e-4·(1 + |value|), updated parameters within
// 1% of the largest change in their block (AdamW's first step divides a gradient by its own
// size, so rounding in a tiny gradient moves a weight by a visible share of the step). The second
// backend is the graph path on simplego, or the backend EVOSTEER_COMPARE_BACKEND names
// (scripts/gpu-check.sh sets xla:cuda on a GPU machine).
func TestBackendsAgree(t *testing.T) {
	name := os.Getenv("EVOSTEER_COMPARE_BACKEND")
	cpu := testEngine(t)
	other := testEngine(t)
	other.native = false
	if name != "" {
		var err error
		if other, err = OpenEngine(name); err != nil {
			t.Fatalf("open %s: %v", name, err)
		}
		t.Cleanup(other.Close)
	}
	t.Logf("comparing the CPU kernels with %s (native %v)", other.BackendName(), other.native)
	def, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	o := OptionsFromConfig(def, policy.StateWidth(6))
	o.ValueFitSteps = 2
	l := NewLearner(o, nil)
	perturb(l, 3)
	rows := randomRows(l.Policy.(*PolicyNet), 300, 40, 2)
	a, err := l.Policy.Score(cpu, rows)
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Policy.Score(other, rows)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		for j, v := range b.Theta[i] {
			if d := math.Abs(float64(a.Theta[i][j] - v)); d > 1e-4*(1+math.Abs(float64(v))) {
				t.Fatalf("row %d log π_θ[%d]: CPU %v, %s %v", i, j, a.Theta[i][j], other.BackendName(), v)
			}
		}
	}
	in := benchUpdateInput(t, cpu, l, 24, 12, 16)
	la, lb := NewLearner(o, nil), NewLearner(o, nil)
	perturb(la, 3)
	perturb(lb, 3)
	start := cloneParams(la.Params())
	if _, err := la.Update(cpu, in); err != nil {
		t.Fatal(err)
	}
	if _, err := lb.Update(other, in); err != nil {
		t.Fatal(err)
	}
	for k, p := range la.Params() {
		q, p0 := lb.Params()[k], start[k]
		moved := 0.0
		for i := range p.Value {
			moved = math.Max(moved, math.Abs(float64(p.Value[i]-p0.Value[i])))
		}
		for i := range p.Value {
			if d := math.Abs(float64(p.Value[i] - q.Value[i])); d > 1e-2*moved+1e-6 {
				t.Fatalf("%s[%d] after one update: CPU %v, %s %v (largest change in the block %v)", p.Name, i, p.Value[i], other.BackendName(), q.Value[i], moved)
			}
		}
	}
}
