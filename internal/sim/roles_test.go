package sim

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/seed"
)

// solveRate runs script on n tasks of a family and returns the share graded 1 on node out.
func solveRate(t *testing.T, w *World, fam string, n int, tag string, script func(e *episode) string) float64 {
	t.Helper()
	var s float64
	for _, task := range Tasks(w.Params(), testRunSeed, fam, "", "train", n) {
		e := begin(t, w, task, seed.Derive(testRunSeed, tag, task.ID))
		s += e.grade(script(e))
	}
	return s / float64(n)
}

func single(role string) func(e *episode) string {
	return func(e *episode) string { e.run("n0", role, nil, nil); return "n0" }
}

// TestRoleCompetence checks, on the first world, the per-family competence the model promises: researchers are
// strong on QA with search and weak elsewhere, tool users strong on math and code with python,
// finalizers weak alone but fine with inputs, and a plan helps the node that receives it.
func TestRoleCompetence(t *testing.T) {
	p := firstWorld(t)
	w := New(p, testRunSeed)
	const n = 600
	rates := map[string]map[string]float64{}
	for _, fam := range []string{"hotpotqa", "nq_open", "aime_2026", "mbpp_plus"} {
		rates[fam] = map[string]float64{}
		for _, role := range []string{"solver", "researcher", "tool_user", "finalizer", "verifier"} {
			rates[fam][role] = solveRate(t, w, fam, n, "role/"+role, single(role))
		}
		rates[fam]["planner+solver"] = solveRate(t, w, fam, n, "role/plan", func(e *episode) string {
			e.run("n0", "planner", nil, nil)
			e.run("n1", "solver", []string{"n0"}, nil)
			return "n1"
		})
		rates[fam]["solver+finalizer"] = solveRate(t, w, fam, n, "role/fin", func(e *episode) string {
			e.run("n0", "solver", nil, nil)
			e.run("n1", "finalizer", []string{"n0"}, nil)
			return "n1"
		})
		r := rates[fam]
		t.Logf("%-10s solver %.3f researcher %.3f tool_user %.3f verifier %.3f finalizer %.3f | planner->solver %.3f solver->finalizer %.3f",
			fam, r["solver"], r["researcher"], r["tool_user"], r["verifier"], r["finalizer"], r["planner+solver"], r["solver+finalizer"])
	}
	for _, fam := range []string{"hotpotqa", "nq_open"} {
		if rates[fam]["researcher"] < rates[fam]["solver"]+0.05 {
			t.Errorf("%s: researcher with search %.3f not above solver %.3f", fam, rates[fam]["researcher"], rates[fam]["solver"])
		}
	}
	for _, fam := range []string{"aime_2026", "mbpp_plus"} {
		if rates[fam]["researcher"] > rates[fam]["solver"]-0.05 {
			t.Errorf("%s: researcher without search %.3f not below solver %.3f", fam, rates[fam]["researcher"], rates[fam]["solver"])
		}
		if rates[fam]["tool_user"] < rates[fam]["solver"]+0.05 {
			t.Errorf("%s: tool_user with python %.3f not above solver %.3f", fam, rates[fam]["tool_user"], rates[fam]["solver"])
		}
	}
	for fam, r := range rates {
		if r["finalizer"] > r["solver"]-0.1 {
			t.Errorf("%s: finalizer alone %.3f is not weak (solver %.3f)", fam, r["finalizer"], r["solver"])
		}
		if r["solver+finalizer"] < r["finalizer"]+0.1 {
			t.Errorf("%s: finalizer with an input %.3f barely above alone %.3f", fam, r["solver+finalizer"], r["finalizer"])
		}
		if r["planner+solver"] < r["solver"]+0.02 {
			t.Errorf("%s: plan bonus missing: planner+solver %.3f vs solver %.3f", fam, r["planner+solver"], r["solver"])
		}
	}
}

