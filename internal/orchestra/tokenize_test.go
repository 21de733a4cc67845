package orchestra

import (
	"slices"
	"testing"

	"github.com/evosteer/evosteer-go/internal/tokenizer"
	"github.com/evosteer/evosteer-go/internal/tokenizer/tokenizertest"
)

// TestControllerPromptsTokenizeAsTheOracle renders controller prompts of several states (with and
// without the value estimate) in Qwen3's chat template and encodes them with internal/tokenizer
// and with the Hugging Face library (scripts/tokenizer-fixtures.sh): id for id.
func TestControllerPromptsTokenizeAsTheOracle(t *testing.T) {
	o := tokenizertest.Open(t)
	tok, err := tokenizer.Load(o.Qwen3JSON(), tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for k := 1; k <= 8; k++ {
		r := teamStateUpTo(t, k)
		texts = append(texts, r.ControllerPrompt(0.25*float64(k%4), -0.125), r.ControllerPromptWithoutValue())
	}
	for _, r := range []*Runtime{environmentState(t, true), environmentState(t, false), pairState(t, onNode(KindSetOutput, "n0")),
		newTestRuntime(qaTask, newFake(), defaultOptions()), newTestRuntime(alfTask, newFake(), defaultOptions())} {
		texts = append(texts, r.ControllerPrompt(0.5, 0), r.ControllerPromptWithoutValue())
	}
	for i, user := range slices.Clone(texts) {
		texts[i] = tokenizer.Qwen3.Prompt(ControllerSystemPrompt, user)
	}
	texts = append(texts, ControllerSystemPrompt)
	reply := o.Run(t, tokenizertest.Request{Encode: texts})
	tokens := 0
	for i, text := range texts {
		got, err := tok.Encode(text)
		if err != nil {
			t.Fatal(err)
		}
		tokens += len(got)
		if !slices.Equal(got, reply.Encode[i]) {
			t.Errorf("prompt %d disagrees with the oracle:\n got %v\nwant %v\n%s", i, got, reply.Encode[i], text)
		}
	}
	t.Logf("%d controller prompts (%d tokens) encoded", len(texts), tokens)
}
