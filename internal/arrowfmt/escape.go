package arrowfmt

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape makes text from outside the program (a server's message, a model's output, a task id)
// safe to print on a terminal: every control character (C0, DEL and C1, so ESC, CR, BEL, NUL
// and the line break too) is written as its Go escape (\x1b, \r, \a, \x00, \n, \u009b) and
// every byte that is not UTF-8 as \xNN; everything else, backslashes included, is unchanged,
// so Escape of an escaped text changes nothing. Only what is printed is escaped: stored text
// keeps its exact bytes.
func Escape(s string) string {
	if !strings.ContainsFunc(s, unsafe) {
		return s
	}
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, n := utf8.DecodeRuneInString(s[i:])
		w = n
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
	}
	return b.String()
}

// EscapeLines is Escape of each line of s, keeping its line breaks: for text of several lines
// the program built around outside text (an error, a stage's summary).
func EscapeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Escape(l)
	}
	return strings.Join(lines, "\n")
}

// unsafe reports the runes Escape rewrites; ContainsFunc sees each byte that is not UTF-8 as
// utf8.RuneError.
func unsafe(r rune) bool { return r == utf8.RuneError || unicode.IsControl(r) }
