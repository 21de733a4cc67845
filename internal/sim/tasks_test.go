package sim

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestTasksRecords(t *testing.T) {
	p := defaultSim(t)
	w := New(p, testRunSeed)
	lengths := map[string][2]int{ // family: typical prompt length range in characters
		"hotpotqa": {3000, 9000}, "musique": {6000, 16000}, "nq_open": {40, 200}, "triviaqa": {40, 200},
		"medqa": {400, 2000}, "gpqa_diamond": {300, 1500}, "aime_2026": {200, 900}, "math_hard": {150, 900},
		"mbpp_plus": {80, 400}, "swe_bench_verified": {900, 3000}, "alfworld": {40, 100}, "webshop": {40, 100},
	}
	for _, fam := range allFamilies {
		ts := Tasks(p, testRunSeed, fam, "", "train", 50)
		again := Tasks(p, testRunSeed, fam, "", "train", 50)
		if !reflect.DeepEqual(ts, again) {
			t.Fatalf("%s: Tasks is not deterministic", fam)
		}
		if other := Tasks(p, testRunSeed+1, fam, "", "train", 50); !Interactive(fam) && reflect.DeepEqual(ts, other) {
			t.Fatalf("%s: Tasks ignores the run seed", fam)
		}
		test := Tasks(p, testRunSeed, fam, "", "test", 2)
		if test[1].ID != fam+"/test-sim-1" || test[1].Split != "test" || test[1].SourceID != "test-sim-1" {
			t.Errorf("%s: test record %+v", fam, test[1])
		}
		tt, _ := TaskType(fam)
		var sumLen int
		for i, task := range ts {
			if task.ID != fmt.Sprintf("%s/sim-%d", fam, i) || task.Family != fam || task.TaskType != tt || task.Split != "train" {
				t.Fatalf("%s: record %d: %+v", fam, i, task)
			}
			tr := w.TaskTruth(task)
			if tr.Difficulty < 0 || tr.Difficulty > 1 || tr.TaskType != tt {
				t.Fatalf("%s: truth %+v", task.ID, tr)
			}
			sumLen += len(task.Prompt)
			if Interactive(fam) {
				want := p.EnvRequirementBase + int(math.Round(float64(p.EnvRequirementSlope)*tr.Difficulty))
				if tr.Unsolvable {
					want = max(want, p.EnvMaxSteps+1) // out of reach (TestUnsolvableShare)
				}
				if len(task.Answers) != 0 || tr.Requirement != want {
					t.Fatalf("%s: answers %v requirement %d at d=%.3f", task.ID, task.Answers, tr.Requirement, tr.Difficulty)
				}
				continue
			}
			if len(task.Answers) != 1 || task.Answers[0] != tr.Answer {
				t.Fatalf("%s: answers %v, truth %q", task.ID, task.Answers, tr.Answer)
			}
			fp, _ := p.Families.ByBenchmark(fam)
			if len(tr.Distractors) != fp.Distractors || len(tr.SurfacePass) != len(tr.Distractors) {
				t.Fatalf("%s: %d distractors (want %d), %d surface flags", task.ID, len(tr.Distractors), fp.Distractors, len(tr.SurfacePass))
			}
			s := &Session{info: familyTable[fam], truth: tr}
			seen := map[string]bool{s.normalize(tr.Answer): true}
			for _, d := range tr.Distractors {
				if seen[s.normalize(d)] {
					t.Fatalf("%s: answer space has a duplicate %q", task.ID, d)
				}
				seen[s.normalize(d)] = true
			}
			checkStyle(t, fam, task.Prompt, tr)
		}
		mean := sumLen / len(ts)
		if r := lengths[fam]; mean < r[0] || mean > r[1] {
			t.Errorf("%s: mean prompt length %d outside %v", fam, mean, r)
		}
	}
	if Tasks(p, testRunSeed, "hotpotqa", "", "train", 0) != nil {
		t.Error("n = 0 should give no records")
	}
	if got := Tasks(p, testRunSeed, "webshop", "custom", "train", 1)[0].TaskType; got != "custom" {
		t.Errorf("task type not written as given: %q", got)
	}
}

func checkStyle(t *testing.T, fam, prompt string, tr TaskTruth) {
	t.Helper()
	fail := func(what string) { t.Fatalf("%s %s: prompt %s:\n%s", fam, tr.TaskID, what, prompt) }
	switch fam {
	case "hotpotqa", "musique":
		if !strings.HasPrefix(prompt, "Answer the question using the passages. Give a short answer only.\nQuestion: ") || !strings.Contains(prompt, "\nPassages:\n[") {
			fail("is not in the passages style")
		}
		if !containsWord(normalizeQA(prompt), normalizeQA(tr.Answer)) {
			fail("does not mention the answer in its passages")
		}
	case "nq_open", "triviaqa":
		if !strings.HasPrefix(prompt, "Answer the question. Give a short answer only.\nQuestion: ") {
			fail("is not in the open QA style")
		}
	case "medqa", "gpqa_diamond":
		for _, l := range []string{"\nA. ", "\nB. ", "\nC. ", "\nD. "} {
			if !strings.Contains(prompt, l) {
				fail("lacks option " + l)
			}
		}
		if !strings.HasSuffix(prompt, "End your reply with 'Answer: <letter>'.") || (fam == "medqa") != strings.Contains(prompt, "medical") {
			fail("is not in the MC style")
		}
	case "aime_2026", "math_hard":
		if !strings.Contains(prompt, "Put the final answer in \\boxed{}.") || (fam == "aime_2026") != strings.Contains(prompt, "integer from 0 to 999") {
			fail("is not in the math style")
		}
	case "mbpp_plus", "swe_bench_verified":
		if !strings.HasSuffix(prompt, "Your code should pass this test:\n"+tr.VisibleTest) || !strings.HasPrefix(tr.VisibleTest, "assert "+tr.Function+"(") {
			fail("has no visible test")
		}
		if !strings.Contains(tr.Answer, "def "+tr.Function+"(") {
			fail("has a truth without the entry function")
		}
	}
}

