package fakeengine

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// VLLMFault is what is wrong with every /v1/completions reply of a VLLMServer. Those from
// VLLMMissingPosition to VLLMMissingID damage the last choice at its last prompt position, the
// last token of its continuation.
type VLLMFault int

// The faults.
const (
	VLLMNoFault          VLLMFault = iota
	VLLMMissingPosition            // prompt_logprobs lacks its last position
	VLLMNullPosition               // the last position is null
	VLLMNaN                        // the sent token's logprob is "NaN"
	VLLMPosInf                     // the sent token's logprob is "Infinity"
	VLLMPositive                   // the sent token's logprob is 0.5
	VLLMWrongID                    // the map holds another id in place of the sent token
	VLLMMissingID                  // the map is empty
	VLLMNoPromptLogprobs           // prompt_logprobs is null (a server ignoring the field)
	VLLMDuplicateIndex             // the last choice repeats the first one's index
	VLLMMissingChoice              // the last choice is left out
	VLLMReversedChoices            // the choices come in reverse order, their indices right: no fault
	vllmFaults                     // the number of faults
)

var vllmFaultNames = [vllmFaults]string{"no fault", "missing position", "null position", "NaN", "+Inf",
	"positive", "wrong id", "missing id", "no prompt_logprobs", "duplicate index", "missing choice", "reversed choices"}

func (f VLLMFault) String() string {
	if f < 0 || f >= vllmFaults {
		return "VLLMFault(" + strconv.Itoa(int(f)) + ")"
	}
	return vllmFaultNames[f]
}

// VLLMOptions are the faults a VLLMServer injects.
type VLLMOptions struct {
	Fault VLLMFault   // what is wrong with every /v1/completions reply
	Fail  int         // the first Fail requests, to any endpoint, get HTTP 500
	Log   *RequestLog // the scoring and chat requests answered (nil: none logged)
}

// VLLMServer serves a Model in vLLM's dialect, with vLLM's reply shapes: GET /v1/models, POST
// /tokenize (at the root, as vLLM serves it), POST /v1/completions with a batch of token-id
// prompts and prompt_logprobs 0, and POST /v1/chat/completions (Chat). It counts the requests
// it receives by path. Where vLLM would refuse a request (an unknown model, an id outside the
// vocabulary) it answers vLLM's error body; it serves prompt_logprobs 0 only and no generation
// beyond one greedy token.
type VLLMServer struct {
	m    Model
	opts VLLMOptions

	mu       sync.Mutex
	requests map[string]int
	failed   int
}

// NewVLLM is a VLLMServer of m with the given faults.
func NewVLLM(m Model, opts VLLMOptions) *VLLMServer {
	return &VLLMServer{m: m, opts: opts, requests: map[string]int{}}
}

// Requests is the number of requests received for path ("/v1/completions", ...), failed ones
// included.
func (s *VLLMServer) Requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path]
}

// vllmMaxModelLen is the context length the fake server reports.
const vllmMaxModelLen = 32768

func (s *VLLMServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests[r.URL.Path]++
	fail := s.failed < s.opts.Fail
	if fail {
		s.failed++
	}
	s.mu.Unlock()
	if fail {
		vllmError(w, http.StatusInternalServerError, "injected failure")
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		vllmWriteJSON(w, map[string]any{"object": "list", "data": []map[string]any{{
			"id": s.m.Name, "object": "model", "created": time.Now().Unix(), "owned_by": "vllm", "root": s.m.Name,
			"parent": nil, "max_model_len": vllmMaxModelLen, "permission": []any{},
		}}})
	case r.Method == http.MethodPost && r.URL.Path == "/tokenize":
		s.tokenize(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/completions":
		s.completions(w, r)
	case r.URL.Path == "/v1/chat/completions":
		Chat{Model: s.m, Log: s.opts.Log}.ServeHTTP(w, r)
	default:
		vllmError(w, http.StatusNotFound, "Not Found")
	}
}

// checkModel answers vLLM's 404 for a model it does not serve.
func (s *VLLMServer) checkModel(w http.ResponseWriter, model string) bool {
	if model != s.m.Name {
		vllmError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist.", model))
		return false
	}
	return true
}

// tokenize is POST /tokenize. With add_special_tokens true, vLLM's default, it puts <|endoftext|>
// first as a model with a BOS token does, so a client that forgets to turn it off is caught.
func (s *VLLMServer) tokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model            string `json:"model"`
		Prompt           string `json:"prompt"`
		AddSpecialTokens *bool  `json:"add_special_tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		vllmError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !s.checkModel(w, req.Model) {
		return
	}
	ids := s.m.Tokenize(req.Prompt)
	if req.AddSpecialTokens == nil || *req.AddSpecialTokens {
		ids = append([]int{0}, ids...)
	}
	if ids == nil {
		ids = []int{}
	}
	vllmWriteJSON(w, map[string]any{"count": len(ids), "max_model_len": vllmMaxModelLen, "tokens": ids, "token_strs": nil})
}

// vllmLogprob is vLLM's Logprob.
type vllmLogprob struct {
	Logprob      vllmFloat `json:"logprob"`
	Rank         int       `json:"rank"`
	DecodedToken string    `json:"decoded_token"`
}

// vllmFloat writes a non-finite number as a string, "NaN", "Infinity" or "-Infinity" (what a
// Python server's serializer writes where it does not refuse them), and a finite one as a number.
type vllmFloat float64

func (f vllmFloat) MarshalJSON() ([]byte, error) {
	switch v := float64(f); {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Infinity"`), nil
	default:
		return json.Marshal(v)
	}
}

