package author

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
)

// An author server that omits finish_reason (some OpenAI-compatible servers do) gives a proposal
// like any other: the content is the reply.
func TestModelAuthorReplyWithoutFinishReason(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, _ chatRequest, _ int) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": goodReply}}},
			"usage":   map[string]any{"prompt_tokens": 1234, "completion_tokens": 56},
		})
	})
	a, err := New(modelConfig(t, s.URL))
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Propose(context.Background(), testWindow())
	if err != nil {
		t.Fatal(err)
	}
	if p.Record == nil || p.Record.Name != "Eliminate options" || p.TokensIn != 1234 || p.TokensOut != 56 {
		t.Errorf("proposal %+v", p)
	}
}
