package openai

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/cpuslot"
)

// replicaClient is a client of the fake servers' endpoints, cap calls in flight on each; a
// failed endpoint backs off for a minute, far longer than any test takes.
func replicaClient(t *testing.T, cap int, urls ...string) *Client {
	t.Helper()
	var replicas []string
	for _, u := range urls[1:] {
		replicas = append(replicas, u+"/v1")
	}
	c, err := NewClient(ClientConfig{BaseURL: urls[0] + "/v1", Replicas: replicas, Model: "m", MaxConcurrency: cap,
		Timeout: 5 * time.Second, Outage: 5 * time.Minute, BackoffInitial: time.Minute, BackoffMax: time.Minute,
		BaseURLSetting: "executor.openai.base_url", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestReplicasShareTheLoadUnderEachCap: 24 calls held open at once on two replicas with a cap
// of 8 each run 8 on each and wait for the rest, never more than the cap on either.
func TestReplicasShareTheLoadUnderEachCap(t *testing.T) {
	gate := make(chan struct{})
	slow := func(int64, wireRequest) reply { <-gate; return reply{200, completion("ok", "stop", true), 0} }
	a, b := newFake(t, slow), newFake(t, slow)
	c := replicaClient(t, 8, a.URL, b.URL)
	var wg sync.WaitGroup
	for range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := chat(c); err != nil {
				t.Error(err)
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for a.inFlight.Load()+b.inFlight.Load() < 16 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if a.inFlight.Load() != 8 || b.inFlight.Load() != 8 {
		t.Errorf("in flight %d and %d, want 8 on each replica", a.inFlight.Load(), b.inFlight.Load())
	}
	close(gate)
	wg.Wait()
	if a.maxSeen.Load() > 8 || b.maxSeen.Load() > 8 || a.calls.Load()+b.calls.Load() != 24 {
		t.Fatalf("most in flight %d and %d with a cap of 8; %d + %d calls", a.maxSeen.Load(), b.maxSeen.Load(), a.calls.Load(), b.calls.Load())
	}
}

// TestAFailingReplicaBacksOffAlone: a replica answering 503 is kept off for its pause, and the
// retry goes at once to the other, which answers every call.
func TestAFailingReplicaBacksOffAlone(t *testing.T) {
	down := newFake(t, func(int64, wireRequest) reply { return reply{503, `{"error":{"message":"busy"}}`, 0} })
	up := newFake(t, func(int64, wireRequest) reply { return reply{200, completion("ok", "stop", true), 0} })
	c := replicaClient(t, 4, down.URL, up.URL)
	for range 6 {
		if resp, err := chat(c); err != nil || resp.Text != "ok" {
			t.Fatalf("%+v %v", resp, err)
		}
	}
	// The first call tries the first-listed replica, fails, and retries on the other without
	// a pause (a pause would be a minute); the next calls find the failed one backing off and
	// skip it.
	if down.calls.Load() != 1 || up.calls.Load() != 6 {
		t.Fatalf("the failing replica got %d calls, the healthy one %d", down.calls.Load(), up.calls.Load())
	}
}

// TestAWaitingRequestHoldsNoCPUSlot: with one CPU slot, an episode whose request waits on a slow
// server gives its slot back, so another episode's CPU work proceeds meanwhile.
func TestAWaitingRequestHoldsNoCPUSlot(t *testing.T) {
	gate := make(chan struct{})
	f := newFake(t, func(int64, wireRequest) reply { <-gate; return reply{200, completion("ok", "stop", true), 0} })
	c := replicaClient(t, 4, f.URL)
	pool := cpuslot.NewPool(1)
	ctx, release := pool.Hold(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Chat(ctx, ChatRequest{Messages: []Message{{Role: "user", Content: "q"}}, MaxTokens: 5})
		release()
		done <- err
	}()
	for f.inFlight.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	_, other := pool.Hold(context.Background()) // blocks for ever if the waiting request kept the slot
	other()
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestReplicaURLsAreChecked: a replica that is not an http(s) URL, or one listed twice, is
// refused when the client is made.
func TestReplicaURLsAreChecked(t *testing.T) {
	for _, replicas := range [][]string{{"127.0.0.1:8001/v1"}, {"http://a/v1", "http://a/v1/"}, {"http://base/v1"}} {
		_, err := NewClient(ClientConfig{BaseURL: "http://base/v1", Replicas: replicas, Model: "m", MaxConcurrency: 1, Timeout: time.Second,
			BackoffInitial: time.Second, BackoffMax: time.Second, BaseURLSetting: "executor.openai.base_url"})
		if err == nil || !strings.Contains(err.Error(), "replica") && !strings.Contains(err.Error(), "twice") {
			t.Errorf("replicas %v: %v", replicas, err)
		}
	}
	c := replicaClient(t, 1, "http://a", "http://b")
	if got := strings.Join(c.Endpoints(), " "); got != "http://a/v1 http://b/v1" {
		t.Fatalf("endpoints %s", got)
	}
	if one, err := c.Only("http://b/v1/"); err != nil || len(one.Endpoints()) != 1 || one.BaseURL() != "http://b/v1" {
		t.Fatalf("Only: %v %v", one, err)
	}
	if _, err := c.Only("http://c/v1"); err == nil {
		t.Fatal("an unknown endpoint accepted")
	}
}

// TestFreedSlotsGoToTheHighestPriority: with one slot held, requests waiting with priorities
// 0, 5, 2 and 5 are served 5, 5 (in arrival order), 2, 0, whatever order they woke in.
func TestFreedSlotsGoToTheHighestPriority(t *testing.T) {
	gate := make(chan struct{})
	var mu sync.Mutex
	var served []string
	f := newFake(t, func(_ int64, req wireRequest) reply {
		if req.Messages[0].Content == "hold" {
			<-gate
		}
		mu.Lock()
		served = append(served, req.Messages[0].Content)
		mu.Unlock()
		return reply{200, completion("ok", "stop", true), 0}
	})
	c := replicaClient(t, 1, f.URL)
	ask := func(p int, content string) chan error {
		done := make(chan error, 1)
		go func() {
			_, err := c.Chat(WithPriority(context.Background(), p), ChatRequest{Messages: []Message{{Role: "user", Content: content}}, MaxTokens: 5})
			done <- err
		}()
		return done
	}
	held := ask(0, "hold")
	for f.inFlight.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	var waits []chan error
	for i, p := range []int{0, 5, 2, 5} {
		waits = append(waits, ask(p, fmt.Sprintf("p%d-%d", p, i)))
		for {
			c.mu.Lock()
			n := len(c.waiters)
			c.mu.Unlock()
			if n == i+1 {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	close(gate)
	for _, w := range append(waits, held) {
		if err := <-w; err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(served, " "); got != "hold p5-1 p5-3 p2-2 p0-0" {
		t.Fatalf("served %s", got)
	}
}

// TestASandboxRunHoldsNoCPUSlot: with one CPU slot, an agent's python call gives the slot back
// while its program waits and runs, as a waiting request does, so another holder's CPU work
// proceeds meanwhile: the other Hold returns before the call ends (the call cannot end while
// the other holds the only slot, so the order is certain).
func TestASandboxRunHoldsNoCPUSlot(t *testing.T) {
	sb := testSandbox(t)
	sess, err := newExecutor(t, "http://127.0.0.1:1", sb).Begin(context.Background(), fixture(t, "aime_2026/f5"), 1)
	if err != nil {
		t.Fatal(err)
	}
	pool := cpuslot.NewPool(1)
	ctx, release := pool.Hold(context.Background())
	done := make(chan struct{})
	go func() {
		if run, err := sess.(*Session).runTool(ctx, toolCall{tool: "python", argument: "print(6 * 7)"}); err != nil || run.call.Result != "42\n" {
			t.Errorf("python call %+v %v", run, err)
		}
		close(done)
		release()
	}()
	_, other := pool.Hold(context.Background()) // returns only after the call if its run kept the slot
	select {
	case <-done:
		t.Fatal("the python call ended before another holder got the only CPU slot: its sandbox run held the slot")
	default:
	}
	other()
	<-done
}
