package tasks

import (
	"regexp"
	"slices"
)

// Multiple choice (METHOD.md §6.2; the release's curve_benchmarks._choice_letter): the last option
// letter after an "answer (is):" cue, else after an "option"/"choice" cue, else an output that is a
// bare letter. The letter must be one of the task's options.

// The reference cues end in a look-ahead, (?![A-Za-z]), that Go's regexp lacks: the pattern
// captures the letter after the letter instead, and a match with one is refused and the scan
// resumes one character later, as a failed look-ahead makes Python's scanner do.
var (
	choiceCues = []*regexp.Regexp{
		regexp.MustCompile(`(?i:answer)[*_` + pySpaceClass + `]*(?i:is)?[*_` + pySpaceClass + `]*[:：]?[*_` + pySpaceClass + `(\[]*([A-J])([A-Za-z])?`),
		regexp.MustCompile(`(?i:option|choice)[*_` + pySpaceClass + `]*(?i:is)?[*_` + pySpaceClass + `]*[:：]?[*_` + pySpaceClass + `(\[]*([A-J])([A-Za-z])?`),
	}
	bareChoice = regexp.MustCompile(`\A[` + pySpaceClass + `]*[*_(\[]*[` + pySpaceClass + `]*([A-J])[` + pySpaceClass + `]*[)\].:*_]*[` + pySpaceClass + `]*\z`)
)

// cueLetters returns the letters the cue finds, in order, as Python's findall would.
func cueLetters(re *regexp.Regexp, text string) []string {
	var out []string
	for pos := 0; pos <= len(text); {
		m := re.FindStringSubmatchIndex(text[pos:])
		if m == nil {
			break
		}
		if m[4] >= 0 { // a letter follows: the look-ahead fails at this start
			pos += m[0] + 1
			continue
		}
		out = append(out, text[pos+m[2]:pos+m[3]])
		pos += m[1]
	}
	return out
}

// choiceLetter extracts the chosen option letter, or "".
func choiceLetter(output string, options []string) string {
	for _, cue := range choiceCues {
		var found []string
		for _, l := range cueLetters(cue, output) {
			if slices.Contains(options, l) {
				found = append(found, l)
			}
		}
		if len(found) > 0 {
			return found[len(found)-1]
		}
	}
	if m := bareChoice.FindStringSubmatch(output); m != nil && slices.Contains(options, m[1]) {
		return m[1]
	}
	return ""
}

func gradeChoice(output string, t Task) Score {
	letter := choiceLetter(output, t.Options)
	s := Score{Prediction: letter, Grader: GraderChoice}
	if letter != "" && len(t.Answers) == 1 && letter == t.Answers[0] {
		s.Reward = 1
	}
	return s
}
