package textrules

import (
	"strings"
	"testing"
)

// BenchmarkFoldedIndex scans a solver's long prose (em dashes and curly quotes, whose lead byte
// is the Kelvin sign's) for its answer cue: "one-pass" is FoldedIndex, "contains-any" the scan it
// replaced (strings.ContainsAny for ſ and K, then the folded search), in the same run, so their
// ratio is the speed-up. Under -short (make test) the prose is 20 times shorter.
func BenchmarkFoldedIndex(b *testing.B) {
	n := 200
	if testing.Short() {
		n = 10
	}
	text := strings.Repeat("Weighing the passages — “the second one” — step by step. ", n) + "Answer: Paris"
	previous := func(text, word string) int {
		if strings.ContainsAny(text, "\u017f\u212a") {
			return 0
		}
		for i := 0; i+len(word) <= len(text); i++ {
			j := 0
			for j < len(word) && text[i+j]|0x20 == word[j] {
				j++
			}
			if j == len(word) {
				return i
			}
		}
		return len(text)
	}
	for _, c := range []struct {
		name string
		scan func(string, string) int
	}{{"one-pass", FoldedIndex}, {"contains-any", previous}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for range b.N {
				if c.scan(text, "answer") != len(text)-len("Answer: Paris") {
					b.Fatal("wrong offset")
				}
			}
		})
	}
}
