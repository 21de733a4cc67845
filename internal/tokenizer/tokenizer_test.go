package tokenizer_test

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/tokenizer"
)

// qwenPattern is Qwen2/Qwen3's Split regex.
const qwenPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// byteLevel is the character of each byte in the byte-level alphabet (GPT-2's).
func byteLevel(b byte) string {
	n := 0
	for c := range 256 {
		if c >= '!' && c <= '~' || c >= 0xA1 && c <= 0xAC || c >= 0xAE {
			if c == int(b) {
				return string(rune(c))
			}
			continue
		}
		if c == int(b) {
			return string(rune(256 + n))
		}
		n++
	}
	panic("unreachable")
}

// tiny is a tokenizer.json as a map: the 256 bytes (id = the byte), six merges ("a b"), three
// added tokens; edit it to make a bad file.
func tiny() map[string]any {
	vocab := map[string]any{}
	for b := range 256 {
		vocab[byteLevel(byte(b))] = b
	}
	sp := byteLevel(' ') // Ġ
	for i, tok := range []string{sp + "t", "he", sp + "the", "ll", "hell", "hello"} {
		vocab[tok] = 256 + i
	}
	return map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil,
		"added_tokens": []any{
			map[string]any{"id": 262, "content": "<|end|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
			map[string]any{"id": 263, "content": "<x>", "single_word": false, "lstrip": true, "rstrip": true, "normalized": false, "special": false},
			map[string]any{"id": 264, "content": "<w>", "single_word": true, "lstrip": false, "rstrip": false, "normalized": true, "special": false},
		},
		"normalizer": map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": qwenPattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}},
		"post_processor": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "", "end_of_word_suffix": "",
			"fuse_unk": false, "byte_fallback": false, "ignore_merges": false, "vocab": vocab,
			"merges": []any{sp + " t", "h e", sp + "t he", "l l", "he ll", "hell o"},
		},
	}
}

// pairs is doc with its merges as ["a", "b"] pairs, the other form files use.
func pairs(doc map[string]any) map[string]any {
	m := doc["model"].(map[string]any)
	var merges []any
	for _, s := range m["merges"].([]any) {
		a, b, _ := strings.Cut(s.(string), " ")
		merges = append(merges, []string{a, b})
	}
	m["merges"] = merges
	return doc
}

func parse(t testing.TB, doc map[string]any, opt tokenizer.Options) (*tokenizer.Tokenizer, error) {
	t.Helper()
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return tokenizer.Parse("tiny.json", data, opt)
}

