package rollout

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/episode"
	"github.com/evosteer/evosteer-go/schema"
)

// TestUnhealthyReasonsAreGroupedByCause: reasons that differ only in a duration or a count are
// one cause (an HTTP status is not such a number), on one line with its count; the line says how many causes there are when it lists
// only the most frequent; a server's control characters are escaped.
func TestUnhealthyReasonsAreGroupedByCause(t *testing.T) {
	var reasons []string
	for i := range 12 {
		reasons = append(reasons, fmt.Sprintf("begin episode: chat completion: the server failed for %s after %d attempts (outage tolerance 1m0s): HTTP 503: overloaded",
			(time.Minute+time.Duration(i)*1234567*time.Microsecond).Round(time.Millisecond), 17+i%3))
	}
	for range 3 {
		reasons = append(reasons, "episode did not stop")
	}
	for range 2 {
		reasons = append(reasons, "node n0: chat completion: HTTP 400: \x1b[2J\x1b[31mbad request\r\a")
	}
	for i := range 9 {
		reasons = append(reasons, "cause "+string(rune('a'+i)))
	}
	reasons = append(reasons, strings.Replace(reasons[0], "HTTP 503", "HTTP 429", 1))
	eps := make([]episode.Played, len(reasons))
	for i := range reasons {
		eps[i].Episode = schema.EpisodeRow{Healthy: false, UnhealthyReason: &reasons[i]}
	}
	err := checkHealth(eps, 0.5)
	if err == nil {
		t.Fatal("every episode unhealthy: want a failure")
	}
	msg := err.Error()
	if i := strings.IndexFunc(msg, func(r rune) bool { return r < 0x20 && r != '\n' }); i >= 0 {
		t.Errorf("raw control character %q in\n%s", msg[i], msg)
	}
	lines := strings.Split(msg, "\n")
	if !strings.Contains(lines[0], "27 of 27 episodes unhealthy") || !strings.Contains(lines[0], "13 causes, the 10 most frequent:") {
		t.Errorf("first line %q: want the count of causes and how many are listed", lines[0])
	}
	n := 0
	for _, l := range lines {
		if strings.Contains(l, "HTTP 503") {
			n++
			if !strings.HasPrefix(l, "  12 x begin episode: chat completion: the server failed for 1m0s after 17 attempts") {
				t.Errorf("grouped line %q: want the count and the first reason", l)
			}
		}
	}
	if n != 1 {
		t.Errorf("one cause on %d lines:\n%s", n, msg)
	}
	for _, want := range []string{"\n  3 x episode did not stop\n", `\x1b[2J\x1b[31mbad request\r\a`, "\n  and 3 more causes (3 episodes)",
		"\n  1 x begin episode: chat completion: the server failed for 1m0s after 17 attempts (outage tolerance 1m0s): HTTP 429: overloaded\n"} {
		if !strings.Contains(msg, want) {
			t.Errorf("want %q in\n%s", want, msg)
		}
	}
	if len(lines) != 1+10+1 {
		t.Errorf("%d lines, want a heading, 10 causes and the rest:\n%s", len(lines), msg)
	}
}
