package tokenizer_test

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/evosteer/evosteer-go/internal/tokenizer"
)

// corpus is n varied strings, the same every run: code with indentation and tabs, CRLF,
// whitespace runs, CJK, Arabic and other scripts, combining marks (NFC), emoji, numbers,
// contractions, added tokens among text, JSON, chat-template prompts and random mixtures.
func corpus(n int) []string {
	r := rand.New(rand.NewPCG(49, 2))
	kinds := []func(*rand.Rand) string{code, whitespace, scripts, emoji, numbers, contractions, added, jsonText, chat, mixture}
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, kinds[i%len(kinds)](r))
	}
	return out
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

var words = []string{"the", "The", "THE", "model", "tokenizer", "orchestrator", "agent", "graph", "node", "edge", "score",
	"n0", "n12", "solver", "verifier", "a", "I", "x", "hello", "world", "Hello", "naïve", "café", "über", "résumé", "Straße"}

var idents = []string{"i", "x", "value", "ids", "merge_rank", "tokenizerJSON", "_private", "__init__", "Σ", "αβγ", "data2", "HTTPServer"}

func line(r *rand.Rand, nwords int) string {
	var b strings.Builder
	for i := range nwords {
		if i > 0 {
			b.WriteString(pick(r, []string{" ", " ", " ", "  ", ", ", ". ", "; ", " - ", "\t", "'", "/", "_"}))
		}
		b.WriteString(pick(r, words))
	}
	return b.String()
}

func code(r *rand.Rand) string {
	indent := pick(r, []string{"    ", "  ", "\t", "\t\t", "        "})
	nl := pick(r, []string{"\n", "\n", "\r\n", "\r"})
	var b strings.Builder
	lang := r.IntN(3)
	for i := range 2 + r.IntN(8) {
		depth := r.IntN(4)
		b.WriteString(strings.Repeat(indent, depth))
		a, c := pick(r, idents), pick(r, idents)
		switch lang {
		case 0:
			b.WriteString(pick(r, []string{
				fmt.Sprintf("def %s(%s, *args, **kw):", a, c),
				fmt.Sprintf("%s = [%s[j] for j in range(%d)]  # comment %d", a, c, r.IntN(1000), i),
				fmt.Sprintf("if %s >= %d and not %s:", a, r.IntN(100), c),
				fmt.Sprintf("return f\"{%s!r}: {%s:.3f}\"", a, c),
				fmt.Sprintf("    raise ValueError('bad %s')", a)}))
		case 1:
			b.WriteString(pick(r, []string{
				fmt.Sprintf("func %s(%s []int) (int, error) {", a, c),
				fmt.Sprintf("%s := make(map[string][]int, %d)", a, r.IntN(4096)),
				fmt.Sprintf("if err != nil { return 0, fmt.Errorf(\"%%s: %%w\", %s, err) }", c),
				"}", "// " + line(r, 5)}))
		default:
			b.WriteString(pick(r, []string{
				fmt.Sprintf("const %s = (%s) => { return %s?.length ?? 0; };", a, c, c),
				fmt.Sprintf("<div class=\"%s\">%s</div>", a, line(r, 3)),
				fmt.Sprintf("SELECT %s, count(*) FROM t WHERE %s <> '' GROUP BY 1;", a, c)}))
		}
		b.WriteString(pick(r, []string{nl, nl, nl + nl, " " + nl, "\t" + nl}))
	}
	return b.String()
}

var spaces = []string{" ", "  ", "   ", "\t", "\n", "\r\n", "\r", "\n\n", " \n", "\u00a0", "\u3000", "\u2028", "\u2029", "\v", "\f",
	"\u0085", "\u1680", "\u2003", "\u202f", "\u200b", "\u00ad", "\x1c", "\x1f", "\x00", "\x7f"}

func whitespace(r *rand.Rand) string {
	var b strings.Builder
	for range 1 + r.IntN(8) {
		for range 1 + r.IntN(4) {
			b.WriteString(pick(r, spaces))
		}
		if r.IntN(3) > 0 {
			b.WriteString(pick(r, words))
		}
		if r.IntN(4) == 0 {
			b.WriteString(pick(r, []string{"!", "?!", "...", "—", "(", ")", "[x]", "{}", "'", "\"", "#", "$", "%"}))
		}
	}
	if r.IntN(3) == 0 {
		b.WriteString(strings.Repeat(pick(r, spaces), 1+r.IntN(40)))
	}
	return b.String()
}

var texts = []string{
	"你好，世界！今天天气很好。", "我们用强化学习训练一个编排器。", "東京は日本の首都です。カタカナとひらがな。", "한국어 텍스트와 숫자 123",
	"مرحبا بالعالم، هذا نص عربي.", "السلام عليكم ٠١٢٣٤٥٦٧٨٩", "שלום עולם", "Привет, мир! Ёжик.", "Γειά σου Κόσμε· ά έ ή",
	"नमस्ते दुनिया", "สวัสดีชาวโลก", "Việt Nam: Tiếng Việt có dấu", "ﬁ ﬂ ﬀ ligatures", "ｆｕｌｌｗｉｄｔｈ　ＡＢＣ１２３",
	"e\u0301 a\u0308 o\u0302 (combining)", "\u1100\u1161\u11a8 (jamo)", "Å Å Å (A-ring, angstrom)", "ǅ ǈ ǋ titlecase", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛",
}

