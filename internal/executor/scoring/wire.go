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

// A scoring request is almost all token ids: the prompt's, once for every candidate (a decision
// of 16 candidates after a 7,000-token prompt sends some 112,000). Its body is written by hand,
// not by encoding/json's reflection over [][]int: the prompt's ids are formatted once
// (strconv.AppendInt) and their bytes copied into each sequence, into one buffer sized for the
// whole body. The bytes are exactly json.Marshal's of the request struct (TestScoringBodies).

// appendIDs appends ids as JSON numbers separated by commas, without brackets.
func appendIDs(dst []byte, ids []int) []byte {
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(id), 10)
	}
	return dst
}

// appendSequences appends the JSON array of prompt+c for each c of conts, the prompt's ids
// formatted once; headroom is the bytes still to be appended after it, for the first allocation.
func appendSequences(dst []byte, prompt []int, conts [][]int, headroom int) []byte {
	head := appendIDs(make([]byte, 0, 8*len(prompt)), prompt)
	size := len(dst) + 2 + headroom
	for _, c := range conts {
		size += len(head) + 3 + 12*len(c) // [prompt,c], — an id is at most 11 bytes, and a comma
	}
	if cap(dst) < size {
		dst = append(make([]byte, 0, size), dst...)
	}
	dst = append(dst, '[')
	for i, c := range conts {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '[')
		dst = append(dst, head...)
		if len(head) > 0 && len(c) > 0 {
			dst = append(dst, ',')
		}
		dst = appendIDs(dst, c)
		dst = append(dst, ']')
	}
	return append(dst, ']')
}

// appendString appends s as json.Marshal writes a string (HTML-escaped, invalid UTF-8 replaced).
func appendString(dst []byte, s string) []byte {
	raw, _ := json.Marshal(s) // a string always marshals
	return append(dst, raw...)
}
