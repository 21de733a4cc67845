package scoring

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/evosteer/evosteer-go/internal/executor/openai"
)

// SGLang is the Engine of an SGLang server's native API: POST /tokenize for token ids and one
// batched POST /generate with return_logprob for the scores. Every request goes through the
// openai.Client it is built from.
type SGLang struct {
	client *openai.Client
}

// NewSGLang returns the SGLang engine behind client, whose base URL is the server root (e.g.
// http://127.0.0.1:30000, no /v1) and whose model is the served model's name.
func NewSGLang(client *openai.Client) *SGLang { return &SGLang{client: client} }

// Tokenize asks POST /tokenize for the ids of text with add_special_tokens=false (SGLang's
// default is true, which would add a BOS where the tokenizer has one).
func (s *SGLang) Tokenize(ctx context.Context, text string) ([]int, error) {
	return tokenize(ctx, s.client, "sglang /tokenize", text)
}

// sglangBody is the /generate request of prompt+c for each c of conts, with logprob_start_len
// len(prompt)−1, one token generated greedily: the bytes json.Marshal writes of
//
//	{input_ids: [][]int, sampling_params: {max_new_tokens: 1, temperature: 0},
//	 return_logprob: true, logprob_start_len: int}
//
// written by hand (appendSequences) for the ids' sake.
func sglangBody(prompt []int, conts [][]int) []byte {
	const tail = `,"sampling_params":{"max_new_tokens":1,"temperature":0},"return_logprob":true,"logprob_start_len":`
	body := append(make([]byte, 0, 64), `{"input_ids":`...)
	body = appendSequences(body, prompt, conts, len(tail)+21)
	body = append(body, tail...)
	body = strconv.AppendInt(body, int64(len(prompt)-1), 10)
	return append(body, '}')
}

// sglangGenerateItem is one element of a batched /generate reply; each input_token_logprobs
// entry is [logprob, token_id, text], the logprob raw to tell null (how orjson writes NaN and
// ±Inf) and out-of-range numbers from a score.
type sglangGenerateItem struct {
	MetaInfo *struct {
		InputTokenLogprobs *[][]json.RawMessage `json:"input_token_logprobs"`
	} `json:"meta_info"`
}

