package tasks

import (
	"regexp"
	"strings"
)

// Short-answer QA (METHOD.md §6.2; the release's curve_benchmarks._qa_em and qa_metrics): the
// answer is the text after the last "answer is" / "answer:" cue, else the last nonempty line; it is
// normalised HotpotQA-style and compared exactly with every gold answer; for yes/no golds only
// the first token counts. F1 is computed too and stored, never used as the reward.

var (
	answerCue = regexp.MustCompile(`(?i)(?:final answer|answer)[` + pySpaceClass + `]*(?:is|:)[` + pySpaceClass + `]*(.+)`)
	emphasis  = regexp.MustCompile("[*_`]+")
)

const quoteColonDot = "\"':. \t"

// shortAnswer extracts the short answer of a QA output.
func shortAnswer(output string) string {
	var lines []string
	for _, l := range pySplitLines(pyStrip(output, "")) {
		if l = pyStrip(l, ""); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	cues := answerCue.FindAllStringSubmatchIndex(output, -1)
	span := lines[len(lines)-1]
	if len(cues) > 0 {
		last := cues[len(cues)-1]
		span = output[last[2]:last[3]]
	}
	if ls := pySplitLines(span); len(ls) > 0 {
		span = ls[0]
	} else {
		span = ""
	}
	span = emphasis.ReplaceAllString(span, "")
	if len(cues) > 0 && pyStrip(span, quoteColonDot) == "" {
		// The cue ends its line: the answer is the next line with content.
		span = ""
		for _, l := range pySplitLines(output[cues[len(cues)-1][1]:]) {
			if l = pyStrip(emphasis.ReplaceAllString(l, ""), ""); pyStrip(l, quoteColonDot) != "" {
				span = l
				break
			}
		}
	}
	return pyStrip(pyRStrip(pyStrip(pyStrip(span, ""), `"'`), "."), "")
}

// normalizeQA is HotpotQA's normalisation: lowercase, drop every character that is neither a
// word character nor whitespace, drop the articles a/an/the, collapse whitespace.
func normalizeQA(s string) string {
	s = strings.Map(func(r rune) rune {
		if pyWord(r) || pySpace(r) {
			return r
		}
		return -1
	}, pyLower(s))
	// Only word characters and whitespace remain, so \b(a|an|the)\b matches whole tokens.
	var kept []string
	for _, tok := range pyFields(s) {
		if tok != "a" && tok != "an" && tok != "the" {
			kept = append(kept, tok)
		}
	}
	return strings.Join(kept, " ")
}

func firstToken(s string) string {
	if f := pyFields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// exactMatch is the EM of one gold answer.
func exactMatch(short, gold string) bool {
	s, g := normalizeQA(short), normalizeQA(gold)
	if g == "yes" || g == "no" {
		return firstToken(s) == g
	}
	return s != "" && s == g
}

// f1 is HotpotQA's token F1 between a prediction and one gold answer.
func f1(prediction, gold string) float64 {
	p, g := normalizeQA(prediction), normalizeQA(gold)
	special := func(s string) bool { return s == "yes" || s == "no" || s == "noanswer" }
	if (special(p) || special(g)) && p != g {
		return 0
	}
	pt, gt := pyFields(p), pyFields(g)
	if len(pt) == 0 || len(gt) == 0 {
		if len(pt) == len(gt) {
			return 1
		}
		return 0
	}
	counts := map[string]int{}
	for _, t := range gt {
		counts[t]++
	}
	overlap := 0
	for _, t := range pt {
		if counts[t] > 0 {
			counts[t]--
			overlap++
		}
	}
	if overlap == 0 {
		return 0
	}
	precision, recall := float64(overlap)/float64(len(pt)), float64(overlap)/float64(len(gt))
	return 2 * precision * recall / (precision + recall)
}

// qaF1 is the F1 of an output against one gold answer: yes/no golds compare the first token of
// the short answer, other golds take the better of the short answer and the whole output.
func qaF1(output, short, gold string) float64 {
	if g := normalizeQA(gold); g == "yes" || g == "no" {
		if firstToken(normalizeQA(short)) == g {
			return 1
		}
		return 0
	}
	return max(f1(short, gold), f1(output, gold))
}

// gradeQA scores a QA output against the gold answers: EM as the reward, F1 alongside.
func gradeQA(output string, golds []string) Score {
	short := shortAnswer(output)
	s := Score{Prediction: short, Grader: GraderQA}
	best := 0.0
	for _, g := range golds {
		if exactMatch(short, g) {
			s.Reward = 1
		}
		best = max(best, qaF1(output, short, g))
	}
	s.F1 = &best
	return s
}