// TestTinyTokenizer: ids computed by hand from the six merges (a merge applies lowest rank
// first: "hello" is h+e (rank 1), l+l (3), he+ll (4), hell+o (5)).
func TestTinyTokenizer(t *testing.T) {
	tok, err := parse(t, tiny(), tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pairTok, err := parse(t, pairs(tiny()), tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		want []int
	}{
		{"hello", []int{261}},
		{" the", []int{258}},
		{"hello the", []int{261, 258}},
		{"  the", []int{' ', 258}},           // \s+(?!\S) keeps the last space for the word
		{"the", []int{'t', 257}},             // no Ġ: t stays alone, h+e merges
		{"a<|end|>b", []int{'a', 262, 'b'}},  // a special token inside a word
		{"x  <x>\t y", []int{'x', 263, 'y'}}, // lstrip and rstrip take the spaces
		{"a<w>", []int{'a', '<', 'w', '>'}},  // single_word: not after a letter
		{" <w> ", []int{' ', 264, ' '}},
		{"123", []int{'1', '2', '3'}}, // \p{N} one digit at a time
		{"a\r\nb", []int{'a', '\r', '\n', 'b'}},
		{"e\u0301", []int{0xC3, 0xA9}}, // NFC: é
		{"I'M", []int{'I', '\'', 'M'}},
		{"", nil},
	} {
		got, err := tok.Encode(c.text)
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
		if p, _ := pairTok.Encode(c.text); !slices.Equal(p, got) {
			t.Errorf("Encode(%q) with [a, b] merges = %v, with \"a b\" %v", c.text, p, got)
		}
		back, err := tok.Decode(got, false)
		if err != nil {
			t.Fatal(err)
		}
		wantBack := strings.ReplaceAll(c.text, "e\u0301", "é")
		if c.text == "x  <x>\t y" {
			wantBack = "x<x>y"
		}
		if back != wantBack {
			t.Errorf("Decode(Encode(%q)) = %q", c.text, back)
		}
	}
	if got, _ := tok.Decode([]int{261, 262, 258}, true); got != "hello the" {
		t.Errorf("skipping special tokens: %q", got)
	}
	if got, _ := tok.Decode([]int{0xE4, 0xBD, 'a', 0xFF}, false); got != "\uFFFDa\uFFFD" {
		t.Errorf("invalid UTF-8 decodes to %q: want one U+FFFD per maximal invalid sequence", got)
	}
	if _, err := tok.Encode("\xff"); err == nil || !strings.Contains(err.Error(), "not UTF-8") {
		t.Errorf("invalid UTF-8 encodes: %v", err)
	}
	if id, ok := tok.TokenID("<|end|>"); !ok || id != 262 || !tok.IsSpecial(id) || tok.IsSpecial(263) {
		t.Errorf("TokenID(<|end|>) = %d, %v", id, ok)
	}
}

// TestTinyTokenizerErrors: each bad input is one error naming the file, the field and its value.
func TestTinyTokenizerErrors(t *testing.T) {
	model := func(doc map[string]any) map[string]any { return doc["model"].(map[string]any) }
	pre := func(doc map[string]any) map[string]any {
		return doc["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[0].(map[string]any)
	}
	for _, c := range []struct {
		name string
		edit func(map[string]any)
		want []string
	}{
		{"unknown model type", func(d map[string]any) { model(d)["type"] = "WordPiece" }, []string{"model.type", `"WordPiece"`, "only BPE"}},
		{"merge part out of vocab", func(d map[string]any) { model(d)["merges"] = append(model(d)["merges"].([]any), "q zz") },
			[]string{"model.merges[6]", `"zz" is not in model.vocab`}},
		{"merge result out of vocab", func(d map[string]any) { model(d)["merges"] = append(model(d)["merges"].([]any), []string{"q", "z"}) },
			[]string{"model.merges[6]", `the result "qz" is not in model.vocab`}},
		{"malformed merge", func(d map[string]any) { model(d)["merges"] = []any{"h e l"} }, []string{"model.merges[0]", "two tokens"}},
		{"byte_fallback", func(d map[string]any) { model(d)["byte_fallback"] = true }, []string{"model.byte_fallback", "true", "not implemented"}},
		{"dropout", func(d map[string]any) { model(d)["dropout"] = 0.1 }, []string{"model.dropout", "0.1"}},
		{"unknown model field", func(d map[string]any) { model(d)["vocab_file"] = "x" }, []string{"model.vocab_file", "unknown field"}},
		{"missing byte", func(d map[string]any) { delete(model(d)["vocab"].(map[string]any), "A") }, []string{"model.vocab", "byte 0x41"}},
		{"another normalizer", func(d map[string]any) { d["normalizer"] = map[string]any{"type": "Lowercase"} }, []string{"normalizer.type", `"Lowercase"`}},
		{"another behavior", func(d map[string]any) { pre(d)["behavior"] = "Removed" }, []string{"pre_tokenizer.pretokenizers[0].behavior", `"Removed"`}},
		{"bad regex", func(d map[string]any) { pre(d)["pattern"] = map[string]any{"Regex": "(unclosed"} }, []string{"pre_tokenizer.pretokenizers[0].pattern.Regex"}},
		{"truncation", func(d map[string]any) { d["truncation"] = map[string]any{"max_length": 8} }, []string{"truncation", "max_length"}},
		{"another decoder", func(d map[string]any) { d["decoder"] = map[string]any{"type": "WordPiece"} }, []string{"decoder.type", `"WordPiece"`}},
		{"added token id taken", func(d map[string]any) { d["added_tokens"].([]any)[0].(map[string]any)["id"] = 5 }, []string{"added_tokens[0].id", "5"}},
	} {
		doc := tiny()
		c.edit(doc)
		_, err := parse(t, doc, tokenizer.Options{})
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range append([]string{"tiny.json: "}, c.want...) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v: does not say %q", c.name, err, w)
			}
		}
	}
	data, _ := json.Marshal(tiny())
	if _, err := tokenizer.Parse("tiny.json", data[:len(data)/2], tokenizer.Options{}); err == nil ||
		!strings.Contains(err.Error(), "tiny.json: not a JSON object") || !strings.Contains(err.Error(), "unexpected end") {
		t.Errorf("truncated JSON: %v", err)
	}
}

// A pattern that backtracks without end fails Encode within the match timeout, naming the field.
func TestHostileRegexTimesOut(t *testing.T) {
	doc := tiny()
	doc["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[0].(map[string]any)["pattern"] = map[string]any{"Regex": `(a|aa)+$`}
	tok, err := parse(t, doc, tokenizer.Options{MatchTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = tok.Encode(strings.Repeat("a", 200) + "!")
	if err == nil || !strings.Contains(err.Error(), "tiny.json: pre_tokenizer.pretokenizers[0].pattern.Regex: the pattern took over 20ms") {
		t.Errorf("hostile pattern: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the hostile pattern ran %v", d)
	}
}

// The Qwen3 template renders the bytes the scorer has always sent.
func TestQwen3Template(t *testing.T) {
	got := tokenizer.Qwen3.Prompt("S", "U")
	want := "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
	if got != want || tokenizer.Templates["qwen3"].Prompt("S", "U") != want {
		t.Errorf("Prompt = %q", got)
	}
	c, err := tokenizer.ParseConfig("tokenizer_config.json", []byte(`{"eos_token": {"content": "<|im_end|>"}, "chat_template": "{{ messages }}"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.EOS != "<|im_end|>" {
		t.Errorf("eos %q", c.EOS)
	}
	if _, err := c.ChatTemplate(); err == nil || !strings.Contains(err.Error(), "tokenizer_config.json: chat_template: sha256 ") {
		t.Errorf("an unknown template: %v", err)
	}
}

// Encode is safe for concurrent use (the pre-token cache is shared): run with -race.
func TestConcurrentEncode(t *testing.T) {
	tok, err := parse(t, tiny(), tokenizer.Options{CacheSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	texts := corpus(200)
	want := make([][]int, len(texts))
	for i, text := range texts {
		if want[i], err = tok.Encode(text); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range texts {
				j := (i + g*50) % len(texts)
				if got, err := tok.Encode(texts[j]); err != nil || !slices.Equal(got, want[j]) {
					t.Errorf("goroutine %d, text %d: %v, %v", g, j, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
