package sim

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/evosteer/evosteer-go/internal/seed"
)

// TestEnvironment checks the interactive families: at most env_steps_per_node steps per node and
// env_max_steps per episode, Environment reports, the environment tool call, EnvironmentDone,
// and a grade that ignores the text and says whether the goal was reached.
func TestEnvironment(t *testing.T) {
	p := defaultSim(t)
	w := New(p, testRunSeed)
	for _, fam := range []string{"alfworld", "webshop"} {
		var won, n float64
		for _, task := range Tasks(p, testRunSeed, fam, "", "train", 300) {
			tr := w.TaskTruth(task)
			e := begin(t, w, task, seed.Derive(testRunSeed, "env", task.ID))
			if g, _ := e.sess.Grade(context.Background(), "Answer: done"); g != 0 || e.sess.EnvironmentDone() {
				t.Fatalf("%s: fresh environment graded %v / done", task.ID, g)
			}
			prevSteps := 0
			for i, id := range []string{"n0", "n1", "n2", "n0"} {
				r := e.run(id, "solver", nil, nil)
				env := r.Environment
				if !env.Enabled || env.StepsPerPhase != p.EnvStepsPerNode || env.MaxPhases != 2 {
					t.Fatalf("%s: environment report %+v", task.ID, env)
				}
				taken := env.StepsCompleted - prevSteps
				if taken < 0 || taken > p.EnvStepsPerNode || env.StepsCompleted > p.EnvMaxSteps || int64(taken) != r.Usage.ToolCalls {
					t.Fatalf("%s exec %d: took %d steps (total %d, charged %d)", task.ID, i, taken, env.StepsCompleted, r.Usage.ToolCalls)
				}
				if env.PhaseIndex != min(2, env.StepsCompleted/p.EnvStepsPerNode) || env.Done != e.sess.EnvironmentDone() {
					t.Fatalf("%s: phase %d done %v", task.ID, env.PhaseIndex, env.Done)
				}
				if len(r.Tools) != 1 || r.Tools[0].Tool != "environment" {
					t.Fatalf("%s: tools %+v", task.ID, r.Tools)
				}
				var out envOutput
				if err := json.Unmarshal([]byte(r.Output), &out); err != nil || out.StepsTotal != env.StepsCompleted || len(out.Actions) != taken {
					t.Fatalf("%s: output %q (%v)", task.ID, r.Output, err)
				}
				if prevSteps == env.StepsCompleted && i > 0 && !env.Done && r.Status == "success" {
					t.Fatalf("%s: a live environment took no steps", task.ID)
				}
				prevSteps = env.StepsCompleted
			}
			st := e.sess.(*Session).env
			if st.won != (st.progress >= tr.Requirement) || (st.won || st.steps >= p.EnvMaxSteps) != st.done {
				t.Fatalf("%s: state %+v, requirement %d", task.ID, st, tr.Requirement)
			}
			g := e.grade("n0")
			if g != b2f(st.won) {
				t.Fatalf("%s: grade %v, won %v", task.ID, g, st.won)
			}
			won += g
			n++
		}
		t.Logf("%s: four solver executions reach the goal %.3f", fam, won/n)
	}
	// Text families have no environment.
	task := Tasks(p, testRunSeed, "hotpotqa", "", "train", 1)[0]
	e := begin(t, w, task, 1)
	if r := e.run("n0", "solver", nil, nil); r.Environment.Enabled || e.sess.EnvironmentDone() {
		t.Error("a text family reports an environment")
	}
}
