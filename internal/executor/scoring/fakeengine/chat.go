package fakeengine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// Chat answers POST /v1/chat/completions in the OpenAI shape (what internal/executor/openai's
// Client sends and reads), so agents can run on the fake engine too: both servers route that
// path here. The reply is a function of the request alone (model, messages, seed, temperature):
// "Answer: X", X one of the candidates found in the last user message (ChatCandidates), picked
// by a sha256 of the request, so a share of the answers is right and rewards vary. usage counts
// Model's tokens: prompt_tokens those of the messages' contents joined, completion_tokens those
// of the reply. A reply longer than max_tokens is cut there with finish_reason "length"; stop
// strings are not applied (the replies hold none of the executor's).
type Chat struct {
	Model Model
	Log   *RequestLog // nil: nothing is logged
}

// chatRequest is the part of a Chat Completions request the fake reads.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	MaxTokens   *int64   `json:"max_tokens"`
	Temperature *float64 `json:"temperature"`
	Seed        *int64   `json:"seed"`
}

func (c Chat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		openAIError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		openAIError(w, http.StatusBadRequest, "the request is not a chat completion: "+err.Error())
		return
	}
	if req.Model != c.Model.Name {
		openAIError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist.", req.Model))
		return
	}
	if len(req.Messages) == 0 {
		openAIError(w, http.StatusBadRequest, "messages must be a nonempty list")
		return
	}
	last, all := "", make([]string, len(req.Messages))
	for i, m := range req.Messages {
		all[i] = m.Content
		if m.Role == "user" {
			last = m.Content
		}
	}
	candidates := ChatCandidates(last)
	sum := chatHash(req)
	text := "Answer: " + candidates[binary.BigEndian.Uint64(sum[:8])%uint64(len(candidates))]
	reply, finish := c.Model.Tokenize(text), "stop"
	if req.MaxTokens != nil && *req.MaxTokens >= 0 && int64(len(reply)) > *req.MaxTokens {
		reply, finish = reply[:*req.MaxTokens], "length"
		text = c.Model.Decode(reply)
	}
	prompt := len(c.Model.Tokenize(strings.Join(all, "")))
	c.Log.chat(prompt, len(reply))
	sglangJSON(w, http.StatusOK, map[string]any{
		"id": fmt.Sprintf("chatcmpl-fake-%x", sum[:8]), "object": "chat.completion", "created": 0, "model": c.Model.Name,
		"choices": []map[string]any{{"index": 0, "message": map[string]any{"role": "assistant", "content": text},
			"logprobs": nil, "finish_reason": finish}},
		"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": len(reply), "total_tokens": prompt + len(reply)},
	})
}

// chatHash is the sha256 of everything the reply depends on, each part length-prefixed.
func chatHash(req chatRequest) [sha256.Size]byte {
	h := sha256.New()
	part := func(s string) {
		_ = binary.Write(h, binary.LittleEndian, uint64(len(s)))
		h.Write([]byte(s))
	}
	part(req.Model)
	for _, m := range req.Messages {
		part(m.Role)
		part(m.Content)
	}
	if req.Seed != nil {
		part(fmt.Sprint("seed ", *req.Seed))
	}
	if req.Temperature != nil {
		part(fmt.Sprint("temperature ", math.Float64bits(*req.Temperature)))
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

var (
	// taskSection is the task part of a runtime agent prompt ("Task:\n…" up to the next part,
	// internal/orchestra's layout); a message without one is searched whole.
	taskSection = regexp.MustCompile(`(?s)(?:\A|\n)Task:\n(.*?)(?:\n\n(?:Procedure to follow|Input from agent|Your previous output|Perform your role|Tools:)|\z)`)
	optionLine  = regexp.MustCompile(`(?m)^[ \t]*([A-J])[.)][ \t]+\S`)
	mathCue     = regexp.MustCompile(`(?i)\\boxed|\binteger\b|\bmath`)
	integerRe   = regexp.MustCompile(`\b[0-9]+\b`)
	wordRe      = regexp.MustCompile(`\b[A-Z][a-z]+\b`)
	promptWords = []string{"Question", "Passages", "Options", "Answer", "Give", "End", "Find", "Solve", "Put", // instructions
		"The", "In", "Is", "Are", "Was", "Were", "Did", "Does", "Which", "Who", "What", "When", "Where", "How"} // question words
)

// ChatCandidates are the answers the fake chooses from for a user message: the option letters
// when the task lists options ("A. …" lines), the integers of a math-looking task's problem (a
// task that mentions \boxed, an integer or math; its lines after the first, the instruction,
// when it has more), otherwise the capitalised words from its question on (or of the whole
// task), instruction and question words left out, and "yes" and "no". Only the task part of a
// runtime agent prompt is searched. The list is never empty.
func ChatCandidates(user string) []string {
	task := user
	if m := taskSection.FindStringSubmatch(user); m != nil {
		task = m[1]
	}
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, m := range optionLine.FindAllStringSubmatch(task, -1) {
		add(m[1])
	}
	if len(out) >= 2 {
		return out
	}
	out = nil
	if mathCue.MatchString(task) {
		problem := task
		if _, rest, ok := strings.Cut(task, "\n"); ok && strings.TrimSpace(rest) != "" {
			problem = rest // the first line is the instruction ("an integer from 0 to 999")
		}
		for _, n := range integerRe.FindAllString(problem, -1) {
			add(n)
		}
		if len(out) > 0 {
			return out
		}
	}
	if i := strings.LastIndex(task, "Question:"); i >= 0 {
		task = task[i:]
	}
	for _, w := range wordRe.FindAllString(task, -1) {
		if !slices.Contains(promptWords, w) {
			add(w)
		}
	}
	add("yes")
	add("no")
	return out
}

// openAIError writes OpenAI's error body, as vLLM's OpenAI server does.
func openAIError(w http.ResponseWriter, status int, message string) {
	sglangJSON(w, status, map[string]any{"error": map[string]any{
		"message": message, "type": http.StatusText(status), "param": nil, "code": status,
	}})
}
