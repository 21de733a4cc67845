package tasks

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/cpuslot"
	"github.com/evosteer/evosteer-go/internal/sandbox"
)

// The expected values of the extraction tables were computed with the reference's Python
// rules (curve_benchmarks) on the same strings.

func TestShortAnswerExtraction(t *testing.T) {
	cases := map[string]string{
		"The answer is Paris.":    "Paris",
		"Final answer: **Paris**": "Paris",
		"Answer:\n\nParis":        "Paris",      // the cue's line is empty: next line
		"**Answer:**\nParis":      "Paris",      // only emphasis after the cue
		"I think\nParis\n":        "Paris",      // no cue: the last nonempty line
		"answer: 'Euryanthe'.":    "Euryanthe'", // quotes stripped before the period
		"":                        "",
		"Answer: Rome\nmore\nFinal answer: Paris": "Paris", // the last cue wins
		"Answer:   ":                    "",
		"Answer: ...\n`Paris`":          "Paris",
		"The answer isn't clear\nParis": "n't clear",
		"ANSWER IS london":              "london",
	}
	for in, want := range cases {
		if got := shortAnswer(in); got != want {
			t.Errorf("shortAnswer(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestQANormalisationAndMatch(t *testing.T) {
	norm := map[string]string{
		"The Eiffel Tower!":   "eiffel tower",
		"an Apple a day":      "apple day",
		"Thaïs (opera)":       "thaïs opera",
		"U.S.A.":              "usa",
		"the":                 "",
		"  Anne\u00a0Frank ":  "anne frank", // non-breaking space is whitespace
		"Ça va\u200e":         "ça va",      // a format character is neither word nor space
		"theatre":             "theatre",    // articles only as whole words
		"İstanbul":            "istanbul",   // lower() gives i + U+0307, which is dropped
		"ΟΔΟΣ":                "οδος",
		"Macy's, Sears & co.": "macys sears co",
	}
	for in, want := range norm {
		if got := normalizeQA(in); got != want {
			t.Errorf("normalizeQA(%q) = %q, want %q", in, got, want)
		}
	}
	cases := []struct {
		output string
		golds  []string
		em     float64
		f1     float64
	}{
		{"Answer: The Eiffel Tower", []string{"Eiffel Tower"}, 1, 1},
		{"Answer: Eiffel Tower in Paris", []string{"Eiffel Tower"}, 0, 2.0 / 3},
		{"Answer: Yes, both are paintings", []string{"yes"}, 1, 1}, // yes/no: the first token
		{"Answer: yesterday", []string{"yes"}, 0, 0},
		{"Answer: no", []string{"yes"}, 0, 0},
		{"Answer: SAP Center", []string{"the SAP Center", "SAP Center at San Jose"}, 1, 1},
		{"Answer: 10 episodes", []string{"10", "ten"}, 0, 2.0 / 3},
		{"", []string{"Paris"}, 0, 0},
	}
	for _, c := range cases {
		s := gradeQA(c.output, c.golds)
		if s.Reward != c.em || s.F1 == nil || math.Abs(*s.F1-c.f1) > 1e-12 || s.Grader != GraderQA {
			t.Errorf("gradeQA(%q, %q) = %v f1 %v, want %v f1 %v", c.output, c.golds, s.Reward, *s.F1, c.em, c.f1)
		}
	}
}

func TestChoiceLetters(t *testing.T) {
	opts := []string{"A", "B", "C", "D"}
	cases := map[string]string{
		"Answer: C":                           "C",
		"The answer is (B).":                  "B",
		"**Answer:** D":                       "D",
		"Option C is correct":                 "C",
		"Answer: In my view it is B":          "",  // "I" is followed by a letter: not a choice
		"answer: In my view, option B":        "B", // the option cue when the answer cue finds nothing
		" (B) ":                               "B",
		"B.":                                  "B",
		"E":                                   "", // not an option
		"Answer: E, no wait, Answer: A":       "A",
		"ANSWER IS C":                         "C",
		"answer: Is it B?":                    "",
		"The correct choice is [D]":           "D",
		"Answer:\n\nB":                        "B",
		"answer: AB":                          "",
		"Answers: B":                          "",
		"Answer: A\nOn reflection, Answer: B": "B",
	}
	for in, want := range cases {
		if got := choiceLetter(in, opts); got != want {
			t.Errorf("choiceLetter(%q) = %q, want %q", in, got, want)
		}
	}
	task := Task{ID: "medqa/1", Family: "medqa", Options: opts, Answers: []string{"C"}}
	if s := gradeChoice("Answer: C", task); s.Reward != 1 || s.Prediction != "C" {
		t.Errorf("%+v", s)
	}
	if s := gradeChoice("Answer: D", task); s.Reward != 0 {
		t.Errorf("%+v", s)
	}
}

func TestIntegerAnswers(t *testing.T) {
	cases := map[string]string{
		`\boxed{277}`:                 "277",
		"#### 62":                     "62",
		`\boxed{12} #### 13`:          "12", // boxed outranks ####
		"The answer is 079.":          "79",
		"Answer: 1,000":               "1000",
		"so 5 then 7":                 "7",
		`\boxed{\frac{1}{2}}`:         "2", // braces inside: not a simple boxed answer
		"The answer is: 42 (not 41)":  "42",
		"The answer isn't 5, it is 7": "7", // "isn't" is no cue
		"Answer: \u0662\u0667\u0667":  "277",
		"answer = -3.50 dollars":      "-7/2",
		"\\boxed{x}\n#### 9":          "9",
		"nothing here":                "",
	}
	for in, want := range cases {
		v, ok := integerPrediction(in)
		got := ""
		if ok {
			got = v.RatString()
		}
		if got != want {
			t.Errorf("integerPrediction(%q) = %q, want %q", in, got, want)
		}
	}
	task := Task{ID: "aime_2026/1", Family: "aime_2026", Answers: []string{"277"}}
	for out, want := range map[string]float64{`\boxed{277}`: 1, `\boxed{277.0}`: 1, `\boxed{278}`: 0, "no idea": 0} {
		if s, err := gradeInteger(out, task); err != nil || s.Reward != want {
			t.Errorf("%q: %+v %v", out, s, err)
		}
	}
}

func TestMathEquivalence(t *testing.T) {
	cases := []struct {
		output, gold string
		want         float64
	}{
		{`\boxed{\frac{3}{4}}`, `\frac{3}{4}`, 1},
		{`\boxed{0.75}`, `\frac{3}{4}`, 1},     // exact fraction equality
		{`\boxed{3/4}`, `\frac{3}{4}`, 1},      // a/b becomes \frac{a}{b}
		{`\boxed{\dfrac34}`, `\frac{3}{4}`, 1}, // dfrac and unbraced parts
		{`\boxed{x = 5}`, "5", 1},              // a short left-hand side is dropped
		{`\boxed{90^\circ}`, "90", 1},
		{`\boxed{\sqrt2}`, `\sqrt{2}`, 1},
		{`\fbox{5}`, "5", 1},
		{`so \boxed 5$ done`, "5", 1},
		{"Final answer: $\\frac{1}{2}$.", `\frac{1}{2}`, 1}, // no box: the line after the cue
		{`\boxed{1,000}`, "1000", 1},
		{`\boxed{0.5}`, `\frac{1}{2}`, 1},
		{`\boxed{\left( 1, 2 \right)}`, "(1,2)", 1},
		{`\boxed{10\%}`, "10", 1},
		{`\boxed{5 \text{ cm}}`, "5", 1},
		{`\boxed{4/3}`, `\frac{3}{4}`, 0},
		{`\boxed{\frac{3}{4}`, `\frac{3}{4}`, 0}, // unbalanced braces and no cue: nothing read
		{"The result is 3/4", `\frac{3}{4}`, 0},  // no box and no cue
	}
	for _, c := range cases {
		if s := gradeMath(c.output, Task{Answers: []string{c.gold}}); s.Reward != c.want {
			t.Errorf("gradeMath(%q, %q) = %v (read %q)", c.output, c.gold, s.Reward, s.Prediction)
		}
	}
	for in, want := range map[string]string{`\frac12`: `\frac{1}{2}`, `\frac1{2}`: `\frac{1}{2}`, "-1/2": `\frac{-1}{2}`,
		"01/2": "01/2", ".5": `\frac{1}{2}`, `\$3`: "3", "x=\\frac{1}{3}": `\frac{1}{3}`, `\tfrac{2}{3}`: `\frac{2}{3}`} {
		if got := stripMath(in); got != want {
			t.Errorf("stripMath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEnvironmentFamiliesAreRefused(t *testing.T) {
	g := NewGraders(nil)
	for _, fam := range []string{"alfworld", "webshop", "swe_bench_verified"} {
		err := g.Check(Task{ID: fam + "/1", Family: fam})
		if err == nil || !strings.Contains(err.Error(), fam+" tasks are scored by their own environment harness") {
			t.Errorf("%s: %v", fam, err)
		}
	}
	if err := g.Check(Task{ID: "mbpp_plus/1", Family: "mbpp_plus"}); err == nil || !strings.Contains(err.Error(), "sandbox") {
		t.Errorf("code without a sandbox: %v", err)
	}
}

// testSandbox is the sandbox of the code-grading tests.
func testSandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	py := os.Getenv("EVOSTEER_SANDBOX_PYTHON")
	if py == "" {
		py = "python3"
	}
	sb, err := sandbox.New(sandbox.Config{Interpreter: py, Concurrency: 4,
		Limits: sandbox.Limits{CPU: 10 * time.Second, Wall: 60 * time.Second, Memory: 4 << 30, FileSize: 8 << 20, OpenFiles: 64, Processes: 64}})
	if err != nil {
		t.Skipf("no python interpreter for the sandbox: %v", err)
	}
	return sb
}

// requireNumpy skips a test whose hidden tests import numpy when the interpreter lacks it.
func requireNumpy(t *testing.T, sb *sandbox.Sandbox) {
	t.Helper()
	if res := sb.Run(context.Background(), "import numpy"); res.Status != sandbox.StatusSuccess {
		t.Skip("skipped: the MBPP+ hidden tests import numpy, which the sandbox's interpreter lacks; " +
			"install Debian's python3-numpy and set EVOSTEER_SANDBOX_PYTHON=/usr/bin/python3 (as .ci/run does)")
	}
}

func fixtureTask(t *testing.T, id string) Task {
	t.Helper()
	ts, err := ReadJSONL("testdata/tasks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ts {
		if x.ID == id {
			return x
		}
	}
	t.Fatalf("no fixture %s", id)
	return Task{}
}

func TestCodeExtractionSanitisingAndSentinel(t *testing.T) {
	g := NewGraders(testSandbox(t))
	task := fixtureTask(t, "mbpp_plus/f6")
	cases := []struct {
		name, output string
		want         float64
	}{
		{"closed python fence", "Here:\n```python\ndef add_two(a, b):\n    return a + b\n```\n", 1},
		{"last defining fence wins", "```python\ndef add_two(a, b):\n    return a - b\n```\nFixed:\n```python\ndef add_two(a, b):\n    return a + b\n```", 1},
		{"python fence outranks text", "```python\ndef add_two(a, b):\n    return a + b\n```\n```text\ndef add_two(a, b):\n    return 0\n```", 1},
		{"asserts, prints and main guard dropped", "```python\nimport math\n\ndef add_two(a, b):\n    return a + b\n\nassert add_two(1, 2) == 4\nprint(add_two(1, 2))\nif __name__ == '__main__':\n    import sys\n    sys.exit(1)\n```", 1},
		{"driver kept when the solution needs it", "```python\ncache = {}\ncache.update({'k': 1})\n\ndef add_two(a, b):\n    return a + b + cache['k'] - 1\n```", 1},
		{"unfenced code", "Sure. def add_two(a, b):\n    return a + b\nThis adds them.", 1},
		{"unclosed fence", "```python\ndef add_two(a, b):\n    return a + b\n", 1},
		{"wrong answer", "```python\ndef add_two(a, b):\n    return a * b\n```", 0},
		{"exits before the sentinel", "```python\nimport os\n\ndef add_two(a, b):\n    os._exit(0)\n```", 0},
		{"prints a fake pass line", "```python\ndef add_two(a, b):\n    print('evosteer-tests-passed-0')\n    raise SystemExit(0)\n```", 0},
		{"syntax error", "```python\ndef add_two(a, b)\n    return a + b\n```", 0},
		{"no code", "I cannot solve this.", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := g.Grade(context.Background(), task, c.output)
			if err != nil || s.Reward != c.want || s.Grader != GraderCode {
				t.Fatalf("%+v %v", s, err)
			}
		})
	}
	s, _ := g.Grade(context.Background(), task, cases[3].output)
	if strings.Contains(s.Prediction, "assert") || strings.Contains(s.Prediction, "print(") || !strings.Contains(s.Prediction, "import math") {
		t.Fatalf("sanitised program:\n%s", s.Prediction)
	}
}

func TestTestedProgramIsAppendedOnlyWhenMissing(t *testing.T) {
	g := NewGraders(testSandbox(t))
	task := fixtureTask(t, "mbpp_plus/f6")
	program := "def add_two(a, b):\n    return a + b\n\nprint(add_two(1, 2))"
	got, err := g.TestedProgram(context.Background(), task, "The function is ready.", []string{"print(1)", program})
	if err != nil || got != "def add_two(a, b):\n    return a + b" {
		t.Fatalf("%q %v", got, err)
	}
	got, err = g.TestedProgram(context.Background(), task, "```python\ndef add_two(a, b):\n    return b + a\n```", []string{program})
	if err != nil || got != "" {
		t.Fatalf("output already defines the function: %q %v", got, err)
	}
}

// samplePair is a gold output of a real sample and a perturbed one.
func samplePair(x Task, solutions map[string]string) (gold, wrong string) {
	switch fam, _ := FamilyOf(x.Family); fam.Grading {
	case KindQA:
		return "Answer: " + x.Answers[0], "Answer: " + x.Answers[0] + " Zanzibar"
	case KindChoice:
		other := "A"
		if x.Answers[0] == "A" {
			other = "B"
		}
		return "Answer: " + x.Answers[0], "Answer: " + other
	case KindInteger, KindMath:
		return `\boxed{` + x.Answers[0] + "}", `\boxed{` + x.Answers[0] + "1}"
	case KindCode:
		gold = "```python\n" + solutions[x.ID] + "```"
		return gold, strings.Replace(gold, "return", "return None and", 1)
	}
	return "", ""
}

// gradeSamples grades every real sample of the wanted grading kinds with its gold answer and a
// perturbed one.
func gradeSamples(t *testing.T, g *Graders, code bool) int {
	var solutions map[string]string
	b, err := os.ReadFile("testdata/mbpp_solutions.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &solutions); err != nil {
		t.Fatal(err)
	}
	graded := 0
	for _, f := range sampleFiles(t) {
		ts, err := ReadJSONL(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range ts {
			fam, _ := FamilyOf(x.Family)
			if fam.Grading == KindEnvironment || (fam.Grading == KindCode) != code {
				continue
			}
			gold, wrong := samplePair(x, solutions)
			for out, want := range map[string]float64{gold: 1, wrong: 0} {
				s, err := g.Grade(context.Background(), x, out)
				if err != nil || s.Reward != want {
					t.Errorf("%s: output %.60q scored %v (read %.60q), want %v: %v", x.ID, out, s.Reward, s.Prediction, want, err)
				}
			}
			graded++
		}
	}
	return graded
}

func TestSharedSamplesGoldScoresOnePerturbedZero(t *testing.T) {
	if n := gradeSamples(t, NewGraders(nil), false); n < 100 {
		t.Fatalf("only %d samples graded", n)
	}
}

func TestSharedMBPPSamplesGoldPassesPerturbedFails(t *testing.T) {
	referenceTasks(t)
	sb := testSandbox(t)
	requireNumpy(t, sb)
	if n := gradeSamples(t, NewGraders(sb), true); n < 5 {
		t.Fatalf("only %d MBPP+ samples graded", n)
	}
}

func TestFixtureGoldAnswers(t *testing.T) {
	ts, err := ReadJSONL(filepath.Join("testdata", "tasks.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	g := NewGraders(nil)
	gold := map[string]string{"hotpotqa/f1": "Answer: Paris", "hotpotqa/test-f2": "Answer: Yes.", "nq_open/f3": "Answer: July 1969",
		"medqa/f4": "Answer: C", "aime_2026/f5": `\boxed{42}`, "triviaqa/test-f8": "Answer: Planet Mercury", "musique/test-f9": "Answer: Roma",
		"gpqa_diamond/test-f10": "The answer is B.", "math_hard/test-f11": `\boxed{0.75}`}
	for _, x := range ts {
		out, ok := gold[x.ID]
		if !ok {
			continue
		}
		if s, err := g.Grade(context.Background(), x, out); err != nil || s.Reward != 1 {
			t.Errorf("%s: %+v %v", x.ID, s, err)
		}
	}
}

// TestCodeGradesRunOncePerDistinctOutput: grading an unchanged output again — as an episode does
// after every decision — never runs the sandbox again, concurrent grades of one output share a
// run, a different output or other hidden tests run anew, and each keeps its own verdict.
func TestCodeGradesRunOncePerDistinctOutput(t *testing.T) {
	sb := testSandbox(t)
	requireNumpy(t, sb)
	g := NewGraders(sb)
	task := fixtureTask(t, "mbpp_plus/f6")
	right, wrong := "```python\ndef add_two(a, b):\n    return a + b\n```", "```python\ndef add_two(a, b):\n    return a * b\n```"
	var wg sync.WaitGroup
	scores := make([]float64, 6)
	for i := range scores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := g.Grade(context.Background(), task, right)
			if err != nil {
				t.Error(err)
			}
			scores[i] = s.Reward
		}()
	}
	wg.Wait()
	if g.CodeRuns() != 1 || slices.ContainsFunc(scores, func(r float64) bool { return r != 1 }) {
		t.Fatalf("6 grades of one output: %d sandbox runs, rewards %v", g.CodeRuns(), scores)
	}
	if s, err := g.Grade(context.Background(), task, wrong); err != nil || s.Reward != 0 || g.CodeRuns() != 2 {
		t.Fatalf("another output: %+v, %v, %d runs", s, err, g.CodeRuns())
	}
	other := task
	other.Extra = maps.Clone(task.Extra)
	other.Extra["test_list"] = json.RawMessage(`["assert add_two(1, 1) == 3"]`)
	if _, err := g.Grade(context.Background(), other, right); err != nil || g.CodeRuns() != 3 {
		t.Fatalf("other hidden tests: %v, %d runs", err, g.CodeRuns())
	}
	if s, _ := g.Grade(context.Background(), task, right); s.Reward != 1 || g.CodeRuns() != 3 {
		t.Fatalf("the first output again: %+v, %d runs", s, g.CodeRuns())
	}
}

// TestASandboxRunHoldsNoCPUSlot: with one CPU slot, a code grade whose programs run in the
// sandbox gives the slot back while they wait and run, as a request waiting on a server does,
// so another holder's CPU work proceeds meanwhile: the other Hold returns before the grade ends
// (the grade cannot end while the other holds the only slot, so the order is certain).
func TestASandboxRunHoldsNoCPUSlot(t *testing.T) {
	sb := testSandbox(t)
	requireNumpy(t, sb)
	g := NewGraders(sb)
	task := fixtureTask(t, "mbpp_plus/f6")
	pool := cpuslot.NewPool(1)
	ctx, release := pool.Hold(context.Background())
	done := make(chan struct{})
	go func() {
		if s, err := g.Grade(ctx, task, "```python\ndef add_two(a, b):\n    return a + b\n```"); err != nil || s.Reward != 1 {
			t.Errorf("grade %+v %v", s, err)
		}
		close(done)
		release()
	}()
	_, other := pool.Hold(context.Background()) // returns only after the grade if its run kept the slot
	select {
	case <-done:
		t.Fatal("the grade ended before another holder got the only CPU slot: its sandbox run held the slot")
	default:
	}
	other()
	<-done
}
