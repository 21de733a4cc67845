package scoring_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/executor/openai"
)

// testClient is a client of the fake engine at url for model, with retries fast enough for tests.
func testClient(t testing.TB, url, model string) *openai.Client {
	t.Helper()
	c, err := openai.NewClient(openai.ClientConfig{BaseURL: url, Model: model, MaxConcurrency: 2, Timeout: 10 * time.Second,
		Outage: 10 * time.Second, BackoffInitial: time.Millisecond, BackoffMax: 10 * time.Millisecond, MaxAttempts: 5,
		BaseURLSetting: "scoring.base_url", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
