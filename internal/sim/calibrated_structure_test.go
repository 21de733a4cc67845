package sim

import (
	"context"
	"testing"

	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/seed"
)

// TestDifficultyIsAnInverseCDF: a task's difficulty is the Beta quantile of one uniform of its
// own, so a change of the Beta shape moves every difficulty in the same direction and leaves the
// task's other draws (answer, distractors, surface checks) exactly as they were.
func TestDifficultyIsAnInverseCDF(t *testing.T) {
	p := defaultSim(t)
	harder := p
	harder.Families.HotpotQA.DifficultyA += 1.5 // a larger a moves mass toward d = 1
	w, wh := New(p, testRunSeed), New(harder, testRunSeed)
	for _, task := range Tasks(p, testRunSeed, "hotpotqa", "", "train", 200) {
		a, b := w.TaskTruth(task), wh.TaskTruth(task)
		if b.Difficulty < a.Difficulty {
			t.Fatalf("%s: difficulty fell from %.4f to %.4f when the shape moved toward 1", task.ID, a.Difficulty, b.Difficulty)
		}
		if a.Answer != b.Answer || len(a.Distractors) != len(b.Distractors) || a.Distractors[0] != b.Distractors[0] || a.SurfacePass[0] != b.SurfacePass[0] {
			t.Fatalf("%s: a shape change reshuffled the task's other draws: %+v vs %+v", task.ID, a, b)
		}
	}
}

// TestBareLogitAppliesToTheExecutorAlone: bare_logit moves the correctness of bare executions
// (the direct baseline's) and of no other; with common random numbers a lower offset can only
// turn right answers wrong.
func TestBareLogitAppliesToTheExecutorAlone(t *testing.T) {
	p := defaultSim(t)
	p.Families.NQOpen.BareLogit = 0
	low := p
	low.Families.NQOpen.BareLogit = -3
	var plain, bare, bareLow, plainLow float64
	for _, task := range Tasks(p, testRunSeed, "nq_open", "", "train", 300) {
		for _, c := range []struct {
			p    *float64
			w    *World
			bare bool
		}{{&plain, New(p, testRunSeed), false}, {&bare, New(p, testRunSeed), true}, {&bareLow, New(low, testRunSeed), true}, {&plainLow, New(low, testRunSeed), false}} {
			sess, err := c.w.Begin(context.Background(), task, 1)
			if err != nil {
				t.Fatal(err)
			}
			role := testRole("nq_open", "solver")
			req := executor.Request{NodeID: "n0", Seed: seed.Derive(7, task.ID), Role: role, Prompt: task.Prompt, Bare: c.bare}
			res, err := sess.Execute(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			r, _ := sess.Grade(context.Background(), res.Output)
			*c.p += r
		}
	}
	if plain != bare || plain != plainLow {
		t.Errorf("bare_logit 0 or a harnessed execution changed the score: plain %v, bare %v, plain with -3 %v", plain, bare, plainLow)
	}
	if bareLow >= bare-20 {
		t.Errorf("bare_logit -3 solved %v of 300, against %v at 0: want far fewer", bareLow, bare)
	}
}

// TestUnsolvableShare: a share unsolvable_share of a benchmark's tasks is out of every agent's
// reach (no correct answer, no search hit, an interactive goal beyond env_max_steps); the share
// is drawn on a stream of its own, so it moves no other draw, and with common random numbers it
// can only turn solved tasks unsolved.
func TestUnsolvableShare(t *testing.T) {
	p := defaultSim(t)
	p.Families.HotpotQA.UnsolvableShare, p.Families.ALFWorld.UnsolvableShare = 0, 0
	some := p
	some.Families.HotpotQA.UnsolvableShare, some.Families.ALFWorld.UnsolvableShare = 0.3, 0.3
	for _, fam := range []string{"hotpotqa", "alfworld"} {
		w, ws := New(p, testRunSeed), New(some, testRunSeed)
		var unsolvable, solvedBefore, solvedAfter, turned float64
		ts := Tasks(p, testRunSeed, fam, "", "train", 400)
		for _, task := range ts {
			a, b := w.TaskTruth(task), ws.TaskTruth(task)
			if a.Unsolvable || a.Difficulty != b.Difficulty || a.Answer != b.Answer || a.FailRate != b.FailRate {
				t.Fatalf("%s: the share moved another draw: %+v vs %+v", task.ID, a, b)
			}
			if b.Unsolvable {
				unsolvable++
				if b.SearchHitRate != 0 || (fam == "alfworld" && b.Requirement <= some.EnvMaxSteps) {
					t.Fatalf("%s: an unsolvable task can be reached: %+v", task.ID, b)
				}
			}
			play := func(w *World) float64 {
				e := begin(t, w, task, seed.Derive(testRunSeed, "unsolvable", task.ID))
				for _, id := range []string{"n0", "n1", "n2"} { // three agents, each with the last one's output
					var in []string
					if id != "n0" {
						in = []string{"n0"}
					}
					e.run(id, "solver", in, nil)
				}
				return e.grade("n2")
			}
			before, after := play(w), play(ws)
			solvedBefore += before
			solvedAfter += after
			if b.Unsolvable && after != 0 {
				t.Fatalf("%s: an unsolvable task was solved", task.ID)
			}
			if after > before {
				turned++
			}
		}
		share := unsolvable / float64(len(ts))
		t.Logf("%s: unsolvable %.3f, solved %.0f -> %.0f of %d", fam, share, solvedBefore, solvedAfter, len(ts))
		if share < 0.24 || share > 0.36 {
			t.Errorf("%s: unsolvable share %.3f, want about 0.3", fam, share)
		}
		if turned > 0 || solvedAfter >= solvedBefore {
			t.Errorf("%s: solved %v -> %v with %v tasks turned solved: the share may only take tasks away", fam, solvedBefore, solvedAfter, turned)
		}
	}
}
