package search

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestFormatCutsPassagesAndTheWhole(t *testing.T) {
	hits := []Hit{{Title: "A", Text: strings.Repeat("x", 10)}, {Title: "B", Text: "short"}}
	if got := Format(hits, 5, 2000); got != "Doc 1(Title: \"A\") xxxxx ...\nDoc 2(Title: \"B\") short\n" {
		t.Fatalf("%q", got)
	}
	if got := Format(hits, 600, 10); got != "Doc 1(Titl\n[... 43 characters omitted ...]" {
		t.Fatalf("%q", got)
	}
}

const prompt = "Answer the question using the passages. Give a short answer only.\nQuestion: Where was Anna born?\nPassages:\n" +
	"[Blue Door] The Blue Door is a painting by Anna Marchetti.\n[Anna Marchetti] Anna Marchetti was a painter born in Paris.\n" +
	"[Green Field] A landscape.\n[Thaïs (opera)] Thaïs is an opera by Massenet."

func TestLocalBM25OverShippedPassages(t *testing.T) {
	ps := ParsePassages(prompt)
	if len(ps) != 4 || ps[3].Title != "Thaïs (opera)" || ps[1].Text != "Anna Marchetti was a painter born in Paris." {
		t.Fatalf("%+v", ps)
	}
	l := NewLocal(ps, 3)
	hits, _ := l.Search(context.Background(), "Anna Marchetti born")
	if len(hits) != 2 || hits[0].Title != "Anna Marchetti" || hits[1].Title != "Blue Door" || hits[0].Score <= hits[1].Score {
		t.Fatalf("%+v", hits)
	}
	if hits, _ := l.Search(context.Background(), "thaïs"); len(hits) != 1 || hits[0].ID != "3" {
		t.Fatalf("%+v", hits)
	}
	if hits, _ := l.Search(context.Background(), "zebra"); len(hits) != 0 {
		t.Fatalf("%+v", hits)
	}
	if ParsePassages("Answer the question.\nQuestion: x") != nil {
		t.Fatal("passages without a Passages block")
	}
}

// service answers /retrieve with handler's status and body and counts the requests.
func service(t *testing.T, handler func(n int64, q string) (int, string)) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Queries []string `json:"queries"`
			TopK    int      `json:"topk"`
		}
		if r.URL.Path != "/retrieve" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Queries) != 1 || req.TopK != 3 {
			http.Error(w, "bad request shape", http.StatusTeapot)
			return
		}
		code, body := handler(calls.Add(1), req.Queries[0])
		w.WriteHeader(code)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func newTestClient(t *testing.T, url string, breaker int) *Client {
	c, err := NewClient(ClientConfig{URL: url, TopK: 3, Timeout: 5 * time.Second, Retries: 3, Outage: time.Second, BreakerFailures: breaker})
	if err != nil {
		t.Fatal(err)
	}
	c.sleep = func(ctx context.Context, d time.Duration) error { return ctx.Err() } // no real waiting
	return c
}

const okBody = `{"result": [[{"id": "7", "title": "Paris", "text": "Paris is the capital.", "score": 0.9}, {"id": 8, "title": "France", "text": "France.", "score": 0.5}]]}`

func TestClientRetriesServerErrorsAndParsesHits(t *testing.T) {
	srv, calls := service(t, func(n int64, q string) (int, string) {
		if n < 3 {
			return 503, "busy"
		}
		return 200, okBody
	})
	hits, err := newTestClient(t, srv.URL, 20).Search(context.Background(), "capital of france")
	if err != nil || len(hits) != 2 || hits[1].ID != "8" || hits[0].Title != "Paris" || calls.Load() != 3 {
		t.Fatalf("%+v %v (calls %d)", hits, err, calls.Load())
	}
}

func TestClientQueryErrorIsNotRetried(t *testing.T) {
	srv, calls := service(t, func(int64, string) (int, string) { return 400, `{"error": "query too long"}` })
	_, err := newTestClient(t, srv.URL, 20).Search(context.Background(), "q")
	var qe *QueryError
	if !errors.As(err, &qe) || qe.Message != "query too long" || calls.Load() != 1 {
		t.Fatalf("%v (calls %d)", err, calls.Load())
	}
}

func TestClientRejectsMalformedReplies(t *testing.T) {
	for _, body := range []string{`not json`, `{"result": []}`, `{"result": [[{"id": "1", "title": "t"}]]}`,
		`{"result": [[{"id": "1", "title": "t", "text": "x", "score": 0.1}, {"id": "2", "title": "t", "text": "x", "score": 0.5}]]}`} {
		srv, _ := service(t, func(int64, string) (int, string) { return 200, body })
		if _, err := newTestClient(t, srv.URL, 20).Search(context.Background(), "q"); err == nil || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("%s: %v", body, err)
		}
	}
}

func TestBreakerOpensAfterConsecutiveFailures(t *testing.T) {
	srv, calls := service(t, func(int64, string) (int, string) { return 500, "down" })
	c := newTestClient(t, srv.URL, 3)
	for i := 0; i < 3; i++ {
		if _, err := c.Search(context.Background(), "q"); err == nil || errors.Is(err, ErrBreakerOpen) {
			t.Fatalf("search %d: %v", i, err)
		}
	}
	before := calls.Load()
	if _, err := c.Search(context.Background(), "q"); !errors.Is(err, ErrBreakerOpen) || calls.Load() != before {
		t.Fatalf("%v: the open breaker must not call the service", err)
	}
}

func TestUnreachableServiceIsWaitedOutThenFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // nothing listens: connections are refused
	c := newTestClient(t, url, 20)
	c.sleep = sleepCtx
	c.cfg.Outage = 300 * time.Millisecond
	began := time.Now()
	_, err = c.Search(context.Background(), "q")
	if err == nil || !errors.Is(err, errUnreachable) || time.Since(began) < c.cfg.Outage {
		t.Fatalf("%v after %v", err, time.Since(began))
	}
}
