package scoring

import "encoding/json"

// The hand-written request bodies and reply reader, for the tests that hold them to
// encoding/json's.

func SGLangBody(prompt []int, conts [][]int) []byte { return sglangBody(prompt, conts) }

func VLLMBody(model string, prompt []int, conts [][]int) []byte {
	return vllmBody(model, prompt, conts)
}

// CompletionChoice is one choice as ReadCompletionReply reads it.
type CompletionChoice struct {
	Index          *int
	PromptLogprobs []json.RawMessage // nil for null or missing; the entries from position n on
	Positions      int
}

func ReadCompletionReply(raw []byte, n int) ([]CompletionChoice, error) {
	choices, err := readCompletionReply(raw, n)
	if err != nil {
		return nil, err
	}
	out := make([]CompletionChoice, len(choices))
	for k, ch := range choices {
		if ch.hasIndex {
			out[k].Index = &ch.index
		}
		if ch.hasLogprobs {
			out[k].PromptLogprobs = append([]json.RawMessage{}, ch.tail...)
		}
		out[k].Positions = ch.positions
	}
	if choices == nil {
		return nil, nil
	}
	return out, nil
}