// TestPlannerWritesNoAnswer checks that plans are titled numbered lists without an answer cue,
// and that the answer-less plan is not graded correct.
func TestPlannerWritesNoAnswer(t *testing.T) {
	p := defaultSim(t)
	w := New(p, testRunSeed)
	for _, fam := range append(append([]string{}, IIDFamilies...), "musique", "gpqa_diamond") {
		for _, task := range Tasks(p, testRunSeed, fam, "", "train", 30) {
			e := begin(t, w, task, seed.Derive(testRunSeed, "plan", task.ID))
			r := e.run("n0", "planner", nil, nil)
			if r.Status != "success" {
				continue
			}
			if r.AnswerPresent || !strings.HasPrefix(r.Output, "Plan:\n1. ") {
				t.Fatalf("%s: planner output %q (answer present %v)", task.ID, r.Output, r.AnswerPresent)
			}
			low := strings.ToLower(r.Output)
			for _, cue := range []string{"answer", "boxed", "```"} {
				if strings.Contains(low, cue) {
					t.Fatalf("%s: plan contains %q: %q", task.ID, cue, r.Output)
				}
			}
			if !Interactive(fam) && e.grade("n0") != 0 {
				t.Fatalf("%s: a plan was graded correct", task.ID)
			}
		}
	}
}

// verifierRates plays a solver then a verifier checking it and returns the flag rates against
// wrong inputs (recall) and correct ones (false alarms), the false-alarm rate on the hardest and
// easiest thirds of the tasks, and whether every flagged answer was replaced.
func verifierRates(t *testing.T, p config.Sim) (recall, fa, faHard, faEasy float64, replaced bool) {
	t.Helper()
	w := New(p, testRunSeed)
	var flagWrong, nWrong, flagRight, nRight, changedOnFlag, nFlag float64
	var hard, nHard, easy, nEasy float64
	for _, fam := range []string{"hotpotqa", "medqa", "aime_2026", "mbpp_plus"} {
		for _, task := range Tasks(p, testRunSeed, fam, "", "train", 500) {
			e := begin(t, w, task, seed.Derive(testRunSeed, "verify", task.ID))
			e.run("n0", "solver", nil, nil)
			if e.key("n0") == "" {
				continue
			}
			r := e.run("n1", "verifier", []string{"n0"}, nil)
			if r.Status != "success" {
				continue
			}
			flagged := strings.Contains(r.Output, "Verdict: the inputs contain an error")
			if e.grade("n0") == 1 {
				nRight++
				flagRight += b2f(flagged)
				switch d := w.TaskTruth(task).Difficulty; {
				case d > 2.0/3:
					nHard++
					hard += b2f(flagged)
				case d < 1.0/3:
					nEasy++
					easy += b2f(flagged)
				}
			} else {
				nWrong++
				flagWrong += b2f(flagged)
			}
			if flagged {
				nFlag++
				changedOnFlag += b2f(e.key("n1") != e.key("n0"))
			}
		}
	}
	recall, fa = flagWrong/nWrong, flagRight/nRight
	t.Logf("verifier (competence %g): recall %.3f (n=%.0f), false alarms %.3f (n=%.0f; hard %.3f, easy %.3f), flagged answers changed %.3f",
		p.VerifierFalseAlarmCompetence, recall, nWrong, fa, nRight, hard/nHard, easy/nEasy, changedOnFlag/nFlag)
	return recall, fa, hard / nHard, easy / nEasy, changedOnFlag == nFlag
}

// TestVerifierRecallAndFalseAlarm measures the verifier's flag rates against wrong and correct
// inputs. Without competence they sit near verifier_recall and verifier_false_alarm; with it, a
// verifier doubts correct answers less, and less on easy tasks than on hard ones, while its
// recall stays.
func TestVerifierRecallAndFalseAlarm(t *testing.T) {
	p := withVerifyQuality(defaultSim(t), 1)
	p.VerifierFalseAlarmCompetence = 0
	recall, fa, _, _, replaced := verifierRates(t, p)
	if recall < p.VerifierRecall-0.06 || recall > p.VerifierRecall+0.06 {
		t.Errorf("recall %.3f, want about %.2f", recall, p.VerifierRecall)
	}
	if fa < p.VerifierFalseAlarm-0.05 || fa > p.VerifierFalseAlarm+0.05 {
		t.Errorf("false alarms %.3f, want about %.2f", fa, p.VerifierFalseAlarm)
	}
	if !replaced {
		t.Error("a flagging verifier repeated the flagged answer")
	}

	p.VerifierFalseAlarmCompetence = 1
	recall1, fa1, hard, easy, replaced := verifierRates(t, p)
	if fa1 <= 0 || fa1 > fa/2 {
		t.Errorf("false alarms with competence %.3f, want above 0 and at most half of %.3f", fa1, fa)
	}
	if hard <= easy {
		t.Errorf("false alarms on hard tasks %.3f, want above those on easy tasks %.3f", hard, easy)
	}
	if math.Abs(recall1-recall) > 0.03 {
		t.Errorf("recall moved from %.3f to %.3f: competence must touch only false alarms", recall, recall1)
	}
	if !replaced {
		t.Error("a flagging verifier repeated the flagged answer")
	}
}

