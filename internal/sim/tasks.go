package sim

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

// Tasks returns n deterministic task records of one family: ids "{family}/sim-{i}" (the test
// split "{family}/test-sim-{i}"), prompts in the family's style (METHOD.md §6.1) and the correct
// answer in Answers. The same (p, runSeed, family, split, i) always gives the same record, and
// w.TaskTruth(task) regenerates its hidden side. taskType is written to the record as given
// (empty: the reference's mapping); the world's behaviour follows the family's own task type.
// A family the world does not know gives nil.
func Tasks(p config.Sim, runSeed uint64, family, taskType, split string, n int) []tasks.Task {
	info, ok := familyTable[family]
	if !ok || n <= 0 {
		return nil
	}
	if taskType == "" {
		taskType = info.taskType
	}
	if split == "" {
		split = "train"
	}
	out := make([]tasks.Task, 0, n)
	for i := 0; i < n; i++ {
		src := "sim-" + strconv.Itoa(i)
		if split == "test" {
			src = "test-sim-" + strconv.Itoa(i)
		}
		id := family + "/" + src
		tr := buildTruth(p, runSeed, id, info, nil)
		t := tasks.Task{
			ID:       id,
			Family:   family,
			TaskType: taskType,
			Split:    split,
			SourceID: src,
			Origin:   "sim",
			Prompt:   taskPrompt(stream(runSeed, "sim/prompt", id), info, tr),
			Answers:  []string{},
			Options:  []string{},
		}
		switch info.kind {
		case kindEnv:
		case kindMC:
			t.Answers = []string{tr.Answer}
			t.Options = []string{"A", "B", "C", "D"}
		default:
			t.Answers = []string{tr.Answer}
		}
		out = append(out, t)
	}
	return out
}

// taskPrompt writes the task text in the family's style with realistic lengths.
func taskPrompt(r *rand.Rand, info familyInfo, tr TaskTruth) string {
	nm := newNamer(r)
	// Keep prompt words apart from the answer space so that only planted mentions match.
	for _, c := range append([]string{tr.Answer}, tr.Distractors...) {
		for _, w := range strings.Fields(strings.ToLower(c)) {
			nm.used[w] = true
		}
	}
	switch info.kind {
	case kindQAPassages:
		return qaPassagesPrompt(r, nm, info, tr)
	case kindQA:
		return "Answer the question. Give a short answer only.\nQuestion: " + question(r, nm, info.name == "triviaqa")
	case kindMC:
		return mcPrompt(r, nm, info, tr)
	case kindMath:
		return mathPrompt(r, nm, info)
	case kindCode:
		return codePrompt(r, nm, info, tr)
	default:
		if info.name == "webshop" {
			return "Complete the WebShop instruction shown by the reset observation."
		}
		return "Complete the ALFWorld instruction shown by the reset observation."
	}
}

// questionForms take (noun, entity).
var questionForms = []string{
	"who founded the %s of %s",
	"where was the %s of %s first held",
	"which %s did %s belong to before the merger",
	"who wrote the %s adopted by %s",
	"what is the name of the %s that %s is known for",
	"when was the first %s of %s opened",
}

var questionNouns = []string{"society", "festival", "guild", "archive", "company", "treaty", "observatory", "chronicle", "league", "academy"}

func question(r *rand.Rand, nm *namer, trivia bool) string {
	f := questionForms[r.IntN(len(questionForms))]
	q := fmt.Sprintf(f, questionNouns[r.IntN(len(questionNouns))], nm.word()+" "+nm.word())
	if trivia {
		return strings.ToUpper(q[:1]) + q[1:] + "?"
	}
	return q
}

var passageSentences = []string{
	"%s is a figure often associated with the %s of %s.",
	"Records from the period mention %s in connection with the %s of %s.",
	"According to later accounts, %s played a part in the early history of the %s of %s.",
	"The %s of %s was long linked with %s in regional histories.",
}

