package sim

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// Pseudo-words keep the world's entities apart from every real name and from each other, so an
// answer appears as a whole word in a text only where the world put it.
var syllables = []string{
	"ka", "ren", "dor", "mi", "lo", "vash", "tel", "bri", "sen", "gol", "fa", "ith", "mar",
	"quen", "tor", "vel", "yss", "zan", "bar", "cor", "dun", "hal", "lin", "mor", "nar", "pel",
	"ros", "sil", "tam", "ven", "wyn", "drak", "fen", "gar", "hest", "jor", "kel", "lum", "nev",
	"ost", "pra", "rha", "stav", "thal", "umb", "vor", "zel", "cas", "dra", "eld",
}

func pseudoWord(r *rand.Rand) string {
	n := 2 + r.IntN(2)
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(syllables[r.IntN(len(syllables))])
	}
	w := b.String()
	return strings.ToUpper(w[:1]) + w[1:]
}

// namer hands out pseudo-words never used before in one task.
type namer struct {
	r    *rand.Rand
	used map[string]bool
}

func newNamer(r *rand.Rand) *namer { return &namer{r: r, used: map[string]bool{}} }

func (n *namer) word() string {
	for {
		w := pseudoWord(n.r)
		if k := strings.ToLower(w); !n.used[k] {
			n.used[k] = true
			return w
		}
	}
}

var placeSuffixes = []string{"ford", "ton", "burg", "vale", "mouth", "wick", "holm"}

// entity draws a short-answer entity: a person, a place, a work, or a year.
func (n *namer) entity(style int) string {
	switch style % 4 {
	case 0:
		return n.word() + " " + n.word()
	case 1:
		for {
			w := n.word() + placeSuffixes[n.r.IntN(len(placeSuffixes))]
			if k := strings.ToLower(w); !n.used[k] {
				n.used[k] = true
				return w
			}
		}
	case 2:
		return n.word()
	default:
		for {
			y := strconv.Itoa(1600 + n.r.IntN(420))
			if !n.used[y] {
				n.used[y] = true
				return y
			}
		}
	}
}

// Filler text. It has no digits, no answer cues ("answer", "option", "choice", "boxed") and no
// code, so graders and feature extractors find in an output only what the world put there.
var fillerOpeners = map[string][]string{
	"solver": {
		"Let me work through the task step by step.",
		"I will start from what the task states and reason forward.",
		"First I restate the task in my own words.",
	},
	"verifier": {
		"I check the inputs against the task, claim by claim.",
		"Reviewing the inputs from the other agents against the task.",
	},
	"researcher": {
		"I collect the facts the task needs and note where each one comes from.",
		"Gathering the relevant facts with their sources.",
	},
	"finalizer": {
		"Putting the final result in the required form.",
		"Combining what is available into the final result.",
	},
	"tool_user": {"Using the tool result."},
	"planner":   {"Plan for the task."},
}

var fillerSentences = []string{
	"The task gives several details and only some of them matter for the result.",
	"I compare the relevant statements and set aside those that do not bear on the question.",
	"Each step follows from the previous one, so I keep track of the intermediate results.",
	"There is a tempting shortcut here, but it ignores one of the stated conditions.",
	"Rereading the statement confirms which quantity is being asked for.",
	"Two of the facts look similar; the difference between them decides the case.",
	"I double check the reasoning against the wording of the task.",
	"The remaining possibilities can be ruled out one at a time.",
	"Nothing in the task contradicts this line of reasoning so far.",
	"A careful look at the edge cases does not change the conclusion.",
	"This matches the constraint stated near the end of the task.",
	"Putting these observations together narrows the result down considerably.",
	"I keep the conclusion tentative until every condition has been checked.",
	"The most direct reading of the task is also the most consistent one.",
	"One detail is easy to miss, and I make sure to account for it.",
}

// filler returns about n characters of reasoning prose in whole sentences.
func filler(r *rand.Rand, role string, n int) string {
	var b strings.Builder
	if ops := fillerOpeners[role]; len(ops) > 0 {
		b.WriteString(ops[r.IntN(len(ops))])
	}
	for b.Len() < n {
		if b.Len() > 0 {
			if r.IntN(5) == 0 {
				b.WriteString("\n\n")
			} else {
				b.WriteString(" ")
			}
		}
		b.WriteString(fillerSentences[r.IntN(len(fillerSentences))])
	}
	return b.String()
}

// truncate cuts a text mid-sentence at a word boundary near n characters (a truncated output).
func truncate(s string, n int) string {
	if len(s) <= n {
		n = len(s) * 3 / 4
	}
	if n < 1 {
		return s
	}
	cut := strings.LastIndexByte(s[:n], ' ')
	if cut <= 0 {
		cut = n
	}
	return strings.TrimRight(s[:cut], " .,\n")
}
