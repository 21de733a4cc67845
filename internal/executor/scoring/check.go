package scoring

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
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
