package tasks

import (
	"strings"
	"unicode"
)

// The reference graders are Python; these helpers give Go the Python meaning of whitespace
// (str.isspace, re's \s), word characters (re's \w), digits (re's \d), str.strip,
// str.splitlines and str.lower, so that scores agree on any text, not only on ASCII.

// pySpaceClass is re's \s for str patterns, as a character class body.
const pySpaceClass = `\t\n\v\f\r \x1c-\x1f\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}`

// pyDigitClass is re's \d for str patterns (Unicode decimal digits).
const pyDigitClass = `\p{Nd}`

func pySpace(r rune) bool {
	switch {
	case r >= '\t' && r <= '\r', r == ' ', r >= 0x1c && r <= 0x1f, r == 0x85, r == 0xa0, r == 0x1680,
		r >= 0x2000 && r <= 0x200a, r == 0x2028, r == 0x2029, r == 0x202f, r == 0x205f, r == 0x3000:
		return true
	}
	return false
}

// pyWord is re's \w: str.isalnum() or "_".
func pyWord(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

// pyStrip is str.strip(chars); chars == "" strips whitespace.
func pyStrip(s, chars string) string { return pyRStrip(pyLStrip(s, chars), chars) }

func pyLStrip(s, chars string) string {
	if chars == "" {
		return strings.TrimLeftFunc(s, pySpace)
	}
	return strings.TrimLeft(s, chars)
}

func pyRStrip(s, chars string) string {
	if chars == "" {
		return strings.TrimRightFunc(s, pySpace)
	}
	return strings.TrimRight(s, chars)
}

// pyFields is str.split() without arguments.
func pyFields(s string) []string { return strings.FieldsFunc(s, pySpace) }

// pySplitLines is str.splitlines().
func pySplitLines(s string) []string {
	var lines []string
	start := 0
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			lines = append(lines, string(rs[start:i]))
			if rs[i] == '\r' && i+1 < len(rs) && rs[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	if start < len(rs) {
		lines = append(lines, string(rs[start:]))
	}
	return lines
}

// pyLower is str.lower(): Unicode lowercase with the two special cases Go's simple mapping
// lacks, dotted capital I and word-final sigma.
func pyLower(s string) string {
	rs := []rune(s)
	var b strings.Builder
	for i, r := range rs {
		switch {
		case r == 0x130:
			b.WriteString("i\u0307")
		case r == 'Σ' && i > 0 && unicode.IsLetter(rs[i-1]) && (i+1 == len(rs) || !unicode.IsLetter(rs[i+1])):
			b.WriteRune('ς')
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// asciiDigits rewrites Unicode decimal digits as ASCII ones, as Python's int() and
// Decimal() read them.
func asciiDigits(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 || !unicode.Is(unicode.Nd, r) {
			return r
		}
		return '0' + digitValue(r)
	}, s)
}

// digitValue is the value of a decimal digit: Nd ranges are runs of whole 0-9 sets.
func digitValue(r rune) rune {
	for _, rg := range unicode.Nd.R16 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return (r - rune(rg.Lo)) % 10
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return (r - rune(rg.Lo)) % 10
		}
	}
	return 0
}