// Continuations sends one /generate request whose batch holds prompt+continuation for each
// continuation, with logprob_start_len = len(prompt)−1: SGLang returns the input log-probs of the
// tokens from that position on, the first always null (nothing predicts it), so the entries after
// it are the continuation's own tokens, and the radix cache shares the prompt before it across
// the batch. One new token is generated (max_new_tokens 1, greedy) and ignored.
func (s *SGLang) Continuations(ctx context.Context, prompt []int, continuations [][]int) ([][]float64, error) {
	if len(prompt) == 0 {
		return nil, errors.New("sglang /generate: an empty prompt: the first token of a continuation needs a token before it")
	}
	if len(continuations) == 0 {
		return nil, nil
	}
	start := len(prompt) - 1
	for i, c := range continuations {
		if len(c) == 0 {
			return nil, fmt.Errorf("sglang /generate: continuation %d is empty", i)
		}
	}
	body := sglangBody(prompt, continuations)
	var out [][]float64
	err := s.client.Do(ctx, "sglang /generate", http.MethodPost, "/generate", body, func(raw []byte) error {
		var items []sglangGenerateItem
		if err := json.Unmarshal(raw, &items); err != nil {
			return fmt.Errorf("%w: not a batch reply: %v", openai.ErrMalformed, err)
		}
		if len(items) != len(continuations) {
			return fmt.Errorf("%w: %d items for a batch of %d", openai.ErrMalformed, len(items), len(continuations))
		}
		out = make([][]float64, len(items))
		for i, it := range items {
			lps, err := continuationLogProbs(it, prompt[start], continuations[i])
			if err != nil {
				return fmt.Errorf("item %d%w", i, err)
			}
			out[i] = lps
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// continuationLogProbs reads one item's input_token_logprobs: the prompt's last token with a null
// log-prob, then each token of cont with its own; its errors start with the position, or ": ".
func continuationLogProbs(it sglangGenerateItem, last int, cont []int) ([]float64, error) {
	if it.MetaInfo == nil || it.MetaInfo.InputTokenLogprobs == nil {
		return nil, fmt.Errorf(": %w: the reply has no meta_info.input_token_logprobs", openai.ErrMalformed)
	}
	entries := *it.MetaInfo.InputTokenLogprobs
	if len(entries) != len(cont)+1 {
		return nil, fmt.Errorf(": %w: %d input_token_logprobs received, %d expected (the prompt's last token and %d continuation tokens)",
			openai.ErrMalformed, len(entries), len(cont)+1, len(cont))
	}
	lps := make([]float64, len(cont))
	for k, e := range entries {
		want, where := last, " (the prompt's last token)"
		if k > 0 {
			want, where = cont[k-1], fmt.Sprintf(" position %d", k-1)
		}
		v, isNull, err := logProbEntry(e, want)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s: %w", where, err)
		case k == 0 && !isNull:
			return nil, fmt.Errorf("%s: %w: a log-prob %v where SGLang sends null: the positions are shifted", where, openai.ErrMalformed, v)
		case k == 0:
			continue
		case isNull:
			return nil, fmt.Errorf("%s: %w: the log-prob is null (NaN or ±Inf on the server)", where, openai.ErrMalformed)
		}
		if err := checkLogProb(v); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		lps[k-1] = v
	}
	return lps, nil
}

// logProbEntry reads one [logprob, token_id, text] entry whose id must be want; a number beyond
// float64's range reads as ±Inf, for checkLogProb to name.
func logProbEntry(e []json.RawMessage, want int) (v float64, isNull bool, err error) {
	if len(e) < 2 {
		return 0, false, fmt.Errorf("%w: %d fields, not [logprob, token_id, text]", openai.ErrMalformed, len(e))
	}
	var id int64
	if err := json.Unmarshal(e[1], &id); err != nil {
		return 0, false, fmt.Errorf("%w: token id %s: %v", openai.ErrMalformed, e[1], err)
	}
	if id != int64(want) {
		return 0, false, fmt.Errorf("%w: token id %d, but %d was sent", openai.ErrMalformed, id, want)
	}
	if raw := bytes.TrimSpace(e[0]); string(raw) == "null" {
		return 0, true, nil
	}
	v, err = parseLogprob(e[0])
	return v, false, err
}

type sglangModelInfo struct {
	ModelPath    *string `json:"model_path"`
	IsGeneration *bool   `json:"is_generation"`
}

// Preflight checks, before a run spends anything, that the server serves the configured model as
// a generation model and answers a 1-token scoring request with input log-probs. The model: GET
// /get_model_info's model_path is the configured name, or GET /v1/models lists it (a server
// started with --served-model-name); where /get_model_info answers 404 (a server or proxy that
// serves only the OpenAI routes), /v1/models must list it. A generation model: is_generation is
// not false where /get_model_info answers, and in every case the scoring request through
// /generate returns input log-probs, which only a generation model serves. Its error is one line
// naming the server and what is missing.
func (s *SGLang) Preflight(ctx context.Context) error {
	fail := func(err error) error { return fmt.Errorf("sglang preflight %s: %w", s.client.BaseURL(), err) }
	var info sglangModelInfo
	err := s.client.Do(ctx, "GET /get_model_info", http.MethodGet, "/get_model_info", nil, func(raw []byte) error {
		if err := json.Unmarshal(raw, &info); err != nil {
			return fmt.Errorf("%w: %v", openai.ErrMalformed, err)
		}
		if info.ModelPath == nil {
			return fmt.Errorf("%w: the reply has no model_path (not an SGLang server?)", openai.ErrMalformed)
		}
		return nil
	})
	var he *openai.HTTPError
	noInfo := errors.As(err, &he) && he.Status == http.StatusNotFound
	switch {
	case noInfo:
	case err != nil:
		return fail(err)
	case info.IsGeneration != nil && !*info.IsGeneration:
		return fail(fmt.Errorf("GET /get_model_info: %q is not a generation model (is_generation false)", *info.ModelPath))
	}
	if noInfo || *info.ModelPath != s.client.Model() {
		ids, err := s.models(ctx)
		switch {
		case err != nil && noInfo:
			return fail(fmt.Errorf("GET /get_model_info answered 404, and %w", err))
		case err != nil:
			return fail(err)
		case !slices.Contains(ids, s.client.Model()) && noInfo:
			return fail(fmt.Errorf("GET /get_model_info answered 404, and /v1/models lists %q, not the configured model %q", ids, s.client.Model()))
		case !slices.Contains(ids, s.client.Model()):
			return fail(fmt.Errorf("the server serves model_path %q, /v1/models %q, not the configured model %q", *info.ModelPath, ids, s.client.Model()))
		}
	}
	ids, err := s.Tokenize(ctx, "Hello")
	if err != nil {
		return fail(err)
	}
	if len(ids) == 0 {
		return fail(errors.New(`sglang /tokenize: no tokens for "Hello"`))
	}
	if _, err := s.Continuations(ctx, ids, [][]int{ids[:1]}); err != nil {
		return fail(fmt.Errorf("a 1-token scoring request: %w", err))
	}
	return nil
}

// models is the ids GET /v1/models lists.
func (s *SGLang) models(ctx context.Context) ([]string, error) {
	var ids []string
	err := s.client.Do(ctx, "GET /v1/models", http.MethodGet, "/v1/models", nil, func(raw []byte) error {
		var list modelList
		if err := json.Unmarshal(raw, &list); err != nil || list.Data == nil {
			return fmt.Errorf("%w: not a model list (data[].id)", openai.ErrMalformed)
		}
		for _, m := range list.Data {
			ids = append(ids, m.ID)
		}
		return nil
	})
	return ids, err
}
