package sim

import (
	"context"
	"math"
	"reflect"
	"testing"

	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

var allFamilies = []string{"hotpotqa", "nq_open", "medqa", "aime_2026", "mbpp_plus", "alfworld",
	"triviaqa", "musique", "gpqa_diamond", "math_hard", "swe_bench_verified", "webshop"}

// script is a fixed request sequence touching every path: fresh draws, tools, messages, a
// verifier, a plan, a rerun and a bound skill.
func script(t testing.TB, w *World, task tasks.Task, epSeed uint64) ([]executor.Result, float64, bool) {
	e := begin(t, w, task, epSeed)
	var out []executor.Result
	out = append(out, e.run("n0", "solver", nil, nil))
	out = append(out, e.run("n1", "planner", nil, nil))
	out = append(out, e.run("n2", "researcher", []string{"n1"}, nil))
	if !Interactive(task.Family) {
		out = append(out, e.run("n3", "tool_user", nil, nil))
	}
	out = append(out, e.run("n4", "verifier", []string{"n0", "n2"}, nil))
	out = append(out, e.run("n0", "solver", nil, []executor.Skill{{ID: "evosteer-00000000000000000001", Text: "Name: x"}}))
	out = append(out, e.run("n5", "finalizer", []string{"n0", "n4"}, nil))
	return out, e.grade("n5"), e.sess.EnvironmentDone()
}

func TestDeterminism(t *testing.T) {
	p := defaultSim(t)
	for _, fam := range allFamilies {
		differs := 0
		for i, task := range Tasks(p, testRunSeed, fam, "", "train", 12) {
			epSeed := seed.Derive(testRunSeed, "determinism", task.ID)
			a, ga, da := script(t, New(p, testRunSeed), task, epSeed)
			b, gb, db := script(t, New(p, testRunSeed), task, epSeed)
			if !reflect.DeepEqual(a, b) || ga != gb || da != db {
				t.Fatalf("%s: same task, seed and requests gave different results", task.ID)
			}
			c, _, _ := script(t, New(p, testRunSeed), task, epSeed+1)
			if !reflect.DeepEqual(a, c) {
				differs++
			}
			if i == 0 {
				// Another run seed changes the hidden truth, hence the draws' meaning.
				if reflect.DeepEqual(New(p, testRunSeed).TaskTruth(task), New(p, testRunSeed+1).TaskTruth(task)) {
					t.Errorf("%s: truth does not depend on the run seed", task.ID)
				}
			}
		}
		if differs < 11 {
			t.Errorf("%s: a different episode seed changed the results of only %d of 12 tasks", fam, differs)
		}
	}
}

// TestRequestSeedDrivesDraws checks that the Request.Seed, not the session or the call order,
// decides a text execution: the same request gives the same result in any session, and other
// seeds give other draws.
func TestRequestSeedDrivesDraws(t *testing.T) {
	p := defaultSim(t)
	w := New(p, testRunSeed)
	task := Tasks(p, testRunSeed, "aime_2026", "", "train", 1)[0]
	role := testRole(task.Family, "solver")
	req := executor.Request{NodeID: "n0", Seed: 42, Role: role, Prompt: assemblePrompt(task, role, nil, nil, nil)}
	s1, _ := w.Begin(context.Background(), task, 7)
	s2, _ := w.Begin(context.Background(), task, 8)
	r1, _ := s1.Execute(context.Background(), req)
	s1.Execute(context.Background(), executor.Request{NodeID: "n1", Seed: 5, Role: role, Prompt: "x"})
	r1b, _ := s1.Execute(context.Background(), req)
	r2, _ := s2.Execute(context.Background(), req)
	if !reflect.DeepEqual(r1, r2) || !reflect.DeepEqual(r1, r1b) {
		t.Fatal("the same request gave different results")
	}
	outs := map[string]bool{}
	for sd := uint64(0); sd < 40; sd++ {
		req.Seed = sd
		r, _ := s1.Execute(context.Background(), req)
		outs[r.Output] = true
	}
	if len(outs) < 35 {
		t.Errorf("40 request seeds gave only %d distinct outputs", len(outs))
	}
}

func TestUsageWithinEnvelope(t *testing.T) {
	p := defaultSim(t)
	w := New(p, testRunSeed)
	var planTok, solverTok, nPlan, nSolver float64
	var easyTok, hardTok, nEasy, nHard float64
	for _, fam := range allFamilies {
		for _, task := range Tasks(p, testRunSeed, fam, "", "train", 40) {
			d := w.TaskTruth(task).Difficulty
			e := begin(t, w, task, seed.Derive(testRunSeed, "usage", task.ID))
			ids := []string{"n0", "n1", "n2", "n3", "n4", "n5"}
			roles := []string{"solver", "planner", "researcher", "tool_user", "verifier", "finalizer"}
			for i, role := range roles {
				if Interactive(fam) && role == "tool_user" {
					continue
				}
				var src []string
				if i >= 4 {
					src = ids[:2]
				}
				r := e.run(ids[i], role, src, nil)
				env := testRole(fam, role).Envelope
				u := r.Usage
				if u.TokensIn > env.InputTokens || u.TokensOut > env.OutputTokens || u.WallMS > env.WallMS ||
					(env.ModelCalls > 0 && u.ModelCalls > env.ModelCalls) || u.ToolCalls > max(env.ToolCalls, 0) {
					t.Fatalf("%s %s: usage %+v above envelope %+v", task.ID, role, u, env)
				}
				if u.TokensIn <= 0 || u.TokensOut <= 0 || u.ModelCalls < 1 || u.WallMS <= 0 {
					t.Fatalf("%s %s: usage not charged: %+v", task.ID, role, u)
				}
				prompt := int64(math.Ceil(float64(len(e.prompts[ids[i]])) / 4))
				if u.TokensIn < min(prompt, env.InputTokens) {
					t.Fatalf("%s %s: %d prompt tokens charged for a prompt of about %d", task.ID, role, u.TokensIn, prompt)
				}
				if !Interactive(fam) && u.ToolCalls != int64(len(r.Tools)) {
					t.Fatalf("%s %s: %d tool calls charged, %d recorded", task.ID, role, u.ToolCalls, len(r.Tools))
				}
				if r.Status == "failed" {
					if r.FailureKind != FailureTimeout && r.FailureKind != FailureTruncated || r.AnswerPresent {
						t.Fatalf("%s %s: failed result %+v", task.ID, role, r)
					}
				} else if r.Status != "success" || r.FailureKind != "" {
					t.Fatalf("%s %s: status %q kind %q", task.ID, role, r.Status, r.FailureKind)
				}
				if Interactive(fam) || r.Status != "success" {
					continue
				}
				switch role {
				case "planner":
					planTok += float64(u.TokensOut)
					nPlan++
				case "solver":
					solverTok += float64(u.TokensOut)
					nSolver++
					if d < 0.35 {
						easyTok += float64(u.TokensOut)
						nEasy++
					} else if d > 0.65 {
						hardTok += float64(u.TokensOut)
						nHard++
					}
				}
			}
		}
	}
	t.Logf("mean output tokens: planner %.0f, solver %.0f (easy %.0f, hard %.0f)", planTok/nPlan, solverTok/nSolver, easyTok/nEasy, hardTok/nHard)
	if planTok/nPlan > solverTok/nSolver/2 {
		t.Errorf("planner output is not short: %.0f vs solver %.0f", planTok/nPlan, solverTok/nSolver)
	}
	if hardTok/nHard < 1.2*easyTok/nEasy {
		t.Errorf("output tokens do not grow with difficulty: easy %.0f hard %.0f", easyTok/nEasy, hardTok/nHard)
	}
}

func TestUnknownFamilyAndRole(t *testing.T) {
	p := defaultSim(t)
	w := New(p, testRunSeed)
	if _, err := w.Begin(context.Background(), tasks.Task{ID: "chess/1", Family: "chess"}, 1); err == nil {
		t.Error("Begin accepted an unknown family")
	}
	if Tasks(p, testRunSeed, "chess", "", "train", 3) != nil {
		t.Error("Tasks built records of an unknown family")
	}
	task := Tasks(p, testRunSeed, "medqa", "", "train", 1)[0]
	s, _ := w.Begin(context.Background(), task, 1)
	if _, err := s.Execute(context.Background(), executor.Request{Role: executor.Role{ID: "oracle"}}); err == nil {
		t.Error("Execute accepted an unknown role")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Execute(ctx, executor.Request{Role: executor.Role{ID: "solver"}}); err == nil {
		t.Error("Execute ignored a cancelled context")
	}
}
