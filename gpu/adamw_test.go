package gpu

import (
	"math"
	"slices"
	"testing"
)

// TestPerTaskTablesAreRowSparse: an entry of a per-task table (the free anchors of the
// measured-flows ablation, log Z of tb) keeps its value and moments exactly in every step whose
// batch holds no trajectory of its task, counts only its own steps, and its first step, whenever
// it comes, is AdamW's first step (bias correction t = 1) from its initial value. The steps hold
// tasks {a, b}, then {a}, then {c}.
func TestPerTaskTablesAreRowSparse(t *testing.T) {
	e := testEngine(t)
	for _, obj := range []string{ObjectiveAnchorTB, ObjectiveTB} {
		o := objectiveOptions(obj)
		o.MeasuredFlows = false // the free anchors (anchortb)
		l := NewLearner(o, testTasks)
		table := l.Anchors
		if obj == ObjectiveTB {
			table = l.LogZ
		}
		initial := table.clone()
		for step, tasks := range [][]string{{"t/a", "t/b"}, {"t/a"}, {"t/c"}} {
			in := objectiveInput(t, e, l, 6, 4, uint64(40+step))
			for b := range in.Trajectories {
				in.Trajectories[b].Task = tasks[b%len(tasks)]
			}
			before := table.clone()
			var want float64 // t/c's value after its first step (checked under anchortb)
			if step == 2 && obj == ObjectiveAnchorTB {
				_, grads, _, err := l.lossAndGradient(e, in)
				if err != nil {
					t.Fatal(err)
				}
				h := l.PolicyGroup.Hyper[len(grads)-1]
				g := float64(grads[len(grads)-1][2]) * math.Min(1, o.Optimizer.GradClip/(globalNorm(grads)+1e-6))
				m, v := (1-h.Beta1)*g, (1-h.Beta2)*g*g
				want = float64(initial.Value[2])*(1-h.LR*h.WeightDecay) - h.LR*(m/(1-h.Beta1))/(math.Sqrt(v/(1-h.Beta2))+h.Epsilon)
			}
			if _, err := l.Update(e, in); err != nil {
				t.Fatal(err)
			}
			for q, task := range l.AnchorTasks {
				moved := table.Value[q] != before.Value[q] || table.M[q] != before.M[q] || table.V[q] != before.V[q]
				if held := slices.Contains(tasks, task); moved != held {
					t.Fatalf("%s step %d (tasks %v): %s's entry moved %v (value %v → %v, m %v → %v)", obj, step+1, tasks, task, moved,
						before.Value[q], table.Value[q], before.M[q], table.M[q])
				}
			}
			if step == 2 && obj == ObjectiveAnchorTB && math.Abs(float64(table.Value[2])-want) > 1e-7*math.Abs(want) {
				t.Fatalf("t/c's first step took it to %v, AdamW's first step from %v gives %v", table.Value[2], initial.Value[2], want)
			}
		}
		if !slices.Equal(table.Steps, []int64{2, 1, 1}) || l.PolicyGroup.Step != 3 {
			t.Fatalf("%s: entry step counts %v (policy group %d), want [2 1 1] (3)", obj, table.Steps, l.PolicyGroup.Step)
		}

		// The counts travel with the checkpoint; one written before they existed gives every entry
		// the group's count (its optimizer moved every entry in every step).
		m := NewLearner(o, testTasks)
		if err := m.Restore(cloneParams(l.Params()), l.Counters(), l.AnchorTasks); err != nil {
			t.Fatal(err)
		}
		restored := m.Anchors
		if obj == ObjectiveTB {
			restored = m.LogZ
		}
		if !slices.Equal(restored.Steps, table.Steps) {
			t.Fatalf("%s: restored counts %v, want %v", obj, restored.Steps, table.Steps)
		}
		legacy := l.Counters()
		for name := range l.rowCounters() {
			delete(legacy, name)
		}
		m = NewLearner(o, testTasks)
		if err := m.Restore(cloneParams(l.Params()), legacy, l.AnchorTasks); err != nil {
			t.Fatal(err)
		}
		for _, p := range []*Param{m.Anchors, m.LogZ} {
			if p != nil && !slices.Equal(p.Steps, []int64{3, 3, 3}) {
				t.Fatalf("%s: counts %v from a checkpoint without them, want the group's [3 3 3]", obj, p.Steps)
			}
		}
		delete(legacy, "steps/policy")
		if err := NewLearner(o, testTasks).Restore(cloneParams(l.Params()), legacy, l.AnchorTasks); err == nil {
			t.Fatalf("%s: a checkpoint without steps/policy was accepted", obj)
		}
	}
}
