package orchestra

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// canonicalJSON renders v the way the reference's canonical_json does: object keys sorted,
// separators "," and ":", non-ASCII written as UTF-8 (ensure_ascii=False), no HTML escaping,
// every string and key NFC-normalised, floats in Python's repr form. Byte-identical output
// matters: action texts are compared, sorted and hashed, and prompt lengths are charged.
//
// v may hold nil, bool, int, int64, float64, string, []string, []any and map[string]any.
func canonicalJSON(v any) string {
	var b strings.Builder
	writeJSON(&b, v)
	return b.String()
}

// CanonicalJSON is canonicalJSON for other packages: skill records are hashed, and the skill
// author's data block written, in the same form as actions.
func CanonicalJSON(v any) string { return canonicalJSON(v) }

// rawJSON is canonical JSON already written: writeJSON copies it. The controller prompt keeps
// its unchanging parts (the task prompt, the roles, past events, unchanged nodes) in this form,
// so a decision does not escape them again.
type rawJSON string

func writeJSON(b *strings.Builder, v any) {
	switch x := v.(type) {
	case rawJSON:
		b.WriteString(string(x))
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(pyFloat(x))
	case string:
		writeString(b, x)
	case []string:
		b.WriteByte('[')
		for i, s := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, s)
		}
		b.WriteByte(']')
	case []any:
		b.WriteByte('[')
		for i, item := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, item)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		values := make(map[string]any, len(x))
		for k, item := range x {
			nk := nfc(k)
			keys = append(keys, nk)
			values[nk] = item
		}
		slices.Sort(keys) // byte order of UTF-8 is code-point order, as Python sorts
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeJSON(b, values[k])
		}
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("orchestra: canonical JSON cannot encode %T", v))
	}
}

// nfc returns s as valid UTF-8 in Unicode normalisation form C.
func nfc(s string) string {
	return norm.NFC.String(strings.ToValidUTF8(s, "\uFFFD"))
}

// writeString escapes exactly what Python's json module escapes with ensure_ascii=False. Every
// escaped character is ASCII, so the text is copied in runs between escapes (a multi-byte
// UTF-8 sequence has no byte below 0x80); only a text with non-ASCII bytes needs NFC.
func writeString(b *strings.Builder, s string) {
	if !isASCII(s) {
		s = nfc(s)
	}
	b.WriteByte('"')
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b.WriteString(s[run:i])
		run = i + 1
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			fmt.Fprintf(b, `\u%04x`, c)
		}
	}
	b.WriteString(s[run:])
	b.WriteByte('"')
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// pyFloat formats f as Python's repr does (shortest round-trip digits, "1.0" not "1",
// scientific notation below 1e-4 and from 1e16 on); -0.0 becomes 0.0 as in normalize_json.
func pyFloat(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		panic("orchestra: non-finite numbers are not valid canonical JSON")
	}
	if f == 0 {
		return "0.0"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	exp, _ := strconv.Atoi(s[strings.IndexByte(s, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return s // Go's shortest 'e' form already matches Python's: 1e-05, 1.5e+16
	}
	s = strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsRune(s, '.') {
		s += ".0"
	}
	return s
}
