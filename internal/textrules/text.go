package textrules

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
)

// Text tests of the reference's evosteer_features.py. Features, observations and the
// diagnosis all decide "does this output state an answer" and "which answer" with them, so
// they follow the reference rule by rule. Go's regexp has no look-behind or back-references;
// those parts are written out by hand.

var (
	AnswerCueRe = regexp.MustCompile(`(?i)(?:final answer|answer)\s*(?:is\s*:?|:)\s*([^\n]+)`)
	codeBlockRe = regexp.MustCompile("(?s)```[^\\n]*\\n(.*?)```")
	fenceLineRe = regexp.MustCompile("(?m)^[ \\t]*(?:```|~~~)[^\\n]*$")
	listItemRe  = regexp.MustCompile(`^[ \t]*(?:[-*+•‣]|\(?\d{1,3}[.)]|\(?[A-Za-z][.)])[ \t]+\S`)
	headingRe   = regexp.MustCompile(`^#{1,6}[ \t]+\S`)
	functionRe  = regexp.MustCompile(`\b(?:async\s+)?def\s+[A-Za-z_]\w*\s*\(`)
)

// HasCodeBlock reports whether text holds a closed ``` fence. Outputs run to 12,000
// characters and every execution's output is tested, so the literal fence is looked for first.
func HasCodeBlock(text string) bool {
	return strings.Contains(text, "```") && codeBlockRe.MatchString(text)
}

// HasFunction reports whether text defines a python function; like HasCodeBlock, it looks for
// the keyword before running the pattern, which has no literal prefix to skip ahead with.
func HasFunction(text string) bool {
	return strings.Contains(text, "def") && functionRe.MatchString(text)
}

const (
	BoxedOpen = `\boxed{`
	emphasis  = "*_`#~ \t"
	Quotes    = "*_`\"'"
)

// Bounds and exclusions for an answer key that can be looked up in search results.
const (
	EvidenceMin = 3
	EvidenceMax = 120
)

var nonAnswers = map[string]bool{"n/a": true, "na": true, "none": true, "unknown": true,
	"unanswerable": true, "not found": true, "no answer": true, "not available": true}

// FinalBoxed returns the content of the last \boxed{...} whose braces close.
func FinalBoxed(text string) (string, bool) {
	if !strings.Contains(text, BoxedOpen) { // the common case, found faster than by LastIndex
		return "", false
	}
	end := len(text)
	for {
		start := strings.LastIndex(text[:end], BoxedOpen)
		if start < 0 {
			return "", false
		}
		begin, depth := start+len(BoxedOpen), 0
		for i := begin; i < len(text); i++ {
			switch text[i] {
			case '{':
				depth++
			case '}':
				if depth == 0 {
					return text[begin:i], true
				}
				depth--
			}
		}
		end = start
	}
}

// CuedAnswer returns the text after the last "answer:" / "answer is" cue, stripped of
// emphasis, quotes and a trailing period.
func CuedAnswer(text string) (string, bool) {
	matches := AnswerCueRe.FindAllStringSubmatch(text[cueScanStart(text):], -1)
	if len(matches) == 0 {
		return "", false
	}
	v := strings.TrimSpace(strings.Trim(strings.TrimSpace(matches[len(matches)-1][1]), Quotes))
	v = strings.TrimSpace(strings.Trim(strings.TrimSpace(strings.TrimRight(v, ".")), Quotes))
	return v, v != ""
}

// cueScanStart is where AnswerCueRe's first match can begin: every match holds "answer"
// (case folded), at most len("final ") bytes after its start, and the expression asserts
// nothing about the text before a match, so scanning from there finds the same matches. Solver
// outputs put their cue after thousands of characters of prose.
func cueScanStart(text string) int {
	i := FoldedIndex(text, "answer")
	if i == len(text) {
		return i
	}
	return max(0, i-len("final "))
}

// FoldedIndex is the byte offset of the first occurrence of word (lower-case ASCII) in text
// under ASCII case folding, or len(text) when there is none: where a case-insensitive pattern
// that begins with word can first match. Under (?i) Go's regexp also folds "ſ" (U+017F) into
// "s" and the Kelvin sign (U+212A) into "k"; a text holding one is scanned whole (offset 0).
func FoldedIndex(text, word string) int {
	// One pass up to the first match, then a substring search of the rest: ContainsAny over
	// the whole text restarts at every byte that opens an em dash or a curly quote.
	for i := 0; i < len(text); i++ {
		if text[i] >= utf8.RuneSelf {
			if hasFoldSpecial(text[i:min(len(text), i+len("\u212a"))]) {
				return 0
			}
			continue
		}
		if i+len(word) > len(text) {
			break
		}
		j := 0
		for j < len(word) && text[i+j]|0x20 == word[j] {
			j++
		}
		if j == len(word) {
			if hasFoldSpecial(text[i:]) {
				return 0
			}
			return i
		}
	}
	if hasFoldSpecial(text) {
		return 0
	}
	return len(text)
}

