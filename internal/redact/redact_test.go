package redact

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

const key = "sk-live-Zq8vN3pL0wXr7TgH2mKd"

// leak returns a fragment of key of MinFragment bytes found in s, or "".
func leak(s, key string) string {
	for j := 0; j+MinFragment <= len(key); j++ {
		if strings.Contains(s, key[j:j+MinFragment]) {
			return key[j : j+MinFragment]
		}
	}
	return ""
}

func TestKeyRedactsTheKeyAndItsFragments(t *testing.T) {
	cases := []struct{ in, want string }{
		{"no secret here", "no secret here"},
		{"Bearer " + key + " refused", "Bearer [redacted] refused"},
		{key + key, "[redacted]"}, // adjacent occurrences are one run
		{"head " + key[:12] + "|" + key[len(key)-9:], "head [redacted]|[redacted]"},
		{"short " + key[3:10] + " stays", "short " + key[3:10] + " stays"}, // 7 bytes: chance, not a leak
		{"mid " + key[5:13] + ".", "mid [redacted]."},
		// Two fragments side by side, the second repeating bytes of the first, are one run.
		{"x" + key[0:10] + key[6:20] + "y", "x[redacted]y"},
	}
	for _, c := range cases {
		if got := Key(c.in, key); got != c.want {
			t.Errorf("Key(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Key("abc and abcd", "abc"); got != "[redacted] and [redacted]d" {
		t.Errorf("short key: %q", got)
	}
	if got := Key("text", ""); got != "text" {
		t.Errorf("no key: %q", got)
	}
}

// The key at every offset of a body, cut at every length around it: no fragment of 8 bytes or
// more survives, and the text before the key is kept.
func TestCutNeverKeepsAPartOfTheKey(t *testing.T) {
	for _, n := range []int{1, 7, 8, 20, 64, 200} {
		for off := 0; off <= n+len(key); off++ {
			body := strings.Repeat("é", off/2) + strings.Repeat("x", off%2) + key + " tail"
			got := Cut(body, key, n)
			if l := leak(got, key); l != "" {
				t.Fatalf("n %d offset %d: %q keeps %q", n, off, got, l)
			}
			if !utf8.ValidString(got) || len(got) > n+len("...") {
				t.Fatalf("n %d offset %d: %q", n, off, got)
			}
		}
	}
	if got := Cut("short", key, 200); got != "short" {
		t.Errorf("uncut text changed: %q", got)
	}
	if got := Cut(strings.Repeat("a", 300), key, 200); got != strings.Repeat("a", 200)+"..." {
		t.Errorf("cut: %q", got)
	}
}

// A large body costs time in proportion to the cut, not to the body.
func TestCutReadsAPrefix(t *testing.T) {
	body := strings.Repeat("y", 64<<20) + key
	start := time.Now()
	if got := Cut(body, key, 500); len(got) != 503 {
		t.Fatalf("%d bytes", len(got))
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("took %v", d)
	}
}
