package textrules

import (
	"strings"
	"testing"
)

func TestTokens(t *testing.T) {
	for s, want := range map[string]int64{"": 0, "a": 1, "abcd": 1, "abcde": 2, "é": 1, "ééé": 2} {
		if got := Tokens(s); got != want {
			t.Errorf("Tokens(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestAnswerPresent(t *testing.T) {
	cases := map[string]bool{
		"":                                          false,
		"   \n ":                                    false,
		"Paris":                                     true,
		"Answer: Paris":                             true,
		"The result is \\boxed{12}.":                true,
		"```python\ndef f():\n    return 1\n```":    true,
		"Plan:\n1. Find the city\n2. Check it":      false,
		"**Facts**\n- Paris is big\n- It is old":    false,
		"## Steps\n* one\n* two":                    false,
		"Steps: 1. search 2. read 3. answer":        false, // an inline enumeration after a lead-in
		"- Paris\n- Lyon":                           true,  // a list without a title
		"**Done.**\n- a\n- b":                       true,  // a sentence, not a title
		"Plan:\n1. Find it\n   more detail\n2. Go":  false, // indented continuation lines
		"Plan:\n1. Find it\n2. Go\nParis is right.": true,
		"Plan:\n1. Find it\nanswer is Paris":        true, // a cue counts
	}
	for text, want := range cases {
		if got := AnswerPresent(text); got != want {
			t.Errorf("AnswerPresent(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestNormalizedAnswer(t *testing.T) {
	cases := map[string]string{
		"So \\boxed{\\frac{1}{2}} and \\boxed{x":      "\\frac{1}{2}",
		"first \\boxed{3} then \\boxed{ 4 }":          "4",
		"The final answer is: **Paris**.":             "paris",
		"Answer: x\nmore text\nAnswer: `Lyon`":        "lyon",
		"Answer:\n  Rome":                             "rome",
		"```py\nshort\n```\n```py\nlonger  code\n```": "longer code",
		"  Hello   WORLD \n":                          "hello world",
		"``a b``":                                     "a b",
		"`a`b`":                                       "`a`b`",
		"Straße":                                      "strasse",
		"~~~\nBody\n~~~":                              "body",
	}
	for text, want := range cases {
		if got := NormalizedAnswer(text); got != want {
			t.Errorf("NormalizedAnswer(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestCuedAnswerScansFromTheFirstCue: starting the scan at the first "answer" finds exactly the
// matches a scan of the whole text finds.
func TestCuedAnswerScansFromTheFirstCue(t *testing.T) {
	whole := func(text string) (string, bool) {
		m := AnswerCueRe.FindAllStringSubmatch(text, -1)
		if len(m) == 0 {
			return "", false
		}
		v := strings.TrimSpace(strings.Trim(strings.TrimSpace(m[len(m)-1][1]), Quotes))
		v = strings.TrimSpace(strings.Trim(strings.TrimSpace(strings.TrimRight(v, ".")), Quotes))
		return v, v != ""
	}
	prose := strings.Repeat("Reasoning about the passages, step by step. ", 50)
	for _, text := range []string{
		"", "no cue here", prose + "Answer: Paris", prose + "The final answer is: 42.",
		"FINAL ANSWER: x\nanswer: y", "the answer\n\nis: z", "answers: many", "Final  answer: spaced",
		"anſwer: long s", prose + "Anſwer: long s late", "answer", "ANSWER IS \"quoted\".", "x final answer: y answer: z",
	} {
		got, ok := CuedAnswer(text)
		want, wantOK := whole(text)
		if got != want || ok != wantOK {
			t.Errorf("CuedAnswer(%.40q) = %q, %v; the whole-text scan gives %q, %v", text, got, ok, want, wantOK)
		}
	}
}

// TestFoldedIndex checks the one-pass scan against its definition: the first ASCII-folded
// occurrence, or offset 0 when the text holds a rune (?i) folds into an ASCII letter.
func TestFoldedIndex(t *testing.T) {
	oracle := func(text, word string) int {
		if strings.ContainsAny(text, "\u017f\u212a") {
			return 0
		}
		if i := strings.Index(strings.Map(func(r rune) rune {
			if r < 0x80 {
				return r | 0x20
			}
			return r
		}, text), word); i >= 0 {
			return i
		}
		return len(text)
	}
	dash := strings.Repeat("prose — with “quotes” and dashes ", 20)
	for _, text := range []string{
		"", "a", "answe", "answer", "xANSWER", dash + "Answer: 4", dash, "answer then ſ", "ſ first, answer",
		dash + "anſwer", "answer \u212a", "\u212aelvin", "Kelvin answer", "ans\u00e9wer answer", "é", "Ł answer", "answer" + dash + "ſ",
	} {
		if got, want := FoldedIndex(text, "answer"), oracle(text, "answer"); got != want {
			t.Errorf("FoldedIndex(%.40q) = %d, want %d", text, got, want)
		}
	}
}
