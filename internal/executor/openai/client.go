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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/evosteer/evosteer-go/internal/cpuslot"
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
	FinishReason string // "stop", "length", ...; "" where the server sent none with the content
	StopReason   string // the stop string that ended the text, where the server says (vLLM)
	Usage        Usage
}

// Truncated reports a reply cut at max_tokens.
func (r ChatResponse) Truncated() bool { return r.FinishReason == "length" }

// ClientConfig configures a Client.
type ClientConfig struct {
	BaseURL         string        // e.g. http://127.0.0.1:8000/v1; /chat/completions is appended
	Replicas        []string      // more base URLs serving the same model, balanced with BaseURL
	Model           string        // the served model name
	APIKey          string        // sent as a bearer token when set; never logged
	MaxConcurrency  int           // calls in flight at once on each endpoint, over every caller of the client
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

// Client calls a Chat Completions endpoint, or several replicas of one, each request on the
// endpoint with the fewest requests in flight among those not backing off; it is safe for
// concurrent use. A caller that holds a CPU slot (internal/cpuslot) gives it back while its
// request waits for an endpoint, on the server or in a backoff.
type Client struct {
	cfg       ClientConfig
	endpoints []*endpoint // BaseURL first, then the replicas
	http      *http.Client
	log       *slog.Logger

	mu      sync.Mutex  // guards the endpoints' counts and backoffs, and the waiters
	waiters []*waiter   // requests waiting for a slot, in arrival order
	arrived uint64      // waiters so far
	timer   *time.Timer // dispatches the waiters when the first backoff ends; nil when none is set
}

// waiter is a request waiting for an endpoint's slot: a freed slot is handed to the waiter of
// highest priority, then the earliest.
type waiter struct {
	priority int
	arrival  uint64
	granted  chan *endpoint // receives the endpoint whose slot it was given (buffered)
}

func (w *waiter) before(o *waiter) bool {
	return w.priority > o.priority || w.priority == o.priority && w.arrival < o.arrival
}

type priorityKey struct{}

// WithPriority gives the requests made under ctx priority p for a free slot (default 0):
// an episode gives each call the number of decisions it has made, so that the episodes in
// progress finish first and a long episode is not queued behind every new one.
func WithPriority(ctx context.Context, p int) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// endpoint is one base URL with its own cap of requests in flight and its own backoff.
type endpoint struct {
	base     string // without its trailing slash
	inFlight int
	until    time.Time // no new request before this (a transient failure's pause)
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
	endpoints := []*endpoint{{base: strings.TrimRight(cfg.BaseURL, "/")}}
	for _, r := range cfg.Replicas {
		if !strings.HasPrefix(r, "http://") && !strings.HasPrefix(r, "https://") {
			return nil, fmt.Errorf("openai: replica URL %q must start with http:// or https://", r)
		}
		e := &endpoint{base: strings.TrimRight(r, "/")}
		if slices.ContainsFunc(endpoints, func(x *endpoint) bool { return x.base == e.base }) {
			return nil, fmt.Errorf("openai: the endpoint %q is listed twice", r)
		}
		endpoints = append(endpoints, e)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 2*cfg.MaxConcurrency*len(endpoints), cfg.MaxConcurrency
	// A redirect would re-send the prompt, and to another port the Authorization header, to a
	// server nobody configured: it is an error naming where it pointed.
	noRedirect := func(req *http.Request, _ []*http.Request) error {
		return fmt.Errorf("the server redirected to %s: %w (set %s to the endpoint itself)", req.URL.Redacted(), ErrRedirect, cfg.BaseURLSetting)
	}
	return &Client{cfg: cfg, endpoints: endpoints, http: &http.Client{Transport: tr, CheckRedirect: noRedirect}, log: log}, nil
}

// BaseURL is the first endpoint's base URL, without its trailing slash.
func (c *Client) BaseURL() string { return c.endpoints[0].base }

// Endpoints are the base URLs of every endpoint, BaseURL first.
func (c *Client) Endpoints() []string {
	out := make([]string, len(c.endpoints))
	for i, e := range c.endpoints {
		out[i] = e.base
	}
	return out
}

// Only is a client of the one endpoint base (one of Endpoints), for a check of each replica;
// it shares nothing with c but the configuration and the HTTP connections.
func (c *Client) Only(base string) (*Client, error) {
	i := slices.Index(c.Endpoints(), strings.TrimRight(base, "/"))
	if i < 0 {
		return nil, fmt.Errorf("openai: %s is not an endpoint of this client", base)
	}
	return &Client{cfg: c.cfg, endpoints: []*endpoint{{base: c.endpoints[i].base}}, http: c.http, log: c.log}, nil
}

// acquire waits for an endpoint with a free slot, preferring those not backing off, and among
// them the one with the fewest requests in flight (the first listed on a tie). While requests
// wait, each freed slot is handed to the first of them in priority order (WithPriority), then
// in order of arrival.
func (c *Client) acquire(ctx context.Context) (*endpoint, error) {
	priority, _ := ctx.Value(priorityKey{}).(int)
	c.mu.Lock()
	if e := c.free(); e != nil && !slices.ContainsFunc(c.waiters, func(w *waiter) bool { return w.priority >= priority }) {
		e.inFlight++
		c.mu.Unlock()
		return e, nil
	}
	c.arrived++
	me := &waiter{priority: priority, arrival: c.arrived, granted: make(chan *endpoint, 1)}
	c.waiters = append(c.waiters, me)
	c.dispatch()
	c.mu.Unlock()
	select {
	case e := <-me.granted:
		return e, nil
	case <-ctx.Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		if i := slices.Index(c.waiters, me); i >= 0 {
			c.waiters = slices.Delete(c.waiters, i, i+1)
		} else { // granted as it gave up: the slot goes to the next
			e := <-me.granted
			e.inFlight--
			c.dispatch()
		}
		return nil, ctx.Err()
	}
}

// free is the endpoint a new request goes to now (nil: none has a free slot, or every one that
// has is backing off). Call with mu held.
func (c *Client) free() *endpoint {
	now := time.Now()
	var pick *endpoint
	for _, e := range c.endpoints {
		if e.inFlight < c.cfg.MaxConcurrency && !e.until.After(now) && (pick == nil || e.inFlight < pick.inFlight) {
			pick = e
		}
	}
	return pick
}

// dispatch hands free slots to the waiters in order, and when slots are free but backing off,
// sets the timer that dispatches again when the first backoff ends. Call with mu held.
func (c *Client) dispatch() {
	for len(c.waiters) > 0 {
		e := c.free()
		if e == nil {
			break
		}
		first := 0
		for i, w := range c.waiters {
			if w.before(c.waiters[first]) {
				first = i
			}
		}
		w := c.waiters[first]
		c.waiters = slices.Delete(c.waiters, first, first+1)
		e.inFlight++
		w.granted <- e
	}
	if len(c.waiters) == 0 {
		return
	}
	var soonest time.Time
	for _, e := range c.endpoints {
		if e.inFlight < c.cfg.MaxConcurrency && e.until.After(time.Now()) && (soonest.IsZero() || e.until.Before(soonest)) {
			soonest = e.until
		}
	}
	if !soonest.IsZero() && c.timer == nil {
		c.timer = time.AfterFunc(time.Until(soonest), func() {
			c.mu.Lock()
			c.timer = nil
			c.dispatch()
			c.mu.Unlock()
		})
	}
}

// release frees e's slot; a transient failure keeps new requests off e for pause.
func (c *Client) release(e *endpoint, pause time.Duration) {
	c.mu.Lock()
	e.inFlight--
	if pause > 0 {
		e.until = time.Now().Add(pause)
	}
	c.dispatch()
	c.mu.Unlock()
}

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
// concurrency slots, the per-attempt timeout, no redirect, the reply cap (MaxReplyBytes), the
// key redacted from every error and log line. Transient failures (connection errors, timeouts,
// 5xx, 408, 429) are retried with exponential backoff until they have lasted longer than the
// outage tolerance or MaxAttempts attempts have failed; other 4xx, redirects and replies decode
// refuses (a malformed reply: retrying cannot help) fail at once with the server's message. A
// call whose context ends while it retries fails with the context's error and the last
// attempt's cause (a refused connection, a 503). op names the call in errors and logs.
func (c *Client) Do(ctx context.Context, op, method, path string, body []byte, decode func(raw []byte) error) error {
	return c.DoBounded(ctx, op, method, path, body, ReplyBound{Bytes: MaxReplyBytes, Basis: "the client's cap on one reply"}, decode)
}

// ReplyBound is the most bytes one reply's body may hold and what that number was computed
// from, which the refusal of a larger reply names.
type ReplyBound struct {
	Bytes int64
	Basis string // e.g. "180,000 prompt positions × 256 bytes + 1 MiB"
}

// String is the bound in MiB, with its basis.
func (b ReplyBound) String() string {
	size := fmt.Sprintf("%.1f MiB (%d bytes)", float64(b.Bytes)/(1<<20), b.Bytes)
	if b.Bytes%(1<<20) == 0 {
		size = fmt.Sprintf("%d MiB", b.Bytes>>20)
	}
	return size + ", " + b.Basis
}

// DoBounded is Do with the reply bound b in place of MaxReplyBytes, for a request whose honest
// reply grows with what it asks (vLLM's prompt log-probabilities: an entry per prompt
// position): a longer reply, an endless one included, is refused as malformed once b.Bytes+1
// bytes have been read, naming the bound.
func (c *Client) DoBounded(ctx context.Context, op, method, path string, body []byte, b ReplyBound, decode func(raw []byte) error) error {
	if b.Bytes < 1 {
		return fmt.Errorf("%s: a reply bound of %d bytes", op, b.Bytes)
	}
	defer cpuslot.Wait(ctx)()
	var first time.Time
	var last error // the last attempt's failure, kept when the context ends the retries
	pause := c.cfg.BackoffInitial
	for attempt := 1; ; attempt++ {
		raw, err := c.attempt(ctx, method, path, body, pause, b)
		if err == nil {
			if err = decode(raw); err != nil && !errors.Is(err, ErrMalformed) {
				err = fmt.Errorf("%w: %w", ErrMalformed, err)
			}
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return c.ended(ctx, op, last)
		}
		last = err
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
		// The endpoint that failed backs off for pause; another that is up takes the retry at
		// once, and with every endpoint backing off acquire waits for the first to come back.
		wait := min(pause, c.cfg.Outage-now.Sub(first))
		if len(c.endpoints) == 1 {
			c.log.Warn(op+" failed; retrying", "attempt", attempt, "pause", wait, "error", c.redact(err.Error()))
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return c.ended(ctx, op, last)
			}
		} else {
			c.log.Warn(op+" failed; retrying on the endpoint with the fewest requests in flight", "attempt", attempt, "endpoint pause", wait, "error", c.redact(err.Error()))
		}
		pause = min(2*pause, c.cfg.BackoffMax)
	}
}

// ended is the error of a call whose context ended: the context's error (for errors.Is), and
// the last attempt's failure where one failed before, so that a preflight cut by its deadline
// says "connection refused" and not only "context deadline exceeded".
func (c *Client) ended(ctx context.Context, op string, last error) error {
	if last == nil {
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	return fmt.Errorf("%s: %w; the last attempt: %s", op, ctx.Err(), c.redact(last.Error()))
}

// attemptLimit names ClientConfig.MaxAttempts in an error.
func attemptLimit(n int) string {
	if n == 0 {
		return "unlimited"
	}
	return fmt.Sprint(n)
}

// attempt is one HTTP exchange on the endpoint acquire picks, holding its slot for the
// exchange only; it returns a 2xx reply's body. A transient failure keeps new requests off the
// endpoint for pause (a single endpoint's pause is Do's own wait).
func (c *Client) attempt(ctx context.Context, method, path string, body []byte, pause time.Duration, bound ReplyBound) (raw []byte, err error) {
	e, err := c.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		var he *HTTPError
		failed := err != nil && ctx.Err() == nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrRedirect) && (!errors.As(err, &he) || he.transient())
		if !failed || len(c.endpoints) == 1 {
			pause = 0
		}
		c.release(e, pause)
	}()
	url := e.base + path
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
	raw, err = readReply(hresp.Body, hresp.ContentLength, bound.Bytes+1)
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > bound.Bytes {
		return nil, fmt.Errorf("%w: the reply is larger than %s (HTTP %d); refusing it", ErrMalformed, bound, hresp.StatusCode)
	}
	// The body is redacted before it is cut: cut first, a key echoed across the cut would keep
	// its head, which no later redaction of the whole key finds.
	if hresp.StatusCode < 200 || hresp.StatusCode > 299 {
		return nil, &HTTPError{Status: hresp.StatusCode, Message: redact.Cut(serverMessage(raw), c.cfg.APIKey, errorBodyChars)}
	}
	return raw, nil
}

