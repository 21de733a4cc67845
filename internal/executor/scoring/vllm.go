package scoring

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/evosteer/evosteer-go/internal/executor/openai"
)

// VLLM is vLLM's dialect of Engine: POST /tokenize at the server root for token ids, and one POST
// /v1/completions per call whose prompt is the batch of prompt+continuation id lists, asking for
// prompt_logprobs 0 (the prompt's own token at each position, no other). vLLM serves /tokenize at
// the root and the OpenAI routes under /v1, so the client's base URL is the server root.
//
// vLLM reports a log-probability of −∞ as −9999 (clamp_prompt_logprobs), a finite number this
// client takes as it comes: exp(−9999) is 0 in float64 as exp(−∞) is.
type VLLM struct {
	client *openai.Client
}

// NewVLLM scores with the vLLM server behind client, whose base URLs are server roots
// (http://127.0.0.1:8000, not …/v1) and whose model is the name the server serves the model under
// (vLLM's --served-model-name, else the model path).
func NewVLLM(client *openai.Client) (*VLLM, error) {
	for _, root := range client.Endpoints() {
		if strings.HasSuffix(root, "/v1") {
			return nil, fmt.Errorf("vllm: the base URL %s ends in /v1: give the server root (%s), for vLLM serves /tokenize there and the OpenAI routes under /v1",
				root, strings.TrimSuffix(root, "/v1"))
		}
	}
	return &VLLM{client: client}, nil
}

// Tokenize asks POST /tokenize for text's ids with add_special_tokens false (no BOS).
func (v *VLLM) Tokenize(ctx context.Context, text string) ([]int, error) {
	return tokenize(ctx, v.client, "vllm tokenize", text)
}

// vllmCompletionRequest is the part of vLLM's CompletionRequest
// (vllm/entrypoints/openai/completion/protocol.py) a scoring call sets: a batch of token-id
// prompts, each scored in one forward pass (prompt_logprobs), one token generated as vLLM
// requires at least one unless echo is set, at temperature 1, which leaves the distribution as
// the model gives it.
//
// vllmBody is that request's bytes, those json.Marshal writes of
//
//	{model: string, prompt: [][]int, max_tokens: 1, temperature: 1, prompt_logprobs: 0}
//
// with prompt+c for each c of conts, written by hand (appendSequences) for the ids' sake.
func vllmBody(model string, prompt []int, conts [][]int) []byte {
	const tail = `,"max_tokens":1,"temperature":1,"prompt_logprobs":0}`
	body := append(make([]byte, 0, 64+len(model)), `{"model":`...)
	body = appendString(body, model)
	body = append(body, `,"prompt":`...)
	body = appendSequences(body, prompt, conts, len(tail))
	return append(body, tail...)
}

// Bounds of an honest /v1/completions reply with prompt_logprobs 0, which holds an entry for
// every position of every sequence sent, about 70–80 bytes each on the wire
// ({"151645":{"logprob":-0.123456789012345,"rank":1,"decoded_token":"…"}}): a reply is
// refused past vllmEntryBytes a position plus vllmReplySlack, and never below
// openai.MaxReplyBytes. 256 bytes leave room for a decoded token of some 170 bytes on average
// (a token's text is a few bytes); a 9-candidate decision of 20,000-token sequences replies
// about 13 MiB and may reply 45 MiB.
const (
	vllmEntryBytes = 256
	vllmReplySlack = 1 << 20 // the choices' other fields, usage, the envelope
)

// vllmReplyBound is the reply bound of a scoring request of prompt+c for each c of conts: the
// prompt positions it asks log-probabilities for, each at vllmEntryBytes, plus vllmReplySlack,
// at least openai.MaxReplyBytes.
func vllmReplyBound(prompt []int, conts [][]int) openai.ReplyBound {
	positions := 0
	for _, c := range conts {
		positions += len(prompt) + len(c)
	}
	bytes := int64(positions)*vllmEntryBytes + vllmReplySlack
	basis := fmt.Sprintf("this request's bound: %d sequences, %d prompt positions × %d bytes + %d MiB", len(conts), positions, vllmEntryBytes, vllmReplySlack>>20)
	if bytes < openai.MaxReplyBytes {
		bytes = openai.MaxReplyBytes
		basis += fmt.Sprintf(", raised to the floor of %d MiB", openai.MaxReplyBytes>>20)
	}
	return openai.ReplyBound{Bytes: bytes, Basis: basis}
}

// vllmLogprob is vLLM's Logprob (vllm/logprobs.py); rank and decoded_token are not read. The
// number is kept raw: a proxy may spell a non-finite one as a string ("NaN", "Infinity") or an
// overflowing literal, and the error names it rather than failing the whole decode.
type vllmLogprob struct {
	Logprob json.RawMessage `json:"logprob"`
}

// errNoPromptLogprobs is a completion reply without prompt_logprobs: the server ignored the field.
var errNoPromptLogprobs = errors.New("no prompt_logprobs")

