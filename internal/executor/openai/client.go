package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/evosteer/evosteer-go/internal/redact"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatRequest is one Chat Completions call; the client adds the model.
type ChatRequest struct {
	Messages    []Message
	MaxTokens   int64
	Temperature float64
	Seed        *int64   // sent when set (servers that take a per-call seed)
	Stop        []string // stop strings; the server drops them from the text
}

// Usage is what a call consumed.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	Estimated        bool // the server reported no usage; both counts are estimates
}

// ChatResponse is the first choice of a completion.
type ChatResponse struct {
	Text         string
	FinishReason string // "stop", "length", ...
	StopReason   string // the stop string that ended the text, where the server says (vLLM)
	Usage        Usage
}

// Truncated reports a reply cut at max_tokens.
func (r ChatResponse) Truncated() bool { return r.FinishReason == "length" }

// ClientConfig configures a Client.
type ClientConfig struct {
	BaseURL         string        // e.g. http://127.0.0.1:8000/v1; /chat/completions is appended
	Model           string        // the served model name
	APIKey          string        // sent as a bearer token when set; never logged
	MaxConcurrency  int           // calls in flight at once, over every caller of the client
	Timeout         time.Duration // one HTTP attempt
	Outage          time.Duration // how long failures may last before a call gives up
	BackoffInitial  time.Duration // first pause after a failure; it doubles
	BackoffMax      time.Duration // longest pause
	MaxAttempts     int           // attempts of one call at most, within the outage tolerance (0: no limit but it)
	BaseURLSetting  string        // the configuration key that sets BaseURL, named in a redirect's error
	DisableThinking bool          // send chat_template_kwargs.enable_thinking=false (Qwen3 and the like)
	Logger          *slog.Logger  // retries are logged here (nil: slog.Default())
}

// HTTPError is a server's error reply.
type HTTPError struct {
	Status  int
	Message string
}

func (e *HTTPError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message) }

// transient reports the replies worth retrying: server errors, and the two 4xx that mean
// "later" (request timeout, rate limit). Every other 4xx is the request's fault.
func (e *HTTPError) transient() bool {
	return e.Status >= 500 || e.Status == http.StatusRequestTimeout || e.Status == http.StatusTooManyRequests
}

// ErrMalformed is a 2xx reply that is not what the endpoint answers (a Chat Completions
// response, a scoring reply); retrying cannot help.
var ErrMalformed = errors.New("malformed reply")

// ErrRedirect is a redirect reply, never followed; retrying cannot help.
var ErrRedirect = errors.New("redirects are never followed")

// redactedError shows a failure's redacted text and keeps its cause for errors.Is.
type redactedError struct {
	text  string
	cause error
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.cause }

// Client calls a Chat Completions endpoint; it is safe for concurrent use.
type Client struct {
	cfg   ClientConfig
	base  string // BaseURL without its trailing slash
	http  *http.Client
	slots chan struct{}
	log   *slog.Logger
}

