package fakeengine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"slices"
	"sync"
)

// RequestLog writes one JSON line per request a server answers, for a check of what a run's
// tables say was sent against what the engine received (scripts/served-demo.sh). A scoring
// request (SGLang's /generate, vLLM's /v1/completions with prompt_logprobs) gives one line per
// distinct prompt it carries:
//
//	{"kind":"score","dialect":"sglang","prompt_sha256":"…","prompt_tokens":N,"items":K,"billed_in":I,"billed_out":O}
//
// prompt_sha256 the hex sha256 of the prompt's text (Model.Decode of its token ids: the text
// the scorer had tokenised), items the batch items that prompt heads (the scorer sends one per
// legal action, two or more; a preflight sends one). A chat completion gives
// {"kind":"chat","billed_in":I,"billed_out":O}. billed_in and billed_out are the engine's own
// bill, what its reply's usage reports: for a scoring line the token ids of those items (prompt
// and path each) and the one token generated per item; for a chat completion its prompt and
// completion tokens (evosteer costs is checked against them, cmd/evosteer/costs_test.go).
// Each line is one Write, made under a lock before the reply is sent, so once a client has its
// reply the line is in the writer; an *os.File writer flushes every line. Safe for concurrent
// use; a nil *RequestLog logs nothing. Requests the server refuses are not logged.
type RequestLog struct {
	mu  sync.Mutex
	w   io.Writer
	err error // the first write error; later lines are dropped
}

// NewRequestLog logs to w.
func NewRequestLog(w io.Writer) *RequestLog { return &RequestLog{w: w} }

// Err is the first error writing the log met, or nil.
func (l *RequestLog) Err() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// LogLine is one line of a RequestLog.
type LogLine struct {
	Kind         string `json:"kind"` // "score" or "chat"
	Dialect      string `json:"dialect,omitempty"`
	PromptSHA256 string `json:"prompt_sha256,omitempty"`
	PromptTokens int    `json:"prompt_tokens,omitempty"`
	Items        int    `json:"items,omitempty"`
	BilledIn     int    `json:"billed_in"`
	BilledOut    int    `json:"billed_out"`
}

func (l *RequestLog) write(lines []LogLine) {
	if l == nil {
		return
	}
	var buf []byte
	for _, line := range lines {
		raw, _ := json.Marshal(line) // a LogLine always marshals
		buf = append(append(buf, raw...), '\n')
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		_, l.err = l.w.Write(buf)
	}
}

// scoring logs a scoring request: each item's prompt is its first promptLen ids, logged once
// per distinct prompt, in order of first appearance.
func (l *RequestLog) scoring(m Model, dialect string, batch [][]int, promptLen int) {
	if l == nil {
		return
	}
	var lines []LogLine
	var seen [][]int
	for _, seq := range batch {
		p := seq[:promptLen]
		if k := slices.IndexFunc(seen, func(s []int) bool { return slices.Equal(s, p) }); k >= 0 {
			lines[k].Items++
			lines[k].BilledIn += len(seq)
			lines[k].BilledOut++
			continue
		}
		sum := sha256.Sum256([]byte(m.Decode(p)))
		seen = append(seen, p)
		lines = append(lines, LogLine{Kind: "score", Dialect: dialect, PromptSHA256: hex.EncodeToString(sum[:]), PromptTokens: len(p), Items: 1, BilledIn: len(seq), BilledOut: 1})
	}
	l.write(lines)
}

// chat logs a chat completion of prompt and completion tokens.
func (l *RequestLog) chat(prompt, completion int) {
	l.write([]LogLine{{Kind: "chat", BilledIn: prompt, BilledOut: completion}})
}