// Continuations sends one POST /v1/completions whose batch holds prompt+c for each continuation c
// and reads each c's own tokens' log-probabilities at positions len(prompt).. of its choice.
func (v *VLLM) Continuations(ctx context.Context, prompt []int, continuations [][]int) ([][]float64, error) {
	if len(prompt) == 0 {
		return nil, errors.New("vllm completions: an empty prompt (vLLM gives position 0 no log-probability)")
	}
	if len(continuations) == 0 {
		return [][]float64{}, nil
	}
	body := vllmBody(v.client.Model(), prompt, continuations)
	var out [][]float64
	err := v.client.DoBounded(ctx, "vllm completions", http.MethodPost, "/v1/completions", body, vllmReplyBound(prompt, continuations), func(raw []byte) (err error) {
		out, err = decodePromptLogprobs(raw, prompt, continuations)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// decodePromptLogprobs reads a completion reply to the batch of prompt+c for each c of conts: one
// choice per sequence, placed by its index, each holding a log-probability for every position,
// the sent token's among them. Only the continuations' positions are decoded (sentLogProb); the
// prompt's, tens of thousands per candidate, are checked to be JSON and counted
// (readCompletionReply), not worth a value each.
func decodePromptLogprobs(raw []byte, prompt []int, conts [][]int) ([][]float64, error) {
	n := len(prompt)
	choices, err := readCompletionReply(raw, n)
	if err != nil {
		return nil, fmt.Errorf("%w: the /v1/completions reply: %v", openai.ErrMalformed, err)
	}
	if len(choices) != len(conts) {
		return nil, fmt.Errorf("%w: %d choices for a batch of %d continuations", openai.ErrMalformed, len(choices), len(conts))
	}
	out := make([][]float64, len(conts))
	for k, ch := range choices {
		if !ch.hasIndex || ch.index < 0 || ch.index >= len(conts) {
			return nil, fmt.Errorf("%w: choice %d has no index in [0, %d)", openai.ErrMalformed, k, len(conts))
		}
		i := ch.index
		if out[i] != nil {
			return nil, fmt.Errorf("%w: two choices have index %d", openai.ErrMalformed, i)
		}
		c := conts[i]
		if !ch.hasLogprobs {
			return nil, fmt.Errorf("%w: continuation %d: %w (a vLLM server returns them when the request sets prompt_logprobs)", openai.ErrMalformed, i, errNoPromptLogprobs)
		}
		if ch.positions != n+len(c) {
			return nil, fmt.Errorf("%w: continuation %d: %d prompt_logprobs positions received, %d expected (one per token sent)", openai.ErrMalformed, i, ch.positions, n+len(c))
		}
		lps := make([]float64, len(c))
		for j := range lps {
			lp, err := sentLogProb(ch.tail[j], c[j])
			if err != nil {
				return nil, fmt.Errorf("continuation %d, token %d (position %d): %w", i, j, n+j, err)
			}
			lps[j] = lp
		}
		out[i] = lps
	}
	return out, nil
}

// sentLogProb is the log-probability of token id in one position's map, raw.
func sentLogProb(raw json.RawMessage, id int) (float64, error) {
	var m map[string]vllmLogprob
	if err := json.Unmarshal(raw, &m); err != nil {
		return 0, fmt.Errorf("%w: prompt_logprobs there is not a map of token ids: %v", openai.ErrMalformed, err)
	}
	if m == nil {
		return 0, fmt.Errorf("%w: prompt_logprobs is null there", openai.ErrMalformed)
	}
	for key := range m {
		if t, err := strconv.ParseInt(key, 10, 64); err != nil || openai.CheckTokens("a prompt_logprobs key", t) != nil {
			return 0, fmt.Errorf("%w: the prompt_logprobs key %q is not a token id", openai.ErrMalformed, key)
		}
	}
	e, ok := m[strconv.Itoa(id)]
	if !ok {
		keys := make([]string, 0, len(m))
		for key := range m {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		return 0, fmt.Errorf("%w: the sent token %d is not among prompt_logprobs' ids %v", openai.ErrMalformed, id, keys)
	}
	lp, err := parseLogprob(e.Logprob)
	if err != nil {
		return 0, fmt.Errorf("token %d: %w", id, err)
	}
	if err := checkLogProb(lp); err != nil {
		return 0, fmt.Errorf("token %d: %w", id, err)
	}
	return lp, nil
}

// Preflight checks, before a run relies on it, that the server answers, that GET /v1/models lists
// the configured model, that POST /tokenize tokenizes, and that a two-token POST /v1/completions
// returns prompt_logprobs; each failure is one line naming the URL.
func (v *VLLM) Preflight(ctx context.Context) error {
	var served []string
	err := v.client.Do(ctx, "vllm models", http.MethodGet, "/v1/models", nil, func(raw []byte) error {
		var l modelList
		if err := json.Unmarshal(raw, &l); err != nil || l.Data == nil {
			return fmt.Errorf("%w: not a model list (data[].id)", openai.ErrMalformed)
		}
		for _, d := range l.Data {
			served = append(served, d.ID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("vllm preflight: GET %s/v1/models: %w", v.client.BaseURL(), err)
	}
	if !slices.Contains(served, v.client.Model()) {
		return fmt.Errorf("vllm preflight: GET %s/v1/models lists %q, not the configured model %q (the name the server was started with: --served-model-name, else the model path)",
			v.client.BaseURL(), served, v.client.Model())
	}
	ids, err := v.Tokenize(ctx, "a")
	if err != nil {
		return fmt.Errorf("vllm preflight: POST %s/tokenize: %w", v.client.BaseURL(), err)
	}
	if len(ids) == 0 {
		return fmt.Errorf("vllm preflight: POST %s/tokenize gave no tokens for %q", v.client.BaseURL(), "a")
	}
	if _, err := v.Continuations(ctx, ids[:1], [][]int{ids[:1]}); err != nil {
		if errors.Is(err, errNoPromptLogprobs) {
			return fmt.Errorf("vllm preflight: POST %s/v1/completions with prompt_logprobs 0 returned no choices[].prompt_logprobs: the server is not vLLM, or a vLLM too old to return prompt log-probabilities", v.client.BaseURL())
		}
		return fmt.Errorf("vllm preflight: POST %s/v1/completions: %w", v.client.BaseURL(), err)
	}
	return nil
}