// hasFoldSpecial: text holds a rune that (?i) folds into an ASCII letter.
func hasFoldSpecial(text string) bool {
	return strings.Contains(text, "\u017f") || strings.Contains(text, "\u212a")
}

// largestCodeBlock returns the longest fenced code block's content (the first on ties).
func largestCodeBlock(text string) (string, bool) {
	best, found := "", false
	if !strings.Contains(text, "```") {
		return "", false
	}
	for _, m := range codeBlockRe.FindAllStringSubmatch(text, -1) {
		block := strings.TrimSpace(m[1])
		if !found || RuneLen(block) > RuneLen(best) {
			best, found = block, true
		}
	}
	return best, found
}

// NormalizedAnswer is the key answers are compared by: the last boxed answer, else the
// cued answer, else the largest code block, else the whole text; fence lines and one pair
// of wrapping backticks removed; casefolded; whitespace collapsed.
func NormalizedAnswer(text string) string {
	v, ok := FinalBoxed(text)
	if !ok {
		v, ok = CuedAnswer(text)
	}
	if !ok {
		v, ok = largestCodeBlock(text)
	}
	if !ok {
		v = text
	}
	v = strings.TrimSpace(fenceLineRe.ReplaceAllString(v, ""))
	v = unwrapBackticks(v)
	return Collapse(Casefold(v))
}

// unwrapBackticks implements re.fullmatch(r"(`+)([^`]*)\1", v): a run of backticks, text
// without backticks, and the same run closing the string.
func unwrapBackticks(v string) string {
	lead := len(v) - len(strings.TrimLeft(v, "`"))
	for j := lead; j >= 1; j-- {
		rest := v[j:]
		mid := strings.IndexByte(rest, '`')
		if mid < 0 {
			continue
		}
		if rest[mid:] == strings.Repeat("`", j) {
			return rest[:mid]
		}
	}
	return v
}

// AnswerPresent reports whether a text states an answer: it has a boxed answer, a code
// block or an answer cue, or it is not merely a titled enumeration (a plan or a fact list).
func AnswerPresent(text string) bool {
	body := strings.TrimSpace(text)
	if body == "" {
		return false
	}
	if _, ok := FinalBoxed(body); ok || HasCodeBlock(body) {
		return true
	}
	if _, ok := CuedAnswer(body); ok {
		return true
	}
	return !enumerationOnly(body)
}

// enumerationOnly: every non-blank line is a list item, a title, or an indented
// continuation of an item, with at least two items and one title.
func enumerationOnly(text string) bool {
	items, titles := 0, 0
	for _, line := range SplitLines(inlineList(text)) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if listItemRe.MatchString(line) {
			items++
			continue
		}
		if isTitle(line) {
			titles++
			continue
		}
		if r, _ := utf8.DecodeRuneInString(line); items > 0 && unicode.IsSpace(r) {
			continue
		}
		return false
	}
	return items >= 2 && titles >= 1
}

func leadIn(line string) bool {
	return strings.HasSuffix(strings.Trim(strings.TrimSpace(line), emphasis), ":")
}

func isTitle(line string) bool {
	s := strings.TrimSpace(line)
	if headingRe.MatchString(s) || leadIn(s) {
		return true
	}
	title, ok := emphasisTitle(s)
	title = strings.TrimRightFunc(title, unicode.IsSpace)
	return ok && !strings.HasSuffix(title, ".") && !strings.HasSuffix(title, "!") && !strings.HasSuffix(title, "?")
}

// emphasisTitle matches a whole line "**Title**" / "_Title_" (1–3 marks, 1–120 characters
// without * _ or newline) and returns the title.
func emphasisTitle(s string) (string, bool) {
	if s == "" || (s[0] != '*' && s[0] != '_') {
		return "", false
	}
	mark := s[0]
	n := len(s) - len(strings.TrimLeft(s, string(mark)))
	if n > 3 {
		return "", false
	}
	rest := s[n:]
	end := strings.IndexAny(rest, "*_\n")
	if end <= 0 || RuneLen(rest[:end]) > 120 {
		return "", false
	}
	if rest[end:] != strings.Repeat(string(mark), n) {
		return "", false
	}
	return rest[:end], true
}

