package redact

import (
	"strings"
	"unicode/utf8"
)

// MinFragment is the shortest run of the key's bytes that is redacted; shorter runs occur by
// chance in ordinary text. A key shorter than this is redacted only whole.
const MinFragment = 8

// Marker replaces each redacted run.
const Marker = "[redacted]"

// Key replaces every run of text that is a substring of key, MinFragment bytes or longer (or the
// whole key when it is shorter), by Marker. It takes O(len(text)·len(key)) time and
// O(len(key)) memory: run[j] is the length of the longest common suffix of text[:i+1] and
// key[:j+1], the classic longest-common-substring recurrence.
func Key(text, key string) string {
	if key == "" || len(text) == 0 || !mayHold(text, key) {
		return text
	}
	least := min(MinFragment, len(key))
	// end[i] is the length of the longest key fragment that ends at text byte i.
	end := make([]int, len(text))
	run := make([]int, len(key)+1) // run[j+1] for key byte j; run[0] stays 0
	found := false
	for i := 0; i < len(text); i++ {
		for j := len(key) - 1; j >= 0; j-- { // downwards: run[j] still holds row i-1
			if text[i] == key[j] {
				run[j+1] = run[j] + 1
				if run[j+1] > end[i] {
					end[i] = run[j+1]
				}
			} else {
				run[j+1] = 0
			}
		}
		if end[i] >= least {
			found = true
		}
	}
	if !found {
		return text
	}
	// Sweep backwards: cover counts the bytes still inside a fragment that ends further right.
	masked := make([]bool, len(text))
	cover := 0
	for i := len(text) - 1; i >= 0; i-- {
		cover = max(cover-1, 0)
		if end[i] >= least {
			cover = max(cover, end[i])
		}
		masked[i] = cover > 0
	}
	out := make([]byte, 0, len(text))
	for i := 0; i < len(text); i++ {
		if !masked[i] {
			out = append(out, text[i])
		} else if i == 0 || !masked[i-1] {
			out = append(out, Marker...)
		}
	}
	return string(out)
}

// mayHold reports whether text holds the key or one of its MinFragment-byte runs, in one pass
// over text: every fragment Key redacts contains such a run, so a text without one (a model's
// reply, nearly always) is returned at once, and the quadratic recurrence runs only where a
// fragment is present.
func mayHold(text, key string) bool {
	if len(key) <= MinFragment {
		return strings.Contains(text, key)
	}
	runs := make(map[string]struct{}, len(key)-MinFragment+1)
	for i := 0; i+MinFragment <= len(key); i++ {
		runs[key[i:i+MinFragment]] = struct{}{}
	}
	for i := 0; i+MinFragment <= len(text); i++ {
		if _, ok := runs[text[i:i+MinFragment]]; ok {
			return true
		}
	}
	return false
}

// Cut redacts key from text and then cuts the result to at most n bytes (on a character
// boundary), marking a cut with "...". Redacting first is what keeps a key that straddles the
// cut from surviving in part. Only a prefix of text is read, so a huge body costs little.
func Cut(text, key string, n int) string {
	cut := false
	if limit := 2*n + len(key); len(text) > limit {
		// A key crossing this prefix's end leaves a tail fragment, itself redacted when long.
		text, cut = text[:limit], true
	}
	text = Key(text, key)
	if len(text) > n {
		i := n
		for i > 0 && !utf8.RuneStart(text[i]) {
			i--
		}
		text, cut = text[:i], true
	}
	if cut {
		text += "..."
	}
	return text
}