// passage writes "[Title] sentences" mentioning entity, padded to about n characters.
func passage(r *rand.Rand, nm *namer, entity string, n int) string {
	title := nm.word()
	if entity != "" && r.IntN(2) == 0 {
		title = entity
	}
	var sents []string
	size := len(title) + 3
	if entity != "" {
		s := passageSentences[r.IntN(len(passageSentences))]
		noun, place := questionNouns[r.IntN(len(questionNouns))], nm.word()
		if strings.HasPrefix(s, "The %s") {
			s = fmt.Sprintf(s, noun, place, entity)
		} else {
			s = fmt.Sprintf(s, entity, noun, place)
		}
		sents = append(sents, s)
		size += len(s) + 1
	}
	for size < n {
		s := fmt.Sprintf("The %s of %s was described in the %s of %s, which %s.",
			questionNouns[r.IntN(len(questionNouns))], nm.word(), questionNouns[r.IntN(len(questionNouns))], nm.word(),
			[]string{"drew visitors from the whole region", "changed hands several times", "was rebuilt after a fire",
				"is still mentioned in local records", "was later merged with a larger body"}[r.IntN(5)])
		sents = append(sents, s)
		size += len(s) + 1
	}
	return "[" + title + "] " + strings.Join(sents, " ")
}

func qaPassagesPrompt(r *rand.Rand, nm *namer, info familyInfo, tr TaskTruth) string {
	var b strings.Builder
	b.WriteString("Answer the question using the passages. Give a short answer only.\nQuestion: ")
	b.WriteString(question(r, nm, false) + "?\nPassages:")
	count := 10
	if info.name == "musique" {
		count = 20
	}
	// Two passages support the correct answer; the most plausible distractors appear too (the
	// distractor setting); the rest are unrelated.
	mentions := []string{tr.Answer, tr.Answer}
	for k := 0; k < min(3, len(tr.Distractors)); k++ {
		mentions = append(mentions, tr.Distractors[k])
	}
	for len(mentions) < count {
		mentions = append(mentions, "")
	}
	r.Shuffle(len(mentions), func(i, j int) { mentions[i], mentions[j] = mentions[j], mentions[i] })
	for _, m := range mentions {
		b.WriteString("\n" + passage(r, nm, m, 300+r.IntN(450)))
	}
	return b.String()
}

var vignetteSentences = []string{
	"The symptoms began gradually over the past %s weeks and have worsened at night.",
	"Vital signs show a temperature of 37.%d C, a pulse of %d/min and a blood pressure of %d/%d mm Hg.",
	"The patient reports a history of %s exposure and takes no regular medication.",
	"Physical examination shows mild tenderness over the %s region without guarding.",
	"Laboratory studies show a leukocyte count of %d,%03d/mm3 and a normal serum creatinine.",
	"There is no family history of similar illness, and the patient does not smoke.",
	"An earlier episode resolved without treatment after %s days.",
}

var scienceSentences = []string{
	"A sample of the compound is prepared under an inert atmosphere at %d K.",
	"The reaction proceeds through an intermediate whose lifetime is about %d ns.",
	"A particle of mass m moves in a potential with %d bound states.",
	"The measured spectrum shows %d distinct peaks between the two reference lines.",
	"The system is then perturbed by a weak field along the %s axis.",
	"Assume that all losses to the surroundings can be neglected.",
}

func mcPrompt(r *rand.Rand, nm *namer, info familyInfo, tr TaskTruth) string {
	var b strings.Builder
	if info.name == "gpqa_diamond" {
		b.WriteString("Answer the following question by choosing one option.\nQuestion: ")
		for i := 0; i < 3+r.IntN(4); i++ {
			s := scienceSentences[r.IntN(len(scienceSentences))]
			switch strings.Count(s, "%") {
			case 1:
				if strings.Contains(s, "%s") {
					s = fmt.Sprintf(s, []string{"x", "y", "z"}[r.IntN(3)])
				} else {
					s = fmt.Sprintf(s, 2+r.IntN(400))
				}
			}
			b.WriteString(s + " ")
		}
		fmt.Fprintf(&b, "Which of the following best describes the behaviour of the %s system?", nm.word())
	} else {
		b.WriteString("Answer the following medical question by choosing one option.\nQuestion: ")
		fmt.Fprintf(&b, "A %d-year-old %s comes to the physician because of %s. ", 18+r.IntN(65),
			[]string{"man", "woman"}[r.IntN(2)], []string{"fatigue", "recurrent headaches", "shortness of breath", "abdominal pain", "a rash"}[r.IntN(5)])
		for i := 0; i < 3+r.IntN(5); i++ {
			s := vignetteSentences[r.IntN(len(vignetteSentences))]
			switch {
			case strings.Contains(s, "37.%d"):
				s = fmt.Sprintf(s, r.IntN(10), 60+r.IntN(60), 100+r.IntN(60), 60+r.IntN(40))
			case strings.Contains(s, "%d,%03d"):
				s = fmt.Sprintf(s, 4+r.IntN(14), r.IntN(1000))
			case strings.Contains(s, "%s weeks"), strings.Contains(s, "%s days"):
				s = fmt.Sprintf(s, []string{"two", "three", "four", "six"}[r.IntN(4)])
			case strings.Contains(s, "%s"):
				s = fmt.Sprintf(s, strings.ToLower(nm.word()))
			}
			b.WriteString(s + " ")
		}
		b.WriteString("Which of the following is the most likely diagnosis?")
	}
	b.WriteString("\nOptions:")
	for _, l := range []string{"A", "B", "C", "D"} {
		fmt.Fprintf(&b, "\n%s. %s %s", l, nm.word(), []string{"syndrome", "deficiency", "disease", "disorder", "reaction", "effect"}[r.IntN(6)])
	}
	b.WriteString("\nEnd your reply with 'Answer: <letter>'.")
	return b.String()
}

