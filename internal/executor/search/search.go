package search

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Hit is one retrieved passage.
type Hit struct {
	ID    string  `json:"id"`
	Title string  `json:"title"`
	Text  string  `json:"text"`
	Score float64 `json:"score"`
}

// Searcher returns the top passages for a query.
type Searcher interface {
	Search(ctx context.Context, query string) ([]Hit, error)
}

// Format renders hits as the reference's search tool does: `Doc i(Title: "t") text` lines,
// each passage cut at passageChars characters with " ...", the whole cut at resultChars with a
// note of what was omitted.
func Format(hits []Hit, passageChars, resultChars int) string {
	var b strings.Builder
	for i, h := range hits {
		text := h.Text
		if rs := []rune(text); len(rs) > passageChars {
			text = strings.TrimRight(string(rs[:passageChars]), " \t\r\n") + " ..."
		}
		fmt.Fprintf(&b, "Doc %d(Title: \"%s\") %s\n", i+1, h.Title, text)
	}
	out := b.String()
	if n := utf8.RuneCountInString(out); n > resultChars {
		out = string([]rune(out)[:resultChars]) + fmt.Sprintf("\n[... %d characters omitted ...]", n-resultChars)
	}
	return out
}