// withVerifyQuality sets verify_quality to q on the benchmarks verifierRates plays.
func withVerifyQuality(p config.Sim, q float64) config.Sim {
	for _, f := range []string{"hotpotqa", "medqa", "aime_2026", "mbpp_plus"} {
		p.Families.Row(f).VerifyQuality = q
	}
	return p
}

// TestVerifyQualitySetsBothFlagRates: a benchmark's verify_quality q makes the verifier flag a
// wrong answer with probability 1 − (1 − verifier_recall)^q and a right one with
// 1 − (1 − verifier_false_alarm)^(1/q): at q = 0 it flags every right answer and no wrong one.
func TestVerifyQualitySetsBothFlagRates(t *testing.T) {
	p := defaultSim(t)
	p.VerifierFalseAlarmCompetence = 0
	recall0, fa0, _, _, _ := verifierRates(t, withVerifyQuality(p, 0))
	recall3, fa3, _, _, _ := verifierRates(t, withVerifyQuality(p, 3))
	if recall0 != 0 || fa0 != 1 {
		t.Errorf("verify_quality 0: recall %.3f, false alarms %.3f; want 0 and 1", recall0, fa0)
	}
	if want := 1 - math.Pow(1-p.VerifierRecall, 3); math.Abs(recall3-want) > 0.04 {
		t.Errorf("verify_quality 3: recall %.3f, want about %.3f", recall3, want)
	}
	if want := 1 - math.Pow(1-p.VerifierFalseAlarm, 1.0/3); math.Abs(fa3-want) > 0.03 {
		t.Errorf("verify_quality 3: false alarms %.3f, want about %.3f", fa3, want)
	}
}

// TestRerunPersistence checks that a rerun repeats its previous answer about rerun_persistence
// of the time (plus fresh draws that land on the same answer).
func TestRerunPersistence(t *testing.T) {
	p := defaultSim(t)
	w := New(p, testRunSeed)
	var same, n float64
	for _, task := range Tasks(p, testRunSeed, "aime_2026", "", "train", 800) {
		e := begin(t, w, task, seed.Derive(testRunSeed, "rerun", task.ID))
		e.run("n0", "solver", nil, nil)
		k0 := e.key("n0")
		e.run("n0", "solver", nil, nil)
		if k0 == "" || e.key("n0") == "" {
			continue
		}
		n++
		same += b2f(e.key("n0") == k0)
	}
	t.Logf("rerun gives the same answer %.3f of %.0f", same/n, n)
	if same/n < p.RerunPersistence || same/n > p.RerunPersistence+0.35 {
		t.Errorf("rerun persistence %.3f, want in [%.2f, %.2f]", same/n, p.RerunPersistence, p.RerunPersistence+0.35)
	}
}