var mathForms = []string{
	"%s writes the integers from 1 to %d on a board. At each step two numbers a and b are erased and replaced by a+b+ab. Let N be the number left after all steps. Find the remainder when N is divided by 1000.",
	"Let S be the set of ordered pairs (x, y) of positive integers with x + y <= %d such that x^2 + %d y is a perfect square. Find the number of elements of S.",
	"A sequence is defined by a_1 = %d, a_2 = %d and a_{n+2} = a_{n+1} + 2 a_n for n >= 1. Find the remainder when a_{%d} is divided by 1000.",
	"In triangle ABC the side lengths are AB = %d, BC = %d and CA = %d. The incircle touches BC at D. The length BD can be written as m/n with m and n relatively prime positive integers. Find m + n.",
	"%s chooses a random subset of {1, 2, ..., %d}. The probability that the sum of its elements is divisible by %d is m/n in lowest terms. Find m + n.",
	"Find the number of positive integers n <= %d such that n^2 + %d n + %d is divisible by %d.",
}

func mathPrompt(r *rand.Rand, nm *namer, info familyInfo) string {
	f := mathForms[r.IntN(len(mathForms))]
	args := []any{}
	for i := 0; i < strings.Count(f, "%"); i++ {
		if i == 0 && strings.HasPrefix(f, "%s") {
			args = append(args, nm.word())
			continue
		}
		args = append(args, 2+r.IntN(200))
	}
	problem := fmt.Sprintf(f, args...)
	extra := []string{
		" Give your reasoning before the result.",
		" Here ^ denotes exponentiation.",
		" All quantities are exact; no approximation is needed.",
		"",
	}[r.IntN(4)]
	if info.name == "math_hard" {
		return "Solve the following competition math problem. Put the final answer in \\boxed{}.\n" + problem + extra
	}
	return "Solve the following competition math problem. The answer is an integer from 0 to 999. Put the final answer in \\boxed{}.\n" + problem + extra
}

func codePrompt(r *rand.Rand, nm *namer, info familyInfo, tr TaskTruth) string {
	tmpl := codeTemplates[tr.template]
	if info.name != "swe_bench_verified" {
		return tmpl.spec + "\nYour code should pass this test:\n" + tr.VisibleTest
	}
	repo := strings.ToLower(nm.word()) + "/" + strings.ToLower(nm.word())
	module := strings.ToLower(nm.word())
	var b strings.Builder
	fmt.Fprintf(&b, "Repository: %s\nIssue: `%s.%s` returns the wrong value\n\n", repo, module, tmpl.name)
	fmt.Fprintf(&b, "The helper `%s` in `%s/%s.py` is used by the report generator. %s ", tmpl.name, strings.Split(repo, "/")[1], module, tmpl.spec)
	b.WriteString("Since the last refactor the function gives results that disagree with the documented behaviour, ")
	b.WriteString("and downstream totals are off. Steps to reproduce: call the function from a fresh interpreter ")
	b.WriteString("with the input from the test below and compare with the documented value. ")
	b.WriteString("Expected behaviour: the documented value is returned for every input, including empty and boundary inputs. ")
	b.WriteString("Actual behaviour: some inputs give a different value and no error is raised.\n\n")
	for i := 0; i < 2+r.IntN(3); i++ {
		fmt.Fprintf(&b, "A maintainer notes that the %s of %s depends on this helper and must not change its signature. ", questionNouns[r.IntN(len(questionNouns))], nm.word())
	}
	fmt.Fprintf(&b, "\n\nWrite the corrected function `%s(%s)`.\nYour code should pass this test:\n%s", tmpl.name, tmpl.params, tr.VisibleTest)
	return b.String()
}