// TestTruthRegenerable checks that the hidden truth depends only on (run seed, task id) and the
// parameters: another World rebuilds it, and ood_difficulty_shift shifts OOD families harder (the
// calibrated world sets it to 0 and gives OOD rows their own levels instead).
func TestTruthRegenerable(t *testing.T) {
	p := defaultSim(t)
	p.OODDifficultyShift = 0.15
	var iid, ood, nIID, nOOD float64
	for _, fam := range allFamilies {
		for _, task := range Tasks(p, testRunSeed, fam, "", "train", 200) {
			a := New(p, testRunSeed).TaskTruth(task)
			bare := task
			bare.Prompt, bare.Answers, bare.Family = "", nil, "" // the id alone suffices
			if b := New(p, testRunSeed).TaskTruth(bare); !reflect.DeepEqual(a, b) {
				t.Fatalf("%s: truth not regenerable from the id: %+v vs %+v", task.ID, a, b)
			}
			if a.OOD {
				ood += a.Difficulty
				nOOD++
			} else {
				iid += a.Difficulty
				nIID++
			}
		}
	}
	t.Logf("mean difficulty: IID %.3f, OOD %.3f", iid/nIID, ood/nOOD)
	if ood/nOOD < iid/nIID+0.05 {
		t.Errorf("OOD families are not harder: %.3f vs %.3f", ood/nOOD, iid/nIID)
	}
}

// TestForeignRecords checks that the world runs on records it did not generate (a real
// benchmark row): the record's gold answer becomes the truth's answer.
func TestForeignRecords(t *testing.T) {
	w := New(defaultSim(t), testRunSeed)
	for _, c := range []struct{ fam, gold string }{{"nq_open", "April 2, 2018"}, {"medqa", "A"}, {"aime_2026", "277"}} {
		task := Tasks(w.Params(), testRunSeed, c.fam, "", "test", 1)[0]
		task.ID, task.Answers = c.fam+"/test-356", []string{c.gold}
		tr := w.TaskTruth(task)
		if tr.Answer != c.gold {
			t.Errorf("%s: truth answer %q, want the record's %q", c.fam, tr.Answer, c.gold)
		}
		for _, d := range tr.Distractors {
			if d == c.gold {
				t.Errorf("%s: the gold answer is also a distractor", c.fam)
			}
		}
	}
}

func TestSkillPrior(t *testing.T) {
	p := defaultSim(t)
	w := New(p, testRunSeed)
	counts := map[string]float64{}
	const n = 4000
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("evosteer-%020x", i)
		e, c := w.SkillEffect(id)
		if e2, c2 := New(p, testRunSeed).SkillEffect(id); e2 != e || c2 != c {
			t.Fatal("SkillEffect is not deterministic")
		}
		counts[c]++
		switch c {
		case SkillHelpful:
			if math.Abs(e-p.SkillHelpfulEffect) > p.SkillEffectJitter {
				t.Fatalf("helpful effect %g", e)
			}
		case SkillHarmful:
			if math.Abs(e-p.SkillHarmfulEffect) > p.SkillEffectJitter {
				t.Fatalf("harmful effect %g", e)
			}
		case SkillNeutral:
			if e != 0 {
				t.Fatalf("neutral effect %g", e)
			}
		default:
			t.Fatalf("class %q", c)
		}
	}
	t.Logf("skill prior: helpful %.3f neutral %.3f harmful %.3f", counts[SkillHelpful]/n, counts[SkillNeutral]/n, counts[SkillHarmful]/n)
	if math.Abs(counts[SkillHelpful]/n-p.SkillHelpfulProb) > 0.03 || math.Abs(counts[SkillHarmful]/n-p.SkillHarmfulProb) > 0.03 {
		t.Errorf("skill classes off the prior: %v", counts)
	}
	same := 0
	for i := 0; i < 200; i++ {
		id := fmt.Sprintf("evosteer-%020x", i)
		_, a := w.SkillEffect(id)
		_, b := New(p, testRunSeed+1).SkillEffect(id)
		if a == b {
			same++
		}
	}
	if same == 200 {
		t.Error("skill effects do not depend on the run seed")
	}
}
