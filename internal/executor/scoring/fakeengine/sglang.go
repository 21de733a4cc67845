package fakeengine

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// SGLangFault is a way the fake SGLang server's /generate reply goes wrong, so a test can check
// the client refuses it. Every fault but SGLangNoLogprobs hits the last batch item's last
// continuation token.
type SGLangFault int

const (
	SGLangNoFault         SGLangFault = iota
	SGLangMissingPosition             // the last input_token_logprobs entry is dropped
	SGLangNaN                         // the log-prob is null: how orjson writes NaN (and ±Inf)
	SGLangPosInf                      // the log-prob is 1e999, a number that reads as +Inf
	SGLangWrongID                     // the entry's token id is not the one sent
	SGLangNoLogprobs                  // meta_info has no input_token_logprobs, as with return_logprob false
)

// SGLangOptions configures the fake SGLang server.
type SGLangOptions struct {
	Fault      SGLangFault
	FaultAfter int         // the fault hits only the /generate requests after the first FaultAfter
	Fail500s   int         // the first Fail500s /generate requests answer HTTP 500
	Log        *RequestLog // the scoring and chat requests answered (nil: none logged)
	// NoModelInfo answers GET /get_model_info with a 404, as a server or proxy serving only the
	// OpenAI routes (and SGLang's native /tokenize and /generate) would.
	NoModelInfo bool
	// TokenizeDelay holds every /tokenize reply this long, so that requests a client sends at
	// once are in flight together.
	TokenizeDelay time.Duration
}

// SGLangServer serves Model in SGLang's native dialect, with the request and reply shapes of
// sgl-project/sglang (python/sglang/srt/entrypoints/http_server.py, managers/io_struct.py,
// entrypoints/openai/protocol.py, the scheduler's input log-prob processing): POST /tokenize,
// POST /generate with batched input_ids and return_logprob, GET /get_model_info and GET
// /v1/models, and POST /v1/chat/completions (Chat). It counts the /generate requests it receives
// and records the texts it tokenises.
type SGLangServer struct {
	model     Model
	opts      SGLangOptions
	generates atomic.Int64
	oddShift  atomic.Uint64 // math.Float64bits of the nats Perturb lowers odd tokens by
	mu        sync.Mutex
	tokenized []string
}

// NewSGLang returns the fake SGLang server of m.
func NewSGLang(m Model, opts SGLangOptions) *SGLangServer {
	return &SGLangServer{model: m, opts: opts}
}

// Generates is the number of /generate requests received, failed ones included.
func (s *SGLangServer) Generates() int { return int(s.generates.Load()) }

// Tokenized is every text /tokenize received, in order of arrival.
func (s *SGLangServer) Tokenized() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tokenized...)
}

// Perturb lowers, from now on, the log-probability /generate reports for every odd token id by
// nats, as a server whose numbers changed between two runs (a uniform shift would cancel in ρ's
// normalisation over the legal siblings; this one moves ρ wherever siblings differ in parity).
func (s *SGLangServer) Perturb(nats float64) { s.oddShift.Store(math.Float64bits(nats)) }

// sglangMaxModelLen is the context length the fake reports.
const sglangMaxModelLen = 32768

func (s *SGLangServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/tokenize" && r.Method == http.MethodPost:
		s.tokenize(w, r)
	case r.URL.Path == "/generate" && (r.Method == http.MethodPost || r.Method == http.MethodPut):
		s.generate(w, r)
	case r.URL.Path == "/v1/chat/completions":
		Chat{Model: s.model, Log: s.opts.Log}.ServeHTTP(w, r)
	case r.URL.Path == "/get_model_info" && r.Method == http.MethodGet && !s.opts.NoModelInfo:
		sglangJSON(w, http.StatusOK, map[string]any{"model_path": s.model.Name, "tokenizer_path": s.model.Name,
			"is_generation": true, "preferred_sampling_params": nil, "weight_version": "default"})
	case r.URL.Path == "/v1/models" && r.Method == http.MethodGet:
		sglangJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{
			{"id": s.model.Name, "object": "model", "owned_by": "sglang", "root": s.model.Name, "max_model_len": sglangMaxModelLen}}})
	default:
		sglangError(w, http.StatusNotFound, "Not Found")
	}
}

