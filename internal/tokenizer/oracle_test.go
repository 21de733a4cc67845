package tokenizer_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/tokenizer"
	"github.com/evosteer/evosteer-go/internal/tokenizer/tokenizertest"
)

// oracleStrings is how many corpus strings the oracle test encodes.
const oracleStrings = 3000

// TestQwen3AgreesWithTheOracle encodes the corpus with Qwen3's tokenizer.json here and with the
// Hugging Face library (npm tokenizers, scripts/tokenizer-fixtures.sh): id for id, every string.
func TestQwen3AgreesWithTheOracle(t *testing.T) {
	o := tokenizertest.Open(t)
	tok, err := tokenizer.Load(o.Qwen3JSON(), tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	texts := corpus(oracleStrings)
	reply := o.Run(t, tokenizertest.Request{Encode: texts})
	agree, tokens := 0, 0
	for i, text := range texts {
		got, err := tok.Encode(text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		tokens += len(got)
		if slices.Equal(got, reply.Encode[i]) {
			agree++
			continue
		}
		if agree+10 > i { // the first few disagreements, in full
			t.Errorf("string %d %q:\n got %v\nwant %v", i, text, got, reply.Encode[i])
		}
	}
	t.Logf("oracle (tokenizers %s): %d of %d strings agree id for id (%d tokens)", reply.Version, agree, len(texts), tokens)
	if agree != len(texts) {
		t.Errorf("%d of %d strings disagree with the oracle", len(texts)-agree, len(texts))
	}
}

// TestQwen3DecodesAsTheOracle decodes random id sequences (byte tokens that split characters,
// added tokens, special ones skipped or not) as the Hugging Face library does.
func TestQwen3DecodesAsTheOracle(t *testing.T) {
	o := tokenizertest.Open(t)
	tok, err := tokenizer.Load(o.Qwen3JSON(), tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(49, 3))
	var seqs [][]int
	for _, text := range corpus(300) {
		ids, err := tok.Encode(text)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ids)
		if len(ids) > 2 { // a cut through a character's bytes
			seqs = append(seqs, ids[r.IntN(len(ids)/2):len(ids)-r.IntN(len(ids)/2)])
		}
		random := make([]int, 1+r.IntN(12))
		for j := range random {
			random[j] = r.IntN(tok.VocabSize())
		}
		seqs = append(seqs, random)
	}
	for _, skip := range []bool{false, true} {
		reply := o.Run(t, tokenizertest.Request{Decode: seqs, SkipSpecial: skip})
		agree := 0
		for i, ids := range seqs {
			got, err := tok.Decode(ids, skip)
			if err != nil {
				t.Fatal(err)
			}
			if got == reply.Decode[i] {
				agree++
			} else if agree+5 > i {
				t.Errorf("skip special %v: %v:\n got %q\nwant %q", skip, ids, got, reply.Decode[i])
			}
		}
		t.Logf("skip special %v: %d of %d decodings agree", skip, agree, len(seqs))
	}
}

// TestQwen3Config reads Qwen3's tokenizer_config.json: its chat template is the one implemented
// here, and its end-of-turn token is one token.
func TestQwen3Config(t *testing.T) {
	o := tokenizertest.Open(t)
	c, err := tokenizer.LoadConfig(o.Qwen3Config())
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := c.ChatTemplate()
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.Name != tokenizer.Qwen3.Name || c.EOS != "<|im_end|>" || c.Pad != "<|endoftext|>" || c.BOS != "" {
		t.Errorf("config %+v, template %s", c, tmpl.Name)
	}
	tok, err := tokenizer.Load(o.Qwen3JSON(), tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode(tmpl.EndOfTurn)
	if err != nil || len(ids) != 1 || !tok.IsSpecial(ids[0]) {
		t.Errorf("the end of turn encodes to %v, %v: want one special token", ids, err)
	}
	prompt, err := tok.Encode(tmpl.Prompt("sys", "user"))
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := tok.Decode(prompt, false); text != tmpl.Prompt("sys", "user") {
		t.Errorf("the prompt does not decode to itself: %q", text)
	}
	if text, _ := tok.Decode(prompt, true); strings.Contains(text, "<|im_") || !strings.Contains(text, "<think>") {
		t.Errorf("skipping special tokens: %q (<think> is not special in Qwen3)", text)
	}
	if _, err := tok.Decode([]int{tok.VocabSize()}, false); err == nil {
		t.Error("an id past the vocab decodes")
	}
}

// TestTinyAgreesWithTheOracle: the tiny tokenizer of TestTinyTokenizer (its added tokens strip,
// match single words only, or match after normalization) encodes the corpus as the Hugging Face
// library does.
func TestTinyAgreesWithTheOracle(t *testing.T) {
	o := tokenizertest.Open(t)
	doc := tiny()
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "tiny.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(file, tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"x  <x>\t y", "<x><x>", " <x> <x> ", "a<w>", " <w> ", "<w><w>", "<w>a", "é<w>", "<w>\u0301", "<|end|> <x> <w>"}
	for _, text := range corpus(1000) {
		texts = append(texts, strings.NewReplacer("<|im_end|>", "<|end|>", "<think>", "<x>", "</think>", " <w> ").Replace(text))
	}
	reply := o.Run(t, tokenizertest.Request{Tokenizer: file, Encode: texts})
	agree := 0
	for i, text := range texts {
		got, err := tok.Encode(text)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(got, reply.Encode[i]) {
			agree++
		} else if agree+5 > i {
			t.Errorf("%q:\n got %v\nwant %v", text, got, reply.Encode[i])
		}
	}
	t.Logf("tiny tokenizer: %d of %d strings agree with the oracle", agree, len(texts))
	if agree != len(texts) {
		t.Errorf("%d of %d strings disagree with the oracle", len(texts)-agree, len(texts))
	}
}
