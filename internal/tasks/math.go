package tasks

import (
	"math/big"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Math answers (METHOD.md §6.2; the release's curve_benchmarks._integer_score and
// _final_value_score). AIME: the last number of the last \boxed{...} (boxed outranks ####), else of
// the last #### line, else the first number within 200 characters after the last answer cue, else
// the last number in the text, compared as a decimal with the integer answer. MATH-Hard: the last
// brace-matched \boxed or \fbox content, else the first line after the cue, normalised the
// Hendrycks way and compared as strings or as exact fractions.

var (
	numberRe = regexp.MustCompile(`-?` + pyDigitClass + `+(?:,` + pyDigitClass + `{3})*(?:\.` + pyDigitClass + `+)?|-?\.` + pyDigitClass + `+`)
	boxedRe  = regexp.MustCompile(`\\boxed\{([^{}]+)\}`)
	hashesRe = regexp.MustCompile(`####[` + pySpaceClass + `]*([^\n]+)`)
	// mathCueRe is the reference cue without the \b after "is", which Go's regexp reads as
	// ASCII-only; mathCues checks Python's Unicode boundary by hand.
	mathCueRe = regexp.MustCompile(`(?i)(?:final answer|answer)[*_` + pySpaceClass + `]*(?:(is)[*_` + pySpaceClass + `]*[:：]?|[:：=])`)

	simpleFractionRe = regexp.MustCompile(`\A(-?)\\frac\{(-?` + pyDigitClass + `+)\}\{(-?` + pyDigitClass + `+)\}\z`)
	groupedNumberRe  = regexp.MustCompile(`\A-?` + pyDigitClass + `{1,3}(?:,` + pyDigitClass + `{3})+(?:\.` + pyDigitClass + `+)?\z`)
	plainNumberRe    = regexp.MustCompile(`\A-?(?:` + pyDigitClass + `+(?:\.` + pyDigitClass + `*)?|\.` + pyDigitClass + `+)\z`)
	canonicalIntRe   = regexp.MustCompile(`\A(?:0|-?[1-9][0-9]*)\z`)
)

// mathCues returns the end offsets of the reference's math answer cues, in order.
func mathCues(text string) []int {
	var ends []int
	for pos := 0; pos <= len(text); {
		m := mathCueRe.FindStringSubmatchIndex(text[pos:])
		if m == nil {
			break
		}
		if m[2] >= 0 { // "is" must end a word
			if r, _ := utf8.DecodeRuneInString(text[pos+m[3]:]); pos+m[3] < len(text) && pyWord(r) {
				pos += m[0] + 1
				continue
			}
		}
		ends = append(ends, pos+m[1])
		pos += m[1]
	}
	return ends
}

// parseDecimal reads a number as Python's Decimal does for these patterns.
func parseDecimal(s string) (*big.Rat, bool) {
	return new(big.Rat).SetString(asciiDigits(strings.TrimSuffix(s, ".")))
}

// lastNumber is the last number of a text, thousands separators removed.
func lastNumber(text string) (*big.Rat, bool) {
	text = strings.ReplaceAll(strings.ReplaceAll(text, `\!`, ""), "{,}", ",")
	nums := numberRe.FindAllString(text, -1)
	if len(nums) == 0 {
		return nil, false
	}
	return parseDecimal(strings.ReplaceAll(nums[len(nums)-1], ",", ""))
}

// integerPrediction extracts the AIME answer of an output.
func integerPrediction(output string) (*big.Rat, bool) {
	for _, re := range []*regexp.Regexp{boxedRe, hashesRe} {
		if spans := re.FindAllStringSubmatch(output, -1); len(spans) > 0 {
			if v, ok := lastNumber(spans[len(spans)-1][1]); ok {
				return v, true
			}
		}
	}
	if ends := mathCues(output); len(ends) > 0 {
		tail := []rune(output[ends[len(ends)-1]:])
		window := strings.ReplaceAll(string(tail[:min(200, len(tail))]), "{,}", ",")
		if n := numberRe.FindString(window); n != "" {
			if v, ok := parseDecimal(strings.ReplaceAll(n, ",", "")); ok {
				return v, true
			}
		}
	}
	return lastNumber(output)
}

func gradeInteger(output string, t Task) (Score, error) {
	s := Score{Grader: GraderInteger}
	gold, ok := parseDecimal(t.Answers[0])
	if !ok {
		return s, errorf(t, "answer %q is not a number", t.Answers[0])
	}
	if v, ok := integerPrediction(output); ok {
		s.Prediction = v.RatString()
		if v.Cmp(gold) == 0 {
			s.Reward = 1
		}
	}
	return s, nil
}

// lastBoxed returns the content of the last \boxed or \fbox, braces matched.
func lastBoxed(text string) (string, bool) {
	start := max(strings.LastIndex(text, `\boxed`), strings.LastIndex(text, `\fbox`))
	if start < 0 {
		return "", false
	}
	rest := text[start:]
	if after, ok := strings.CutPrefix(rest, `\boxed `); ok {
		v, _, _ := strings.Cut(after, "$")
		return pyStrip(v, ""), true
	}
	open := strings.IndexByte(rest, '{')
	if open < 0 {
		return "", false
	}
	depth := 0
	for i := open; i < len(rest); i++ {
		switch rest[i] {
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return pyStrip(rest[open+1:i], ""), true
			}
		}
	}
	return "", false
}

func gradeMath(output string, t Task) Score {
	s := Score{Grader: GraderMath}
	pred, ok := lastBoxed(output)
	if !ok {
		ends := mathCues(output)
		if len(ends) == 0 {
			return s
		}
		tail := pyStrip(output[ends[len(ends)-1]:], "")
		if tail == "" {
			return s
		}
		pred = pyStrip(pyRStrip(pyStrip(pyStrip(pySplitLines(tail)[0], ""), "$"), "."), "")
	}
	s.Prediction = pred
	if mathEquivalent(pred, t.Answers[0]) {
		s.Reward = 1
	}
	return s
}

func mathEquivalent(pred, gold string) bool {
	l, r := stripMath(pred), stripMath(gold)
	if l == r {
		return true
	}
	lv, ok1 := numericValue(l)
	rv, ok2 := numericValue(r)
	return ok1 && ok2 && lv.Cmp(rv) == 0
}

// stripMath is the Hendrycks MATH normalisation (_strip_math).
func stripMath(text string) string {
	text = strings.NewReplacer("\n", "", `\!`, "").Replace(text)
	text = strings.ReplaceAll(text, `\\`, `\`)
	text = strings.ReplaceAll(strings.ReplaceAll(text, "tfrac", "frac"), "dfrac", "frac")
	text = strings.ReplaceAll(strings.ReplaceAll(text, `\left`, ""), `\right`, "")
	text = strings.ReplaceAll(strings.ReplaceAll(text, `^{\circ}`, ""), `^\circ`, "")
	text = strings.ReplaceAll(strings.ReplaceAll(text, `\$`, ""), "$", "")
	if before, _, found := strings.Cut(text, `\text{ `); found {
		text = before // units after the value
	}
	text = strings.ReplaceAll(strings.ReplaceAll(text, `\%`, ""), "%", "")
	text = strings.ReplaceAll(strings.ReplaceAll(text, " .", " 0."), "{.", "{0.")
	if text == "" {
		return text
	}
	if text[0] == '.' {
		text = "0" + text
	}
	if parts := strings.Split(text, "="); len(parts) == 2 && utf8.RuneCountInString(parts[0]) <= 2 {
		text = parts[1]
	}
	text = fixSqrt(text)
	text = strings.ReplaceAll(text, " ", "")
	text = fixFracs(text)
	if text == "0.5" {
		text = `\frac{1}{2}`
	}
	return fixSlash(text)
}

// fixSqrt braces a one-character radicand: \sqrt2 -> \sqrt{2}.
func fixSqrt(text string) string {
	if !strings.Contains(text, `\sqrt`) {
		return text
	}
	parts := strings.Split(text, `\sqrt`)
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		if p != "" && p[0] != '{' {
			r, n := utf8.DecodeRuneInString(p)
			b.WriteString(`\sqrt{` + string(r) + "}" + p[n:])
		} else {
			b.WriteString(`\sqrt` + p)
		}
	}
	return b.String()
}

// fixFracs braces one-character fraction parts: \frac12 -> \frac{1}{2}, \frac1{2} -> \frac{1}{2}.
func fixFracs(text string) string {
	parts := strings.Split(text, `\frac`)
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		b.WriteString(`\frac`)
		if strings.HasPrefix(p, "{") {
			b.WriteString(p)
			continue
		}
		rs := []rune(p)
		if len(rs) < 2 {
			return text
		}
		if rs[1] != '{' {
			b.WriteString("{" + string(rs[0]) + "}{" + string(rs[1]) + "}" + string(rs[2:]))
		} else {
			b.WriteString("{" + string(rs[0]) + "}" + string(rs[1:]))
		}
	}
	return b.String()
}

// fixSlash turns a/b of two integers written plainly into \frac{a}{b}.
func fixSlash(text string) string {
	parts := strings.Split(text, "/")
	if len(parts) != 2 || !canonicalIntRe.MatchString(parts[0]) || !canonicalIntRe.MatchString(parts[1]) {
		return text
	}
	return `\frac{` + parts[0] + "}{" + parts[1] + "}"
}

// numericValue reads a plain number or a simple \frac{a}{b} as an exact fraction.
func numericValue(text string) (*big.Rat, bool) {
	if groupedNumberRe.MatchString(text) {
		text = strings.ReplaceAll(text, ",", "")
	}
	if plainNumberRe.MatchString(text) {
		return parseDecimal(text)
	}
	m := simpleFractionRe.FindStringSubmatch(text)
	if m == nil {
		return nil, false
	}
	num, ok1 := new(big.Int).SetString(asciiDigits(m[2]), 10)
	den, ok2 := new(big.Int).SetString(asciiDigits(m[3]), 10)
	if !ok1 || !ok2 || den.Sign() == 0 {
		return nil, false
	}
	v := new(big.Rat).SetFrac(num, den)
	if m[1] != "" {
		v.Neg(v)
	}
	return v, true
}