// NewClient checks the configuration and returns a client.
func NewClient(cfg ClientConfig) (*Client, error) {
	switch {
	case !strings.HasPrefix(cfg.BaseURL, "http://") && !strings.HasPrefix(cfg.BaseURL, "https://"):
		return nil, fmt.Errorf("openai: base URL %q must start with http:// or https://", cfg.BaseURL)
	case cfg.Model == "":
		return nil, errors.New("openai: no model name")
	case cfg.MaxConcurrency < 1, cfg.Timeout <= 0, cfg.Outage < 0, cfg.BackoffInitial <= 0, cfg.BackoffMax < cfg.BackoffInitial, cfg.MaxAttempts < 0:
		return nil, fmt.Errorf("openai: concurrency %d, timeout %v, outage %v, backoff %v..%v, attempts %d out of range",
			cfg.MaxConcurrency, cfg.Timeout, cfg.Outage, cfg.BackoffInitial, cfg.BackoffMax, cfg.MaxAttempts)
	case cfg.BaseURLSetting == "":
		return nil, errors.New("openai: no configuration key named for the base URL")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 2*cfg.MaxConcurrency, cfg.MaxConcurrency
	// A redirect would re-send the prompt, and to another port the Authorization header, to a
	// server nobody configured: it is an error naming where it pointed.
	noRedirect := func(req *http.Request, _ []*http.Request) error {
		return fmt.Errorf("the server redirected to %s: %w (set %s to the endpoint itself)", req.URL.Redacted(), ErrRedirect, cfg.BaseURLSetting)
	}
	return &Client{cfg: cfg, base: strings.TrimRight(cfg.BaseURL, "/"),
		http: &http.Client{Transport: tr, CheckRedirect: noRedirect}, slots: make(chan struct{}, cfg.MaxConcurrency), log: log}, nil
}

// BaseURL is the base URL requests' paths are appended to, without its trailing slash.
func (c *Client) BaseURL() string { return c.base }

// Model is the served model's name the client was configured with.
func (c *Client) Model() string { return c.cfg.Model }

// MaxReplyBytes bounds one reply's body: a completion is text the context window bounds, far
// below this, and with at most executor.openai.concurrency replies in memory at once the cap
// bounds what a misbehaving server can make the process hold.
const MaxReplyBytes = 8 << 20

// maxTokens bounds the token counts a server reports: a count outside [0, maxTokens] is a
// malformed reply, never written to a run.
const maxTokens = 1 << 40

// APIKeyFromEnv reads the key from the named environment variable; an empty name means no key.
// The error names the variable, never its value.
func APIKeyFromEnv(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	key, ok := os.LookupEnv(name)
	if !ok || key == "" {
		return "", fmt.Errorf("openai: the API key variable %s is not set", name)
	}
	return key, nil
}

// redact removes the API key, and any fragment of it of redact.MinFragment bytes or more, from
// text that may echo it (server messages, transport errors).
func (c *Client) redact(s string) string { return redact.Key(s, c.cfg.APIKey) }

// Lengths a server's text is cut to in an error, after the key has been redacted from it.
const (
	errorBodyChars     = 500 // the message of an error reply
	malformedBodyChars = 200 // the body of a 2xx reply that is not a completion
)

type wireRequest struct {
	Model              string          `json:"model"`
	Messages           []Message       `json:"messages"`
	MaxTokens          int64           `json:"max_tokens"`
	Temperature        float64         `json:"temperature"`
	Seed               *int64          `json:"seed,omitempty"`
	Stop               []string        `json:"stop,omitempty"`
	ChatTemplateKwargs map[string]bool `json:"chat_template_kwargs,omitempty"`
}

type wireResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
		StopReason   any     `json:"stop_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     *int64 `json:"prompt_tokens"`
		CompletionTokens *int64 `json:"completion_tokens"`
	} `json:"usage"`
}

// Chat makes one completion (POST /chat/completions under the base URL), under Do's rules.
func (c *Client) Chat(ctx context.Context, req ChatRequest) (ChatResponse, error) {
	wr := wireRequest{Model: c.cfg.Model, Messages: req.Messages, MaxTokens: req.MaxTokens, Temperature: req.Temperature,
		Seed: req.Seed, Stop: req.Stop}
	if c.cfg.DisableThinking {
		wr.ChatTemplateKwargs = map[string]bool{"enable_thinking": false}
	}
	body, err := json.Marshal(wr)
	if err != nil {
		return ChatResponse{}, err
	}
	var resp ChatResponse
	err = c.Do(ctx, "chat completion", http.MethodPost, "/chat/completions", body, func(raw []byte) (err error) {
		resp, err = c.decodeChat(raw)
		return err
	})
	if err != nil {
		return ChatResponse{}, err
	}
	if resp.Usage.Estimated {
		resp.Usage = estimateUsage(req.Messages, resp.Text)
	}
	return resp, nil
}

// Do sends one request (body nil for none) to path under the base URL and hands a 2xx reply's
// body to decode. Every model call goes through it, so every one follows the same rules:
// concurrency slots, the per-attempt timeout, no redirect, the reply cap, the key redacted from
// every error and log line. Transient failures (connection errors, timeouts, 5xx, 408, 429) are
// retried with exponential backoff until they have lasted longer than the outage tolerance or
// MaxAttempts attempts have failed; other 4xx, redirects and replies decode refuses (a malformed
// reply: retrying cannot help) fail at once with the server's message. op names the call in
// errors and logs.
func (c *Client) Do(ctx context.Context, op, method, path string, body []byte, decode func(raw []byte) error) error {
	var first time.Time
	pause := c.cfg.BackoffInitial
	for attempt := 1; ; attempt++ {
		raw, err := c.attempt(ctx, method, c.base+path, body)
		if err == nil {
			if err = decode(raw); err != nil && !errors.Is(err, ErrMalformed) {
				err = fmt.Errorf("%w: %w", ErrMalformed, err)
			}
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", op, ctx.Err())
		}
		var he *HTTPError
		if errors.Is(err, ErrMalformed) || errors.Is(err, ErrRedirect) || errors.As(err, &he) && !he.transient() {
			return fmt.Errorf("%s: %w", op, &redactedError{text: c.redact(err.Error()), cause: err})
		}
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		if failing := now.Sub(first); failing >= c.cfg.Outage || attempt == c.cfg.MaxAttempts {
			return fmt.Errorf("%s: the server failed for %v after %d attempts (outage tolerance %v, attempts %s): %s",
				op, failing.Round(time.Millisecond), attempt, c.cfg.Outage, attemptLimit(c.cfg.MaxAttempts), c.redact(err.Error()))
		}
		wait := min(pause, c.cfg.Outage-now.Sub(first))
		c.log.Warn(op+" failed; retrying", "attempt", attempt, "pause", wait, "error", c.redact(err.Error()))
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w", op, ctx.Err())
		}
		pause = min(2*pause, c.cfg.BackoffMax)
	}
}

// attemptLimit names ClientConfig.MaxAttempts in an error.
func attemptLimit(n int) string {
	if n == 0 {
		return "unlimited"
	}
	return fmt.Sprint(n)
}

// attempt is one HTTP exchange, holding a concurrency slot for its duration only; it returns
// a 2xx reply's body.
func (c *Client) attempt(ctx context.Context, method, url string, body []byte) ([]byte, error) {
	select {
	case c.slots <- struct{}{}:
		defer func() { <-c.slots }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	hreq, err := http.NewRequestWithContext(actx, method, url, reader)
	if err != nil {
		return nil, err
	}
	if body != nil {
		hreq.Header.Set("Content-Type", "application/json")
	}
	if c.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	hresp, err := c.http.Do(hreq)
	if err != nil {
		return nil, err
	}
	defer hresp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(hresp.Body, MaxReplyBytes+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > MaxReplyBytes {
		return nil, fmt.Errorf("%w: the reply is larger than %d MiB (HTTP %d); refusing it", ErrMalformed, MaxReplyBytes>>20, hresp.StatusCode)
	}
	// The body is redacted before it is cut: cut first, a key echoed across the cut would keep
	// its head, which no later redaction of the whole key finds.
	if hresp.StatusCode < 200 || hresp.StatusCode > 299 {
		return nil, &HTTPError{Status: hresp.StatusCode, Message: redact.Cut(serverMessage(raw), c.cfg.APIKey, errorBodyChars)}
	}
	return raw, nil
}

// decodeChat reads a Chat Completions reply.
func (c *Client) decodeChat(raw []byte) (ChatResponse, error) {
	var wr wireResponse
	if err := json.Unmarshal(raw, &wr); err != nil {
		return ChatResponse{}, fmt.Errorf("%w: %v: %q", ErrMalformed, err, redact.Cut(string(raw), c.cfg.APIKey, malformedBodyChars))
	}
	if len(wr.Choices) == 0 || wr.Choices[0].FinishReason == nil {
		return ChatResponse{}, fmt.Errorf("%w: no choice with a finish_reason: %q", ErrMalformed, redact.Cut(string(raw), c.cfg.APIKey, malformedBodyChars))
	}
	ch := wr.Choices[0]
	// A server may echo the request's Authorization header: nothing of the key reaches a run
	// file or the terminal, in a success as in an error.
	resp := ChatResponse{FinishReason: c.redact(*ch.FinishReason)}
	if ch.Message.Content != nil {
		resp.Text = c.redact(*ch.Message.Content)
	}
	if s, ok := ch.StopReason.(string); ok {
		resp.StopReason = c.redact(s)
	}
	if u := wr.Usage; u != nil && u.PromptTokens != nil && u.CompletionTokens != nil {
		for _, f := range []struct {
			name string
			n    int64
		}{{"prompt_tokens", *u.PromptTokens}, {"completion_tokens", *u.CompletionTokens}} {
			if err := CheckTokens("usage."+f.name, f.n); err != nil {
				return ChatResponse{}, err
			}
		}
		resp.Usage = Usage{PromptTokens: *u.PromptTokens, CompletionTokens: *u.CompletionTokens}
	} else {
		resp.Usage.Estimated = true
	}
	return resp, nil
}

// CheckTokens refuses a token count or id a server reports outside [0, 2^40] as a malformed
// reply, naming the field; such a number is never written to a run.
func CheckTokens(field string, n int64) error {
	if n < 0 || n > maxTokens {
		return fmt.Errorf("%w: %s is %d, outside [0, %d]", ErrMalformed, field, n, int64(maxTokens))
	}
	return nil
}

// serverMessage is the error message of an error body: OpenAI's {"error": {"message"}},
// vLLM's {"message"}, or the raw text; uncut, for the caller redacts it first.
func serverMessage(raw []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(raw, &v) == nil {
		var nested struct {
			Message string `json:"message"`
		}
		var flat string
		switch {
		case json.Unmarshal(v.Error, &nested) == nil && nested.Message != "":
			return nested.Message
		case json.Unmarshal(v.Error, &flat) == nil && flat != "":
			return flat
		case v.Message != "":
			return v.Message
		}
	}
	return strings.TrimSpace(string(raw))
}

// estimateUsage counts about four characters a token, plus a few tokens of chat template per
// message, for servers that report no usage.
func estimateUsage(msgs []Message, text string) Usage {
	in := int64(0)
	for _, m := range msgs {
		in += (int64(len(m.Content))+3)/4 + 4
	}
	return Usage{PromptTokens: in, CompletionTokens: (int64(len(text)) + 3) / 4, Estimated: true}
}