// TestCodeSurfaceChecks checks the "looks finished" trap: python runs of correct code are clean,
// and wrong code runs clean about trap_rate of the time.
func TestCodeSurfaceChecks(t *testing.T) {
	p := defaultSim(t)
	w := New(p, testRunSeed)
	var cleanWrong, nWrong, cleanRight, nRight float64
	for _, task := range Tasks(p, testRunSeed, "mbpp_plus", "", "train", 1200) {
		e := begin(t, w, task, seed.Derive(testRunSeed, "surface", task.ID))
		r := e.run("n0", "tool_user", nil, nil)
		if r.Status != "success" {
			continue
		}
		var py *executor.ToolCall
		for i := range r.Tools {
			if r.Tools[i].Tool == "python" {
				py = &r.Tools[i]
			}
		}
		if py == nil {
			t.Fatalf("%s: tool_user with python ran no program", task.ID)
		}
		if py.Status == "timeout" {
			continue
		}
		if e.grade("n0") == 1 {
			nRight++
			cleanRight += b2f(py.Status == "success")
		} else {
			nWrong++
			cleanWrong += b2f(py.Status == "success")
		}
	}
	t.Logf("python clean: correct code %.3f (n=%.0f), wrong code %.3f (n=%.0f)", cleanRight/nRight, nRight, cleanWrong/nWrong, nWrong)
	if cleanRight/nRight != 1 {
		t.Errorf("correct code did not always run clean: %.3f", cleanRight/nRight)
	}
	if tr := p.Families.MBPPPlus.TrapRate; cleanWrong/nWrong < tr-0.12 || cleanWrong/nWrong > tr+0.12 {
		t.Errorf("wrong code ran clean %.3f, want about the trap rate %.2f", cleanWrong/nWrong, tr)
	}
}

// TestSkillsShiftCorrectness checks that a helpful skill raises and a harmful one lowers the
// solve rate on the same seeds (paired arms share every other draw).
func TestSkillsShiftCorrectness(t *testing.T) {
	p := firstWorld(t) // mid-range levels, where a logit effect moves the rate most
	w := New(p, testRunSeed)
	var helpful, harmful, neutral string
	for i := 0; helpful == "" || harmful == "" || neutral == ""; i++ {
		id := "evosteer-" + strings.Repeat("0", 14) + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + "0000"
		switch _, c := w.SkillEffect(id); c {
		case SkillHelpful:
			helpful = id
		case SkillHarmful:
			harmful = id
		case SkillNeutral:
			neutral = id
		}
	}
	rate := func(skill string) float64 {
		var sk []executor.Skill
		if skill != "" {
			sk = []executor.Skill{{ID: skill, Text: "Name: a skill"}}
		}
		return solveRate(t, w, "medqa", 800, "skills", func(e *episode) string { e.run("n0", "solver", nil, sk); return "n0" })
	}
	none, h, b, z := rate(""), rate(helpful), rate(harmful), rate(neutral)
	t.Logf("medqa solver: no skill %.3f, helpful %.3f, harmful %.3f, neutral %.3f", none, h, b, z)
	if h < none+0.05 || b > none-0.05 || z != none {
		t.Errorf("skill effects not as drawn: none %.3f helpful %.3f harmful %.3f neutral %.3f", none, h, b, z)
	}
}

// Agents of one model fail together: at failure_correlation 1 three solvers on a task all fail
// or none does, and the share of tasks with a failure is about the single execution's failure
// rate; at 0 the three fail independently, so a task sees some failure about three times as
// often and a mixed team (some failed, some not) is common.
func TestFailureCorrelationMakesAgentsFailTogether(t *testing.T) {
	for _, corr := range []float64{0, 1} {
		p := defaultSim(t)
		p.FailBase, p.FailSlope, p.FailureCorrelation = 0.15, 0, corr
		w := New(p, testRunSeed)
		ts := Tasks(p, testRunSeed, "hotpotqa", "", "train", 400)
		mixed, any := 0, 0
		for i, task := range ts {
			e := begin(t, w, task, uint64(i))
			failed := 0
			for k := range 3 {
				if e.run(fmt.Sprintf("n%d", k), "solver", nil, nil).Status == "failed" {
					failed++
				}
			}
			if failed > 0 {
				any++
			}
			if failed > 0 && failed < 3 {
				mixed++
			}
		}
		share := float64(any) / float64(len(ts))
		switch corr {
		case 1:
			if mixed != 0 || math.Abs(share-0.15) > 0.05 {
				t.Errorf("correlation 1: %d mixed teams, a failure on %.2f of tasks (want 0 and about 0.15)", mixed, share)
			}
		case 0:
			if mixed < len(ts)/5 || math.Abs(share-(1-0.85*0.85*0.85)) > 0.06 {
				t.Errorf("correlation 0: %d mixed teams, a failure on %.2f of tasks (want many and about 0.39)", mixed, share)
			}
		}
	}
}
