package sim

import (
	"math/big"
	"regexp"
	"strings"
	"unicode"

	"github.com/evosteer/evosteer-go/internal/textrules"
)

// Answer extraction follows the reference graders (METHOD.md §6.2), so the world reads an agent's
// answer, and grades an output, the way the real graders would.

var (
	qaCue     = regexp.MustCompile(`(?i)answer is|answer:`)
	mcCue     = regexp.MustCompile(`(?i:answer(?:\s+is)?\s*:?)\s*\(?\**([A-Z])\b`)
	mcCueAlt  = regexp.MustCompile(`(?i:option|choice)\s*:?\s*\(?\**([A-Z])\b`)
	numberRe  = regexp.MustCompile(`-?\d+(?:\.\d+)?`)
	fenceRe   = regexp.MustCompile("(?s)```[ \\t]*([A-Za-z0-9_+-]*)[ \\t]*\\n(.*?)```")
	articleRe = regexp.MustCompile(`\b(a|an|the)\b`)
)

// hasQACue reports whether text holds an "answer is" or "answer:" cue.
func hasQACue(text string) bool {
	return qaCue.MatchString(text[textrules.FoldedIndex(text, "answer"):])
}

// extractQA returns the short answer of a QA output: the text after the last "answer is" or
// "answer:" cue (or the next non-empty line when the cue ends its line), else the last non-empty
// line; stripped of markup, quotes and a trailing period.
func extractQA(text string) (string, bool) {
	var ans string
	from := textrules.FoldedIndex(text, "answer") // where a cue can first begin: prose is long
	if locs := qaCue.FindAllStringIndex(text[from:], -1); len(locs) > 0 {
		rest := text[from+locs[len(locs)-1][1]:]
		line, after, _ := strings.Cut(rest, "\n")
		ans = strings.TrimSpace(line)
		if ans == "" {
			for _, l := range strings.Split(after, "\n") {
				if strings.TrimSpace(l) != "" {
					ans = strings.TrimSpace(l)
					break
				}
			}
		}
	} else {
		lines := strings.Split(text, "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if strings.TrimSpace(lines[i]) != "" {
				ans = strings.TrimSpace(lines[i])
				break
			}
		}
	}
	ans = strings.Trim(ans, "*_`\"' ")
	ans = strings.TrimSuffix(ans, ".")
	ans = strings.TrimSpace(ans)
	return ans, ans != ""
}

// normalizeQA is SQuAD normalisation: lowercase, drop punctuation and articles, collapse spaces.
func normalizeQA(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(r rune) rune {
		if unicode.IsPunct(r) || unicode.IsSymbol(r) {
			return -1
		}
		return r
	}, s)
	s = articleRe.ReplaceAllString(s, " ")
	return strings.Join(strings.Fields(s), " ")
}

// qaMatch compares an extracted answer with the gold answers; yes/no golds compare first tokens.
func qaMatch(pred string, golds []string) bool {
	p := normalizeQA(pred)
	for _, g := range golds {
		gn := normalizeQA(g)
		if gn == "yes" || gn == "no" {
			if f := strings.Fields(p); len(f) > 0 && f[0] == gn {
				return true
			}
			continue
		}
		if p == gn && gn != "" {
			return true
		}
	}
	return false
}

// extractMC returns the chosen letter: the last letter after an answer cue, else after an
// option/choice cue, else a bare single-letter output.
func extractMC(text string, options []string) (string, bool) {
	valid := func(l string) bool {
		if len(options) == 0 {
			return l >= "A" && l <= "D"
		}
		for _, o := range options {
			if o == l {
				return true
			}
		}
		return false
	}
	// Each cue begins with one of its words: the scan starts where the first could.
	cues := []struct {
		re   *regexp.Regexp
		from int
	}{
		{mcCue, textrules.FoldedIndex(text, "answer")},
		{mcCueAlt, min(textrules.FoldedIndex(text, "option"), textrules.FoldedIndex(text, "choice"))},
	}
	for _, c := range cues {
		if ms := c.re.FindAllStringSubmatch(text[c.from:], -1); len(ms) > 0 {
			l := ms[len(ms)-1][1]
			return l, valid(l)
		}
	}
	t := strings.Trim(strings.TrimSpace(text), "*().")
	if len(t) == 1 && valid(t) {
		return t, true
	}
	return "", false
}