// tokenize is SGLang's TokenizeRequest/TokenizeResponse for a string prompt. With
// add_special_tokens true, SGLang's default, it adds <|endoftext|> in front as a tokenizer with a
// BOS token does, so a client that forgets to turn it off is caught.
func (s *SGLangServer) tokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Prompt           *string `json:"prompt"`
		AddSpecialTokens *bool   `json:"add_special_tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Prompt == nil {
		sglangError(w, http.StatusBadRequest, fmt.Sprintf("exactly one of 'prompt' or 'messages' must be provided (%v)", err))
		return
	}
	s.mu.Lock()
	s.tokenized = append(s.tokenized, *req.Prompt)
	s.mu.Unlock()
	if s.opts.TokenizeDelay > 0 {
		time.Sleep(s.opts.TokenizeDelay)
	}
	ids := s.model.Tokenize(*req.Prompt)
	if req.AddSpecialTokens == nil || *req.AddSpecialTokens {
		ids = append([]int{0}, ids...)
	}
	sglangJSON(w, http.StatusOK, map[string]any{"tokens": ids, "count": len(ids), "max_model_len": sglangMaxModelLen})
}

// generate is a batched GenerateReqInput with return_logprob. Per item, input_token_logprobs
// holds [logprob, token_id, null] for input_ids[logprob_start_len:], the first logprob always
// null as SGLang pads it; one greedy token is generated.
func (s *SGLangServer) generate(w http.ResponseWriter, r *http.Request) {
	n := s.generates.Add(1)
	if n <= int64(s.opts.Fail500s) {
		sglangError(w, http.StatusInternalServerError, "fake: injected failure")
		return
	}
	var req struct {
		InputIDs       [][]int `json:"input_ids"`
		SamplingParams struct {
			MaxNewTokens *int `json:"max_new_tokens"`
		} `json:"sampling_params"`
		ReturnLogprob   bool `json:"return_logprob"`
		LogprobStartLen *int `json:"logprob_start_len"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		sglangError(w, http.StatusBadRequest, "input_ids should be a list of lists for batch processing: "+err.Error())
		return
	}
	start := -1
	if req.LogprobStartLen != nil {
		start = *req.LogprobStartLen
	}
	switch {
	case len(req.InputIDs) == 0:
		sglangError(w, http.StatusBadRequest, "input_ids cannot be empty.")
		return
	case req.SamplingParams.MaxNewTokens == nil || *req.SamplingParams.MaxNewTokens != 1:
		sglangError(w, http.StatusBadRequest, "fake: send max_new_tokens 1")
		return
	}
	shift := math.Float64frombits(s.oddShift.Load())
	items := make([]map[string]any, len(req.InputIDs))
	for i, ids := range req.InputIDs {
		for _, id := range ids {
			if id < 0 || id >= VocabSize {
				sglangError(w, http.StatusBadRequest, fmt.Sprintf("token id %d out of vocabulary", id))
				return
			}
		}
		if start < 0 || start >= len(ids) {
			sglangError(w, http.StatusBadRequest, fmt.Sprintf("logprob_start_len (%d) is not in [0, %d)", start, len(ids)))
			return
		}
		next := s.greedy(ids)
		meta := map[string]any{"id": fmt.Sprintf("fake-%d-%d", n, i), "finish_reason": map[string]any{"type": "length", "length": 1},
			"prompt_tokens": len(ids), "completion_tokens": 1, "cached_tokens": 0}
		if req.ReturnLogprob {
			entries := make([][]any, 0, len(ids)-start)
			for k := start; k < len(ids); k++ {
				var v any // null at the first position
				if k > start {
					v = s.model.LogProb(ids[:k], ids[k]) - shift*float64(ids[k]%2)
				}
				entries = append(entries, []any{v, ids[k], nil})
			}
			if i == len(req.InputIDs)-1 && n > int64(s.opts.FaultAfter) {
				entries = s.inject(entries)
			}
			if entries != nil {
				meta["input_token_logprobs"] = entries
			}
			meta["output_token_logprobs"] = [][]any{{s.model.LogProb(ids, next), next, nil}}
		}
		items[i] = map[string]any{"text": "", "output_ids": []int{next}, "meta_info": meta}
	}
	if req.ReturnLogprob {
		// Every item's prompt is its ids up to and including logprob_start_len, the position of
		// the prompt's last token (internal/executor/scoring's SGLang).
		s.opts.Log.scoring(s.model, "sglang", req.InputIDs, start+1)
	}
	sglangJSON(w, http.StatusOK, items)
}

// inject applies the configured fault to an item's entries; nil means the field is left out.
func (s *SGLangServer) inject(entries [][]any) [][]any {
	last := entries[len(entries)-1]
	switch s.opts.Fault {
	case SGLangMissingPosition:
		return entries[:len(entries)-1]
	case SGLangNaN:
		last[0] = nil
	case SGLangPosInf:
		last[0] = json.RawMessage("1e999")
	case SGLangWrongID:
		last[1] = (last[1].(int) + 1) % VocabSize
	case SGLangNoLogprobs:
		return nil
	}
	return entries
}

// greedy is the most probable next token after ids (the lowest id among equals).
func (s *SGLangServer) greedy(ids []int) int {
	n := len(ids)
	prev1, prev2 := ids[n-1], -1
	if n >= 2 {
		prev2 = ids[n-2]
	}
	best, bestLogit := 0, math.Inf(-1)
	for t := 0; t < VocabSize; t++ {
		if l := Logit(n, prev2, prev1, t); l > bestLogit {
			best, bestLogit = t, l
		}
	}
	return best
}

func sglangJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// sglangError is SGLang's ErrorResponse body.
func sglangError(w http.ResponseWriter, status int, msg string) {
	sglangJSON(w, status, map[string]any{"object": "error", "message": msg, "type": http.StatusText(status), "param": nil, "code": status})
}
