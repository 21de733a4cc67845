package search

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ClientConfig configures the retrieval service client.
type ClientConfig struct {
	URL             string        // http://host:port of the service
	TopK            int           // passages per query
	Timeout         time.Duration // one search, retries included
	Retries         int           // retries of a failed request within Timeout
	Outage          time.Duration // how long an unreachable service is waited for
	BreakerFailures int           // consecutive failed searches that open the circuit breaker
}

// QueryError is a query the service refused (HTTP 400): the agent's fault, not the service's.
type QueryError struct{ Message string }

func (e *QueryError) Error() string { return "query rejected: " + e.Message }

// ErrBreakerOpen is returned once BreakerFailures searches in a row have failed: training on a
// dead search tool would teach the orchestrator that search never works.
var ErrBreakerOpen = errors.New("search: circuit breaker open")

// errUnreachable marks a failure to connect at all, which the outage tolerance waits out.
var errUnreachable = errors.New("service unreachable")

// Client calls POST /retrieve {"queries": [q], "topk": k}; it is safe for concurrent use.
type Client struct {
	cfg   ClientConfig
	http  *http.Client
	mu    sync.Mutex
	fails int
	sleep func(context.Context, time.Duration) error
}

// NewClient returns a client of the service at cfg.URL.
func NewClient(cfg ClientConfig) (*Client, error) {
	if !strings.HasPrefix(cfg.URL, "http://") && !strings.HasPrefix(cfg.URL, "https://") {
		return nil, fmt.Errorf("search: service URL %q must be http(s)://host:port", cfg.URL)
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	return &Client{cfg: cfg, http: &http.Client{}, sleep: sleepCtx}, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Search returns the service's top hits for a query. A refused query is a *QueryError; a
// service that stays unreachable past the outage tolerance, or fails every retry, is an error
// counted by the breaker; once the breaker is open every call returns ErrBreakerOpen.
func (c *Client) Search(ctx context.Context, query string) ([]Hit, error) {
	c.mu.Lock()
	open := c.fails >= c.cfg.BreakerFailures
	c.mu.Unlock()
	if open {
		return nil, fmt.Errorf("%w: %d searches in a row failed", ErrBreakerOpen, c.cfg.BreakerFailures)
	}
	hits, err := c.searchWithOutage(ctx, query)
	var qe *QueryError
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil:
		c.fails = 0
	case errors.As(err, &qe), ctx.Err() != nil:
	default:
		c.fails++
	}
	return hits, err
}

// searchWithOutage waits out an unreachable service, pausing 2 s doubling to 30 s, for at
// most the outage tolerance.
func (c *Client) searchWithOutage(ctx context.Context, query string) ([]Hit, error) {
	var outageEnd time.Time
	pause := 2 * time.Second
	for {
		hits, err := c.searchOnce(ctx, query)
		if !errors.Is(err, errUnreachable) {
			return hits, err
		}
		now := time.Now()
		if outageEnd.IsZero() {
			outageEnd = now.Add(c.cfg.Outage)
		}
		if !now.Before(outageEnd) {
			return nil, err
		}
		if err := c.sleep(ctx, min(pause, outageEnd.Sub(now))); err != nil {
			return nil, err
		}
		pause = min(2*pause, 30*time.Second)
	}
}

// searchOnce makes up to Retries+1 attempts within Timeout, pausing 0.25 s doubling between.
func (c *Client) searchOnce(ctx context.Context, query string) ([]Hit, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	body, err := json.Marshal(map[string]any{"queries": []string{query}, "topk": c.cfg.TopK})
	if err != nil {
		return nil, err
	}
	var last error
	for attempt := 0; attempt <= c.cfg.Retries; attempt++ {
		if attempt > 0 {
			if err := c.sleep(ctx, time.Duration(0.25*math.Pow(2, float64(attempt-1))*float64(time.Second))); err != nil {
				break
			}
		}
		var hits []Hit
		hits, last = c.post(ctx, body)
		var qe *QueryError
		if last == nil || errors.As(last, &qe) {
			return hits, last
		}
	}
	return nil, fmt.Errorf("search %s/retrieve: %w", c.cfg.URL, last)
}

func (c *Client) post(ctx context.Context, body []byte) ([]Hit, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL+"/retrieve", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() == nil && isConnRefused(err) {
			return nil, fmt.Errorf("%w: %v", errUnreachable, err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusBadRequest:
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		if e.Error == "" {
			e.Error = "query rejected"
		}
		return nil, &QueryError{Message: e.Error}
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, raw)
	}
	var reply struct {
		Result [][]struct {
			ID    json.RawMessage `json:"id"`
			Title *string         `json:"title"`
			Text  *string         `json:"text"`
			Score *float64        `json:"score"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil || len(reply.Result) != 1 {
		return nil, fmt.Errorf("malformed reply (want one result list per query): %.200s", raw)
	}
	hits := make([]Hit, 0, len(reply.Result[0]))
	for i, h := range reply.Result[0] {
		if h.Title == nil || h.Text == nil || h.Score == nil || len(h.ID) == 0 {
			return nil, fmt.Errorf("malformed reply: hit %d lacks id, title, text or score", i+1)
		}
		if i > 0 && *h.Score > hits[i-1].Score {
			return nil, fmt.Errorf("malformed reply: hits are not ranked by score")
		}
		hits = append(hits, Hit{ID: strings.Trim(string(h.ID), `"`), Title: *h.Title, Text: *h.Text, Score: *h.Score})
	}
	return hits, nil
}

func isConnRefused(err error) bool {
	var dns *net.DNSError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &dns)
}
