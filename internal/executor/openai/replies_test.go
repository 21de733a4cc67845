package openai

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/executor"
)

// A reply whose choice has its content but no finish_reason (left out, or null, as some
// OpenAI-compatible servers write it) is a reply, not cut at max_tokens; a choice with neither
// is still malformed.
func TestReplyWithoutFinishReasonIsAccepted(t *testing.T) {
	for _, body := range []string{
		`{"choices":[{"index":0,"message":{"role":"assistant","content":"Answer: 42"}}],"usage":{"prompt_tokens":9,"completion_tokens":3}}`,
		`{"choices":[{"index":0,"message":{"role":"assistant","content":"Answer: 42"},"finish_reason":null}],"usage":{"prompt_tokens":9,"completion_tokens":3}}`,
	} {
		f := newFake(t, func(int64, wireRequest) reply { return reply{200, body, 0} })
		resp, err := chat(testClient(t, f.URL, nil))
		if err != nil || resp.Text != "Answer: 42" || resp.FinishReason != "" || resp.Truncated() || resp.Usage.PromptTokens != 9 {
			t.Fatalf("%s: %+v %v", body, resp, err)
		}
	}
	f := newFake(t, func(int64, wireRequest) reply {
		return reply{200, `{"choices":[{"index":0,"message":{"role":"assistant"}}]}`, 0}
	})
	if _, err := chat(testClient(t, f.URL, nil)); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "no choice with a finish_reason or a message content") {
		t.Fatalf("neither content nor finish_reason: %v", err)
	}
}

// An agent whose server omits finish_reason runs: its output is the content, a success.
func TestExecutionWithoutFinishReason(t *testing.T) {
	task := fixture(t, "hotpotqa/f1")
	f := newFake(t, func(int64, wireRequest) reply {
		return reply{200, `{"choices":[{"index":0,"message":{"role":"assistant","content":"Answer: Paris"}}],"usage":{"prompt_tokens":100,"completion_tokens":7}}`, 0}
	})
	sess, err := newExecutor(t, f.URL, nil).Begin(context.Background(), task, 1)
	if err != nil {
		t.Fatal(err)
	}
	req := executor.Request{NodeID: "n0", Seed: 5, Role: role(t, task, "solver"), Prompt: "Role: x\n\nTask:\ny\n\nPerform your role using the task. Return your result."}
	res, err := sess.Execute(context.Background(), req)
	if err != nil || res.Status != "success" || res.Output != "Answer: Paris" || !res.AnswerPresent {
		t.Fatalf("%+v %v", res, err)
	}
}

// A call whose context ends while it retries a refused connection says both: the context's
// error (errors.Is) and the last attempt's cause.
func TestContextEndKeepsTheLastCause(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	c, err := NewClient(ClientConfig{BaseURL: url + "/v1", Model: "m", APIKey: secret, MaxConcurrency: 1, Timeout: time.Second,
		Outage: time.Minute, BackoffInitial: 50 * time.Millisecond, BackoffMax: 50 * time.Millisecond, BaseURLSetting: "x.base_url"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = c.Chat(ctx, ChatRequest{Messages: []Message{{Role: "user", Content: "hi"}}, MaxTokens: 5})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "chat completion: ") {
		t.Fatalf("got %v, want the deadline and the refused connection", err)
	}
}