// lastBoxed returns the brace-matched content of the last \boxed{...} or \fbox{...}.
func lastBoxed(text string) (string, bool) {
	i := max(strings.LastIndex(text, `\boxed{`), strings.LastIndex(text, `\fbox{`))
	if i < 0 {
		return "", false
	}
	j := strings.IndexByte(text[i:], '{') + i + 1
	depth := 1
	for k := j; k < len(text); k++ {
		switch text[k] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return text[j:k], true
			}
		}
	}
	return "", false
}

// extractMath returns the answer number: the last number in the last \boxed{}, else after the
// last "####", else the first number within 200 characters after the last answer cue, else the
// last number in the text.
func extractMath(text string) (string, bool) {
	if b, ok := lastBoxed(text); ok {
		if ns := numberRe.FindAllString(b, -1); len(ns) > 0 {
			return ns[len(ns)-1], true
		}
		return strings.TrimSpace(b), strings.TrimSpace(b) != ""
	}
	if i := strings.LastIndex(text, "####"); i >= 0 {
		if n := numberRe.FindString(text[i:]); n != "" {
			return n, true
		}
	}
	if locs := qaCue.FindAllStringIndex(text, -1); len(locs) > 0 {
		rest := text[locs[len(locs)-1][1]:]
		if len(rest) > 200 {
			rest = rest[:200]
		}
		if n := numberRe.FindString(rest); n != "" {
			return n, true
		}
	}
	if ns := numberRe.FindAllString(text, -1); len(ns) > 0 {
		return ns[len(ns)-1], true
	}
	return "", false
}

// mathEqual compares two numbers as exact decimals.
func mathEqual(a, b string) bool {
	x, ok1 := new(big.Rat).SetString(strings.TrimSpace(a))
	y, ok2 := new(big.Rat).SetString(strings.TrimSpace(b))
	return ok1 && ok2 && x.Cmp(y) == 0
}

// extractCode returns the program of a code output: a closed python fence that defines entry,
// else any closed fence, else nothing.
func extractCode(text, entry string) (string, bool) {
	ms := fenceRe.FindAllStringSubmatch(text, -1)
	def := "def " + entry + "("
	for _, m := range ms {
		lang := strings.ToLower(m[1])
		if (lang == "python" || lang == "py" || lang == "") && entry != "" && strings.Contains(m[2], def) {
			return m[2], true
		}
	}
	for _, m := range ms {
		if strings.TrimSpace(m[2]) != "" {
			return m[2], true
		}
	}
	// Unfenced code: from the line that defines the entry point to the end of the text.
	if entry != "" && len(ms) == 0 {
		if i := strings.Index(text, def); i >= 0 && (i == 0 || text[i-1] == '\n') {
			return text[i:], true
		}
	}
	return "", false
}

// normalizeCode drops blank lines and surrounding whitespace so equal programs compare equal.
func normalizeCode(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" {
			out = append(out, strings.Join(strings.Fields(t), " "))
		}
	}
	return strings.Join(out, "\n")
}

// containsWord reports whether key occurs in text as a whole word (both already normalised).
func containsWord(text, key string) bool {
	if key == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(text[i:], key)
		if j < 0 {
			return false
		}
		j += i
		before := j == 0 || !isWordByte(text[j-1])
		end := j + len(key)
		after := end == len(text) || !isWordByte(text[end])
		if before && after {
			return true
		}
		i = j + 1
	}
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}