func scripts(r *rand.Rand) string {
	var parts []string
	for range 1 + r.IntN(3) {
		t := pick(r, texts)
		if rs := []rune(t); r.IntN(3) == 0 && len(rs) > 4 {
			i := r.IntN(len(rs) - 2)
			t = string(rs[i:])
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, pick(r, []string{" ", "\n", "", " - ", "。"}))
}

var emojis = []string{"😀", "👍🏽", "👨‍👩‍👧‍👦", "🇯🇵", "🏳️‍🌈", "❤️", "🤖", "✅", "🔥🔥🔥", "⭐", "🧑🏿‍💻", "☕️", "1️⃣", "©", "™"}

func emoji(r *rand.Rand) string {
	var b strings.Builder
	for range 1 + r.IntN(6) {
		b.WriteString(pick(r, emojis))
		if r.IntN(2) == 0 {
			b.WriteString(pick(r, []string{" ", "", "!", " ok ", "\n", pick(r, words)}))
		}
	}
	return b.String()
}

func numbers(r *rand.Rand) string {
	return pick(r, []string{
		fmt.Sprint(r.Int64()), fmt.Sprintf("%.6f", r.Float64()*1e6), fmt.Sprintf("%d,%03d,%03d", r.IntN(1000), r.IntN(1000), r.IntN(1000)),
		fmt.Sprintf("2026-%02d-%02dT%02d:%02d:%02dZ", 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60)),
		fmt.Sprintf("v%d.%d.%d-rc%d", r.IntN(10), r.IntN(30), r.IntN(100), r.IntN(5)), fmt.Sprintf("%e", r.NormFloat64()),
		fmt.Sprintf("0x%x 0b%b %o", r.Uint32(), r.IntN(256), r.IntN(4096)), fmt.Sprintf("%d%%, -%d, +%d", r.IntN(100), r.IntN(1e6), r.IntN(9)),
		"٣٤٥ ١٢ ۱۲۳ ໑໒ ① ½ ² Ⅻ", strings.Repeat("9", 1+r.IntN(60)),
	})
}

func contractions(r *rand.Rand) string {
	var b strings.Builder
	for range 1 + r.IntN(5) {
		b.WriteString(pick(r, []string{"I'm", "you're", "DON'T", "it'S", "we'VE", "they'll", "she'd", "'s", "’s", "'", "''", "rock'n'roll",
			"o'clock", "ſ's", "'ſ", "'S", "'LL", "'Re", "I’ll", "can't", " 's", "x's'"}))
		b.WriteString(pick(r, []string{" ", "", ". ", "\n"}))
	}
	return b.String()
}

var addedTokens = []string{"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>", "</tool_call>",
	"<|fim_prefix|>", "<|vision_pad|>", "<|im_st", "|im_end|>", "<|im_start|", "<think", "< think>", "<|IM_END|>", "<<|im_end|>>"}

func added(r *rand.Rand) string {
	var b strings.Builder
	for range 1 + r.IntN(6) {
		b.WriteString(pick(r, addedTokens))
		b.WriteString(pick(r, []string{"", " ", "\n", "  ", "user\n", "assistant\n", line(r, 2), "\t", "你好"}))
	}
	return b.String()
}

func jsonText(r *rand.Rand) string {
	return fmt.Sprintf(`{"task_family":"%s","execution":{"nodes":[{"id":"n%d","role":"%s","output":"%s"}],"edges":[]},"reference_value":%.4f,"legal_actions":[{"kind":"ADD_AGENT","role":"%s"},{"kind":"STOP"}]}`+"\n\nDiagnosis:\n%s",
		pick(r, []string{"qa", "code", "math"}), r.IntN(20), pick(r, words), strings.ReplaceAll(line(r, 6), `'`, `\u0027`), r.Float64(), pick(r, words), line(r, 8))
}

func chat(r *rand.Rand) string {
	return tokenizer.Qwen3.Prompt(line(r, 1+r.IntN(12)), pick(r, []func(*rand.Rand) string{code, scripts, jsonText, whitespace})(r))
}

// mixture strings runes of every kind together.
func mixture(r *rand.Rand) string {
	pools := []string{"abcXYZ019", " \t\n\r", "'’\"`", "你好世界東京", "مرحبا", "😀👍🏽🇯🇵", "\u0301\u0308\u200d\ufe0f", ".,;:!?-_()[]{}<>|/\\@#$%^&*+=~",
		"éèêëÅ", "ſKΣς", "٠١٢", "\u00a0\u3000\u2028"}
	var b strings.Builder
	for range 1 + r.IntN(30) {
		p := []rune(pick(r, pools))
		b.WriteRune(p[r.IntN(len(p))])
	}
	if r.IntN(4) == 0 {
		b.WriteString(pick(r, addedTokens))
	}
	return b.String()
}
