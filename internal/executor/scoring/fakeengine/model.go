package fakeengine

import (
	"math"
	"strings"
)

// The special tokens, ids 0..len(Specials)-1, in Qwen's chat-template spelling; every byte b is
// the token len(Specials)+b.
var Specials = []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"}

// VocabSize is the number of token ids.
var VocabSize = len(Specials) + 256

// Model is a deterministic language model over special tokens and bytes: the logit of the next
// token t after the context x_1..x_n is Logit(n, x_{n-1}, x_n, t), a smooth pseudo-random function,
// so nearby contexts give different distributions and every number is exact to compute.
type Model struct {
	Name string // the served model name
}

// Tokenize splits text into special tokens (matched first, leftmost) and bytes.
func (Model) Tokenize(text string) []int {
	var ids []int
	for len(text) > 0 {
		matched := false
		for id, sp := range Specials {
			if strings.HasPrefix(text, sp) {
				ids, text, matched = append(ids, id), text[len(sp):], true
				break
			}
		}
		if !matched {
			ids, text = append(ids, len(Specials)+int(text[0])), text[1:]
		}
	}
	return ids
}

// Logit is the unnormalised score of token t after a context of length n whose last two tokens
// are prev2, prev1 (−1 where the context is shorter).
func Logit(n, prev2, prev1, t int) float64 {
	return 2.5*math.Sin(0.731*float64(t)+1.37*float64(prev1)+0.113*float64(prev2)+0.059*float64(n)) +
		0.8*math.Cos(0.291*float64(t*(prev1+3)%97))
}

// LogProb is log p(next | context): the log-softmax of Logit over the vocabulary, summed in id
// order so the number is the same wherever it is computed.
func (Model) LogProb(context []int, next int) float64 {
	n := len(context)
	prev1, prev2 := -1, -1
	if n >= 1 {
		prev1 = context[n-1]
	}
	if n >= 2 {
		prev2 = context[n-2]
	}
	m := math.Inf(-1)
	for t := 0; t < VocabSize; t++ {
		m = max(m, Logit(n, prev2, prev1, t))
	}
	sum := 0.0
	for t := 0; t < VocabSize; t++ {
		sum += math.Exp(Logit(n, prev2, prev1, t) - m)
	}
	return Logit(n, prev2, prev1, next) - m - math.Log(sum)
}

// Continuation is the log-probability of each token of cont after prompt.
func (m Model) Continuation(prompt, cont []int) []float64 {
	ctx := append([]int(nil), prompt...)
	out := make([]float64, len(cont))
	for j, t := range cont {
		out[j] = m.LogProb(ctx, t)
		ctx = append(ctx, t)
	}
	return out
}

// Decode is the text of token ids: each special token's spelling, each byte token's byte. It
// inverts Tokenize: Decode(m.Tokenize(s)) == s for every s. An id outside the vocabulary
// (which the servers refuse before decoding) is skipped.
func (Model) Decode(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		switch {
		case id >= 0 && id < len(Specials):
			b.WriteString(Specials[id])
		case id >= len(Specials) && id < VocabSize:
			b.WriteByte(byte(id - len(Specials)))
		}
	}
	return b.String()
}