// readReply reads at most limit bytes of body into one buffer of the size the reply announces
// (Content-Length, size; -1 when unknown), not grown by doubling from 512 bytes as io.ReadAll's
// is: a vLLM scoring reply is megabytes. A reply longer than it announced grows the buffer.
func readReply(body io.Reader, size, limit int64) ([]byte, error) {
	if size < 0 || size >= limit {
		return io.ReadAll(io.LimitReader(body, limit))
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	_, err := buf.ReadFrom(io.LimitReader(body, limit))
	return buf.Bytes(), err
}

// decodeChat reads a Chat Completions reply.
func (c *Client) decodeChat(raw []byte) (ChatResponse, error) {
	var wr wireResponse
	if err := json.Unmarshal(raw, &wr); err != nil {
		return ChatResponse{}, fmt.Errorf("%w: %v: %q", ErrMalformed, err, redact.Cut(string(raw), c.cfg.APIKey, malformedBodyChars))
	}
	// Some OpenAI-compatible servers omit finish_reason (or send null): such a choice is a reply
	// when it has its content, with FinishReason "" (not cut at max_tokens, as far as anyone
	// can tell); a choice with neither is not one.
	if len(wr.Choices) == 0 || wr.Choices[0].FinishReason == nil && wr.Choices[0].Message.Content == nil {
		return ChatResponse{}, fmt.Errorf("%w: no choice with a finish_reason or a message content: %q", ErrMalformed, redact.Cut(string(raw), c.cfg.APIKey, malformedBodyChars))
	}
	ch := wr.Choices[0]
	// A server may echo the request's Authorization header: nothing of the key reaches a run
	// file or the terminal, in a success as in an error.
	var resp ChatResponse
	if ch.FinishReason != nil {
		resp.FinishReason = c.redact(*ch.FinishReason)
	}
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