// completions is POST /v1/completions.
func (s *VLLMServer) completions(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model          string  `json:"model"`
		Prompt         [][]int `json:"prompt"`
		MaxTokens      *int    `json:"max_tokens"`
		PromptLogprobs *int    `json:"prompt_logprobs"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		vllmError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !s.checkModel(w, req.Model) {
		return
	}
	switch {
	case len(req.Prompt) == 0:
		vllmError(w, http.StatusBadRequest, "Either prompt or prompt_embeds must be provided and non-empty.")
		return
	case req.MaxTokens == nil || *req.MaxTokens < 1:
		vllmError(w, http.StatusBadRequest, "the fake server generates one token or more: set max_tokens ≥ 1")
		return
	case req.PromptLogprobs != nil && *req.PromptLogprobs != 0:
		vllmError(w, http.StatusBadRequest, "the fake server serves prompt_logprobs 0 only")
		return
	}
	choices := make([]vllmChoice, len(req.Prompt))
	promptTokens := 0
	for i, seq := range req.Prompt {
		for _, t := range seq {
			if t < 0 || t >= VocabSize {
				vllmError(w, http.StatusBadRequest, fmt.Sprintf("Token id %d is out of vocabulary", t))
				return
			}
		}
		if len(seq) == 0 {
			vllmError(w, http.StatusBadRequest, "The prompt cannot be empty")
			return
		}
		promptTokens += len(seq)
		choices[i] = vllmChoice{Index: i, Text: vllmDecodeToken(vllmGreedy(seq)), FinishReason: "length"}
		if req.PromptLogprobs != nil {
			choices[i].PromptLogprobs = s.promptLogprobs(seq)
		}
	}
	if req.PromptLogprobs != nil {
		s.opts.Log.scoring(s.m, "vllm", req.Prompt, vllmPromptLen(req.Prompt))
	}
	choices = vllmInject(s.opts.Fault, choices, req.Prompt[len(req.Prompt)-1])
	vllmWriteJSON(w, map[string]any{
		"id": "cmpl-fake", "object": "text_completion", "created": time.Now().Unix(), "model": s.m.Name,
		"choices": choices, "service_tier": nil, "system_fingerprint": nil,
		"usage":              map[string]any{"prompt_tokens": promptTokens, "total_tokens": promptTokens + len(choices), "completion_tokens": len(choices), "prompt_tokens_details": nil},
		"kv_transfer_params": nil,
	})
}

// generationPromptEnd is the end of the Qwen3 template's generation prompt, "</think>\n\n" in
// Model's tokens: where internal/executor/scoring's Qwen3 prompt ends and a candidate begins.
var generationPromptEnd = []int{4, len(Specials) + '\n', len(Specials) + '\n'}

// vllmPromptLen is the length of the prompt the sequences of a scoring batch start with, for the
// request log. A vLLM request carries prompt+continuation sequences with no boundary between
// the two (internal/executor/scoring's VLLM): the prompt is taken as the sequences' longest
// common prefix, leaving every sequence a token, cut after the last generation-prompt end
// within it where there is one (candidates that share their first tokens would otherwise
// lengthen it).
func vllmPromptLen(batch [][]int) int {
	n := len(batch[0]) - 1
	for _, seq := range batch[1:] {
		n = min(n, len(seq)-1)
		for i := range n {
			if seq[i] != batch[0][i] {
				n = i
				break
			}
		}
	}
	end := len(generationPromptEnd)
	for k := n; k >= end; k-- {
		if slices.Equal(batch[0][k-end:k], generationPromptEnd) {
			return k
		}
	}
	return n
}

// vllmChoice is vLLM's CompletionResponseChoice.
type vllmChoice struct {
	Index          int                      `json:"index"`
	Text           string                   `json:"text"`
	Logprobs       any                      `json:"logprobs"`
	FinishReason   string                   `json:"finish_reason"`
	StopReason     any                      `json:"stop_reason"`
	TokenIDs       any                      `json:"token_ids"`
	PromptLogprobs []map[string]vllmLogprob `json:"prompt_logprobs"`
	PromptTokenIDs any                      `json:"prompt_token_ids"`
}

// vllmInject damages the choices as the fault says; last is the last choice's sequence.
func vllmInject(f VLLMFault, choices []vllmChoice, last []int) []vllmChoice {
	n := len(choices) - 1
	lps := choices[n].PromptLogprobs
	pos := len(last) - 1
	sent := strconv.Itoa(last[pos])
	if lps == nil && f >= VLLMMissingPosition && f <= VLLMMissingID {
		return choices // a request without prompt_logprobs: no position to damage
	}
	switch f {
	case VLLMMissingPosition:
		choices[n].PromptLogprobs = lps[:pos]
	case VLLMNullPosition:
		lps[pos] = nil
	case VLLMNaN, VLLMPosInf, VLLMPositive:
		e := lps[pos][sent]
		e.Logprob = map[VLLMFault]vllmFloat{VLLMNaN: vllmFloat(math.NaN()), VLLMPosInf: vllmFloat(math.Inf(1)), VLLMPositive: 0.5}[f]
		lps[pos][sent] = e
	case VLLMWrongID:
		lps[pos] = map[string]vllmLogprob{strconv.Itoa((last[pos] + 1) % VocabSize): lps[pos][sent]}
	case VLLMMissingID:
		lps[pos] = map[string]vllmLogprob{}
	case VLLMNoPromptLogprobs:
		for i := range choices {
			choices[i].PromptLogprobs = nil
		}
	case VLLMDuplicateIndex:
		choices[n].Index = choices[0].Index
	case VLLMMissingChoice:
		choices = choices[:n]
	case VLLMReversedChoices:
		slices.Reverse(choices)
	}
	return choices
}

// promptLogprobs is vLLM's prompt_logprobs with k = 0: null at position 0, then at each position
// the map from the token there to its log-probability given the tokens before, and its rank.
func (s *VLLMServer) promptLogprobs(seq []int) []map[string]vllmLogprob {
	out := make([]map[string]vllmLogprob, len(seq))
	for j := 1; j < len(seq); j++ {
		t := seq[j]
		out[j] = map[string]vllmLogprob{strconv.Itoa(t): {
			Logprob: vllmFloat(s.m.LogProb(seq[:j], t)), Rank: vllmRank(seq[:j], t), DecodedToken: vllmDecodeToken(t),
		}}
	}
	return out
}

// vllmLastTwo are the last two tokens of a context, −1 where it is shorter.
func vllmLastTwo(context []int) (prev2, prev1 int) {
	prev2, prev1 = -1, -1
	if n := len(context); n >= 1 {
		prev1 = context[n-1]
		if n >= 2 {
			prev2 = context[n-2]
		}
	}
	return prev2, prev1
}

// vllmRank is vLLM's rank of t after context: the number of tokens at least as likely.
func vllmRank(context []int, t int) int {
	prev2, prev1 := vllmLastTwo(context)
	own, r := Logit(len(context), prev2, prev1, t), 0
	for u := 0; u < VocabSize; u++ {
		if Logit(len(context), prev2, prev1, u) >= own {
			r++
		}
	}
	return r
}

// vllmGreedy is the most likely token after context, the lowest id among equals.
func vllmGreedy(context []int) int {
	prev2, prev1 := vllmLastTwo(context)
	best := 0
	for u := 1; u < VocabSize; u++ {
		if Logit(len(context), prev2, prev1, u) > Logit(len(context), prev2, prev1, best) {
			best = u
		}
	}
	return best
}

// vllmDecodeToken is a token's text: a special token's spelling, else its byte.
func vllmDecodeToken(t int) string {
	if t < len(Specials) {
		return Specials[t]
	}
	return string([]byte{byte(t - len(Specials))})
}

// vllmError writes vLLM's ErrorResponse.
func vllmError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": message, "type": http.StatusText(status), "param": nil, "code": status,
	}})
}

func vllmWriteJSON(w http.ResponseWriter, v any) {
	raw, err := json.Marshal(v)
	if err != nil {
		vllmError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(raw)
}
