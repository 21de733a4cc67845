package search

import (
	"context"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Passage is one passage a task ships.
type Passage struct {
	Title string
	Text  string
}

// ParsePassages reads the passages inlined in a HotpotQA/MuSiQue prompt: the lines after
// "Passages:" of the form "[title] text".
func ParsePassages(prompt string) []Passage {
	_, rest, ok := strings.Cut(prompt, "\nPassages:\n")
	if !ok {
		return nil
	}
	var out []Passage
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "[") {
			continue
		}
		title, text, ok := strings.Cut(line[1:], "] ")
		if !ok {
			continue
		}
		out = append(out, Passage{Title: title, Text: text})
	}
	return out
}

// BM25 constants (Robertson and Zaragoza's usual values).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Local is a BM25 index over a few passages; it is immutable and safe for concurrent use.
type Local struct {
	passages []Passage
	terms    []map[string]int // term counts per passage (title and text)
	lengths  []int
	avg      float64
	df       map[string]int
	topK     int
}

// NewLocal indexes passages; Search returns at most topK of them.
func NewLocal(passages []Passage, topK int) *Local {
	l := &Local{passages: passages, df: map[string]int{}, topK: topK}
	total := 0
	for _, p := range passages {
		counts := map[string]int{}
		toks := tokens(p.Title + " " + p.Text)
		for _, t := range toks {
			counts[t]++
		}
		for t := range counts {
			l.df[t]++
		}
		l.terms = append(l.terms, counts)
		l.lengths = append(l.lengths, len(toks))
		total += len(toks)
	}
	if len(passages) > 0 {
		l.avg = float64(total) / float64(len(passages))
	}
	return l
}

func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

// Search ranks the passages by BM25 against the query; ties keep the prompt's order. Passages
// that share no term with the query are not returned.
func (l *Local) Search(_ context.Context, query string) ([]Hit, error) {
	n := float64(len(l.passages))
	type scored struct {
		i int
		s float64
	}
	var ranked []scored
	q := map[string]bool{}
	for _, t := range tokens(query) {
		q[t] = true
	}
	for i, counts := range l.terms {
		s := 0.0
		for t := range q {
			tf := float64(counts[t])
			if tf == 0 {
				continue
			}
			df := float64(l.df[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			s += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(l.lengths[i])/l.avg))
		}
		if s > 0 {
			ranked = append(ranked, scored{i, s})
		}
	}
	sort.SliceStable(ranked, func(a, b int) bool { return ranked[a].s > ranked[b].s })
	hits := make([]Hit, 0, min(l.topK, len(ranked)))
	for _, r := range ranked[:min(l.topK, len(ranked))] {
		p := l.passages[r.i]
		hits = append(hits, Hit{ID: strconv.Itoa(r.i), Title: p.Title, Text: p.Text, Score: r.s})
	}
	return hits, nil
}
