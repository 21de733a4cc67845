package sim

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/tasks"
)

// gradeText grades text on a task whose gold answer is forced to gold (QA, MC, math).
func gradeText(t *testing.T, w *World, family, gold, text string) float64 {
	t.Helper()
	task := tasks.Task{ID: family + "/hand-written", Family: family, Answers: []string{gold}}
	if family == "medqa" || family == "gpqa_diamond" {
		task.Options = []string{"A", "B", "C", "D"}
	}
	s, err := w.Begin(context.Background(), task, 1)
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.Grade(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestGradeQA(t *testing.T) {
	w := New(defaultSim(t), testRunSeed)
	cases := []struct {
		text string
		want float64
	}{
		{"The passages link the festival to its founder.\nAnswer: Varelon Castmere", 1},
		{"So the answer is **the Varelon Castmere**.", 1},
		{"Answer: varelon castmere.", 1},
		{"Answer:\n\n  Varelon Castmere\n", 1},                                       // cue line empty: next non-empty line
		{"I compared both passages.\nVarelon Castmere", 1},                           // no cue: last non-empty line
		{"Answer: Dunhill Marwyn\nOn reflection, the answer is Varelon Castmere", 1}, // last cue wins
		{"Answer: Varelon Castmere\nOn reflection, the answer is Dunhill Marwyn", 0},
		{"Answer: Varelon", 0},
		{"Varelon Castmere is mentioned, but the final line says something else", 0},
		{"", 0},
	}
	for _, c := range cases {
		if g := gradeText(t, w, "hotpotqa", "Varelon Castmere", c.text); g != c.want {
			t.Errorf("hotpotqa grade(%q) = %v, want %v", c.text, g, c.want)
		}
	}
	// Yes/no golds compare the first token only.
	if g := gradeText(t, w, "nq_open", "yes", "Answer: yes, both were founded there"); g != 1 {
		t.Errorf("yes/no rule: got %v", g)
	}
	if g := gradeText(t, w, "triviaqa", "1847", "The answer is 1847."); g != 1 {
		t.Errorf("year answer: got %v", g)
	}
}

func TestGradeMC(t *testing.T) {
	w := New(defaultSim(t), testRunSeed)
	cases := []struct {
		text string
		want float64
	}{
		{"The findings point to the third option.\nAnswer: C", 1},
		{"The answer is (C).", 1},
		{"Answer: **C**", 1},
		{"Answer: B\nAfter checking again, Answer: C", 1},
		{"Answer: C\nAfter checking again, Answer: B", 0},
		{"I would pick option C.", 1}, // option cue fallback
		{"C", 1},                      // bare letter
		{"Answer: E", 0},              // not an option
		{"The answer is unclear.", 0},
	}
	for _, c := range cases {
		if g := gradeText(t, w, "medqa", "C", c.text); g != c.want {
			t.Errorf("medqa grade(%q) = %v, want %v", c.text, g, c.want)
		}
	}
	if g := gradeText(t, w, "gpqa_diamond", "A", "Answer: A"); g != 1 {
		t.Errorf("gpqa: got %v", g)
	}
}

func TestGradeMath(t *testing.T) {
	w := New(defaultSim(t), testRunSeed)
	cases := []struct {
		text string
		want float64
	}{
		{"We find m + n = 277, so the final result is \\boxed{277}.", 1},
		{"\\boxed{m+n=277}", 1},                                // last number inside the box
		{"First \\boxed{12}, then corrected: \\boxed{277}", 1}, // last box
		{"\\boxed{277} and then \\boxed{12}", 0},
		{"The total is 12.\n#### 277", 1},
		{"The answer is 277 since 12 divides 36.", 1}, // first number after the cue
		{"We get 12, then 277", 1},                    // last number in the text
		{"\\boxed{0277}", 1},                          // compared as a number
		{"\\boxed{276}", 0},
		{"No number here.", 0},
	}
	for _, c := range cases {
		if g := gradeText(t, w, "aime_2026", "277", c.text); g != c.want {
			t.Errorf("aime grade(%q) = %v, want %v", c.text, g, c.want)
		}
	}
	if g := gradeText(t, w, "math_hard", "42", "\\fbox{42}"); g != 1 {
		t.Errorf("math_hard fbox: got %v", g)
	}
}

func TestGradeCode(t *testing.T) {
	p := defaultSim(t)
	w := New(p, testRunSeed)
	for _, fam := range []string{"mbpp_plus", "swe_bench_verified"} {
		task := Tasks(p, testRunSeed, fam, "", "train", 1)[0]
		tr := w.TaskTruth(task)
		s, _ := w.Begin(context.Background(), task, 1)
		grade := func(text string) float64 {
			g, err := s.Grade(context.Background(), text)
			if err != nil {
				t.Fatal(err)
			}
			return g
		}
		reindented := strings.ReplaceAll(tr.Answer, "    ", "\t")
		cases := []struct {
			text string
			want float64
		}{
			{"Here is the function.\n\n```python\n" + tr.Answer + "\n```", 1},
			{"```python\n" + reindented + "\n\n```\nThis passes the visible test.", 1}, // whitespace does not matter
			{"```\n" + tr.Answer + "\n```", 1},
			{"```python\nimport math\n```\n\n```python\n" + tr.Answer + "\n```", 1}, // the fence that defines the entry point
			{tr.Answer, 1}, // unfenced code
			{"```python\n" + tr.Distractors[0] + "\n```", 0},
			{"```python\n" + tr.Answer + "\n```\n```python\n" + tr.Distractors[1] + "\n```", 1},
			{"I would loop over the input and count.", 0},
		}
		for _, c := range cases {
			if g := grade(c.text); g != c.want {
				t.Errorf("%s grade(%q) = %v, want %v", fam, c.text, g, c.want)
			}
		}
	}
}

// TestGradeOwnOutputs checks that the world's own outputs grade as their answers say, so the
// runtime's graders and the world agree.
func TestGradeOwnOutputs(t *testing.T) {
	p := defaultSim(t)
	w := New(p, testRunSeed)
	for _, fam := range append(append([]string{}, IIDFamilies...), "triviaqa", "musique", "gpqa_diamond", "math_hard", "swe_bench_verified") {
		if Interactive(fam) {
			continue
		}
		for i, task := range Tasks(p, testRunSeed, fam, "", "test", 60) {
			e := begin(t, w, task, uint64(1000+i))
			for _, role := range []string{"solver", "researcher", "tool_user", "verifier", "finalizer"} {
				r := e.run("n-"+role, role, nil, nil)
				s := e.sess.(*Session)
				a, ok := s.statedAnswer(r.Output)
				if r.Status == "failed" {
					if ok || r.AnswerPresent || e.grade("n-"+role) != 0 {
						t.Fatalf("%s %s: failed output states an answer: %q", task.ID, role, r.Output)
					}
					continue
				}
				if !ok || !r.AnswerPresent || a.idx < 0 {
					t.Fatalf("%s %s: output has no readable answer: %q", task.ID, role, r.Output)
				}
				if want := b2f(a.idx == 0); e.grade("n-"+role) != want {
					t.Fatalf("%s %s: answer index %d graded %v", task.ID, role, a.idx, e.grade("n-"+role))
				}
			}
		}
	}
}

// TestCueScansStartAtTheFirstCueWord: the extractors scan from the first place a cue can begin
// (long prose comes first); they must find exactly what a scan of the whole text finds.
func TestCueScansStartAtTheFirstCueWord(t *testing.T) {
	lastMC := func(text string) (string, bool) {
		for _, re := range []*regexp.Regexp{mcCue, mcCueAlt} {
			if ms := re.FindAllStringSubmatch(text, -1); len(ms) > 0 {
				return ms[len(ms)-1][1], true
			}
		}
		return "", false
	}
	prose := strings.Repeat("Weighing the options, step by step. ", 40)
	for _, text := range []string{
		"", "no cue", prose + "Answer: B", prose + "answer is C.", "ANSWER: (D)", "Option: A", prose + "my choice is B\nChoice: C",
		"anſwer: B", prose + "Anſwer: B late", "opTion (A) then answer is: D", "Kelvin choiKe: A", "answers: B", "answer\n\nis: A",
	} {
		if got, want := hasQACue(text), qaCue.MatchString(text); got != want {
			t.Errorf("hasQACue(%.40q) = %v, the whole-text scan %v", text, got, want)
		}
		// A leading "ſ" makes the extractor scan the whole text; where a cue exists, the
		// answer after the last one cannot depend on it.
		if hasQACue(text) {
			got, _ := extractQA(text)
			if want, _ := extractQA("ſ" + text); got != want {
				t.Errorf("extractQA(%.40q) = %q, the whole-text scan %q", text, got, want)
			}
		}
		got, gotOK := extractMC(text, nil)
		want, wantOK := lastMC(text)
		if wantOK && (got != want) || !wantOK && gotOK && len(strings.TrimSpace(text)) > 3 {
			t.Errorf("extractMC(%.40q) = %q, %v; the whole-text scan gives %q, %v", text, got, gotOK, want, wantOK)
		}
	}
}
