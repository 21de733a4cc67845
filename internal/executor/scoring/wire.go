package scoring

// The parts of the two engines' wire contracts they share: /tokenize, /v1/models, a log-probability.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/evosteer/evosteer-go/internal/executor/openai"
)

// checkLogProb refuses a log-probability a server reports that is not a finite number ≤ 0 as a
// malformed reply: such a number is never handed to ρ.
func checkLogProb(v float64) error {
	switch {
	case math.IsNaN(v):
		return fmt.Errorf("%w: the log-prob is NaN", openai.ErrMalformed)
	case math.IsInf(v, 0):
		return fmt.Errorf("%w: the log-prob is %v", openai.ErrMalformed, v)
	case v > 0:
		return fmt.Errorf("%w: the log-prob %v is above 0", openai.ErrMalformed, v)
	}
	return nil
}

// parseLogprob reads a logprob's raw JSON: a number (one that overflows float64 is ±Inf), or a
// string spelling one ("NaN", "Infinity", "-Infinity"); checkLogProb then refuses the non-finite.
func parseLogprob(raw json.RawMessage) (float64, error) {
	switch {
	case len(raw) == 0:
		return 0, fmt.Errorf("%w: no logprob", openai.ErrMalformed)
	case bytes.Equal(raw, []byte("null")):
		return 0, fmt.Errorf("%w: the logprob is null", openai.ErrMalformed)
	}
	text := string(raw)
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return 0, fmt.Errorf("%w: the logprob %s: %v", openai.ErrMalformed, raw, err)
		}
	}
	lp, err := strconv.ParseFloat(text, 64)
	if err != nil && !(errors.Is(err, strconv.ErrRange) && math.IsInf(lp, 0)) {
		return 0, fmt.Errorf("%w: the logprob %s is not a number", openai.ErrMalformed, raw)
	}
	return lp, nil
}

// modelList is the OpenAI-style GET /v1/models reply both engines serve (vLLM's ModelList in
// vllm/entrypoints/openai/engine/protocol.py; SGLang's served_model_name): the served names.
type modelList struct {
	Data []struct {
		ID string `json:"id"`
	} `json:"data"`
}

// tokenizeRequest and tokenizeResponse are the POST /tokenize contract both engines serve at the
// server root (vLLM's serve/tokenize/protocol.py, SGLang's TokenizeRequest and TokenizeResponse
// in entrypoints/openai/protocol.py); add_special_tokens defaults to true on both.
type tokenizeRequest struct {
	Model            string `json:"model"`
	Prompt           string `json:"prompt"`
	AddSpecialTokens bool   `json:"add_special_tokens"`
}

type tokenizeResponse struct {
	Count  *int64   `json:"count"`
	Tokens *[]int64 `json:"tokens"`
}

// tokenize is text's token ids from the server's own tokenizer, no special token added; op names
// the call in errors.
func tokenize(ctx context.Context, client *openai.Client, op, text string) ([]int, error) {
	body, err := json.Marshal(tokenizeRequest{Model: client.Model(), Prompt: text})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var ids []int
	err = client.Do(ctx, op, http.MethodPost, "/tokenize", body, func(raw []byte) error {
		var r tokenizeResponse
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("%w: the /tokenize reply: %v", openai.ErrMalformed, err)
		}
		if r.Tokens == nil {
			return fmt.Errorf("%w: the /tokenize reply has no tokens", openai.ErrMalformed)
		}
		if r.Count != nil && *r.Count != int64(len(*r.Tokens)) {
			return fmt.Errorf("%w: the /tokenize reply counts %d tokens but lists %d", openai.ErrMalformed, *r.Count, len(*r.Tokens))
		}
		ids = make([]int, len(*r.Tokens))
		for i, t := range *r.Tokens {
			if err := openai.CheckTokens(fmt.Sprintf("tokens[%d]", i), t); err != nil {
				return err
			}
			ids[i] = int(t)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}