// inlineList splits lines like "Steps: 1. a 2. b 3. c" into one line per item, so that an
// enumeration written on one line is still recognised.
func inlineList(text string) string {
	var out []string
	for _, line := range SplitLines(text) {
		marks := inlineItems(line)
		head := line
		if len(marks) > 0 {
			head = strings.TrimRightFunc(line[:marks[0]], unicode.IsSpace)
		}
		if len(marks) < 3 || !leadIn(head) {
			out = append(out, line)
			continue
		}
		pieces := []string{head}
		bounds := append(marks, len(line))
		for i := 0; i+1 < len(bounds); i++ {
			pieces = append(pieces, line[bounds[i]:bounds[i+1]])
		}
		for _, p := range pieces {
			if strings.TrimSpace(p) != "" {
				out = append(out, p)
			}
		}
	}
	return strings.Join(out, "\n")
}

// inlineItems returns the byte offsets where (?<![\w.])\d{1,3}[.)][ \t]+\S matches.
func inlineItems(line string) []int {
	var marks []int
	prev := rune(-1)
	for i := 0; i < len(line); {
		r, size := utf8.DecodeRuneInString(line[i:])
		if isDigit(r) && (prev < 0 || !(isWordRune(prev) || prev == '.')) {
			if end, ok := inlineItemAt(line, i); ok {
				marks = append(marks, i)
				prev, _ = utf8.DecodeLastRuneInString(line[:end])
				i = end
				continue
			}
		}
		prev, i = r, i+size
	}
	return marks
}

// inlineItemAt reports whether an inline item starts at byte i and where its match ends.
func inlineItemAt(line string, i int) (int, bool) {
	j := i
	for j < len(line) && isDigit(rune(line[j])) {
		j++
	}
	if j-i > 3 || j >= len(line) || (line[j] != '.' && line[j] != ')') {
		return 0, false
	}
	k := j + 1
	for k < len(line) && (line[k] == ' ' || line[k] == '\t') {
		k++
	}
	if k == j+1 || k >= len(line) {
		return 0, false
	}
	r, size := utf8.DecodeRuneInString(line[k:])
	if unicode.IsSpace(r) {
		return 0, false
	}
	return k + size, true
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// isWordRune is Python's \w for str patterns: letters, numbers and the underscore.
func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

// ContainsWord reports whether key occurs in text with no word character on either side.
func ContainsWord(text, key string) bool {
	if key == "" {
		return false
	}
	for from := 0; from <= len(text)-len(key); {
		i := strings.Index(text[from:], key)
		if i < 0 {
			return false
		}
		i += from
		before, _ := utf8.DecodeLastRuneInString(text[:i])
		after, _ := utf8.DecodeRuneInString(text[i+len(key):])
		if (i == 0 || !isWordRune(before)) && (i+len(key) == len(text) || !isWordRune(after)) {
			return true
		}
		_, size := utf8.DecodeRuneInString(text[i:])
		from = i + size
	}
	return false
}

// Checkable reports whether an answer key can be looked up in search results.
func Checkable(key string) bool {
	n := RuneLen(key)
	return n >= EvidenceMin && n <= EvidenceMax && !nonAnswers[key]
}

// Marked reports whether an answer is boxed or cued (so its key is a short extract).
func Marked(answer string) bool {
	if _, ok := FinalBoxed(answer); ok {
		return true
	}
	_, ok := CuedAnswer(answer)
	return ok
}

// Casefold is Python's str.casefold (full Unicode case folding).
func Casefold(s string) string { return cases.Fold().String(s) }

// Collapse is " ".join(s.split()).
func Collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// SplitLines is Python's str.splitlines: it breaks at \n, \r, \r\n and the other Unicode
// line boundaries, and yields no final empty line.
func SplitLines(s string) []string {
	var lines []string
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			lines = append(lines, s[start:i])
			if r == '\r' && i+1 < len(s) && s[i+1] == '\n' {
				size++
			}
			start = i + size
		}
		i += size
	}
	if start < len(s) {
		lines = append(lines, s[start:])
	}
	return lines
}

// RuneLen is Python's len for str.
func RuneLen(s string) int { return utf8.RuneCountInString(s) }
