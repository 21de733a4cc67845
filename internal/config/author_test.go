package config

import (
	"strings"
	"testing"
)

// TestAuthorEndpoint: the model author's endpoint settings take executor.openai's values while
// unset, and unset they are in neither the configuration's YAML nor its hash (configurations
// written before the keys keep their sha256); set, they replace them; the backoff range is
// checked on the resolved values.
func TestAuthorEndpoint(t *testing.T) {
	def, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	o := def.Executor.OpenAI
	want := AuthorEndpoint{MaxConcurrency: o.MaxConcurrency, TimeoutSeconds: float64(def.Author.TimeoutSeconds), OutageSeconds: o.OutageSeconds,
		BackoffSeconds: o.BackoffSeconds, BackoffMaxSeconds: o.BackoffMaxSeconds, SendSeed: o.SendSeed, DisableThinking: o.DisableThinking}
	if got := def.AuthorEndpoint(); got != want || !want.SendSeed || !want.DisableThinking || want.MaxConcurrency != 64 {
		t.Errorf("default author endpoint %+v, want %+v", got, want)
	}
	author := func(c *Config) string {
		_, after, _ := strings.Cut(string(c.canonicalJSON()), `"author":`)
		block, _, _ := strings.Cut(after, "}")
		return block
	}
	for _, key := range []string{"max_concurrency", "outage_seconds", "backoff_seconds", "backoff_max_seconds", "send_seed", "disable_thinking"} {
		if strings.Contains(author(def), key) {
			t.Errorf("the default configuration's hash covers author.%s: %s", key, author(def))
		}
	}
	c, err := Load(write(t, "author:\n  max_concurrency: 4\n  outage_seconds: 60\n  backoff_seconds: 0.5\n  backoff_max_seconds: 4\n  send_seed: false\n  disable_thinking: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.AuthorEndpoint(); got != (AuthorEndpoint{4, 900, 60, 0.5, 4, false, false}) {
		t.Errorf("set author endpoint %+v", got)
	}
	if c.SHA256() == def.SHA256() {
		t.Error("set author endpoint keys leave the hash unchanged")
	}
	loadErr(t, "author:\n  max_concurrency: -1\n", "author.max_concurrency", "must be >= 0")
	loadErr(t, "author:\n  backoff_seconds: 60\n", "author.backoff_max_seconds", "must be >= the author's backoff_seconds (60), got 30")
	loadErr(t, "author:\n  outage_seconds: -1\n", "author.outage_seconds")
	loadErr(t, "author:\n  disable_thinking: \"false\"\n", "disable_thinking")
}
