package config

import "strings"

// executorTools checks the openai backend and the tools; the backend's URL and model are
// required only when it is selected.
func (k *checker) executorTools(c *Config) {
	o := c.Executor.OpenAI
	if c.Executor.Backend == "openai" {
		if !strings.HasPrefix(o.BaseURL, "http://") && !strings.HasPrefix(o.BaseURL, "https://") {
			k.fail("executor.openai.base_url", "must be an http:// or https:// URL with executor.backend openai, got %q", o.BaseURL)
		}
		if o.Model == "" {
			k.fail("executor.openai.model", "must name the served model with executor.backend openai")
		}
		if c.Executor.Temperature <= 0 {
			k.fail("executor.temperature", "must be > 0 with executor.backend openai, got %g", c.Executor.Temperature)
		}
	}
	k.intIn("executor.openai.max_concurrency", int64(o.MaxConcurrency), 1, 4096, "HTTP calls in flight at once, each holding a connection; the reference uses 64")
	k.positive("executor.openai.timeout_seconds", o.TimeoutSeconds)
	k.nonNegative("executor.openai.outage_seconds", o.OutageSeconds)
	k.positive("executor.openai.backoff_seconds", o.BackoffSeconds)
	if o.BackoffMaxSeconds < o.BackoffSeconds {
		k.fail("executor.openai.backoff_max_seconds", "must be >= backoff_seconds (%g), got %g", o.BackoffSeconds, o.BackoffMaxSeconds)
	}
	k.intMin("executor.openai.context_window", o.ContextWindow, 0)

	t := c.Tools
	k.intIn("tools.result_chars", int64(t.ResultChars), 1, 1_000_000, "characters of a tool result sent back into the prompt")
	k.intMin("tools.turn_output_tokens", t.TurnOutputTokens, 256)
	k.intMin("tools.final_output_reserve", t.FinalOutputReserve, 1)
	p := t.Python
	if p.Interpreter == "" {
		k.fail("tools.python.interpreter", "must name a python executable")
	}
	k.intMin("tools.python.cpu_seconds", int64(p.CPUSeconds), 1)
	k.intMin("tools.python.wall_seconds", int64(p.WallSeconds), 1)
	k.intMin("tools.python.memory_mb", p.MemoryMB, 64)
	k.intMin("tools.python.file_mb", p.FileMB, 1)
	k.intMin("tools.python.open_files", int64(p.OpenFiles), 16)
	k.intMin("tools.python.processes", int64(p.Processes), 1)
	k.intIn("tools.python.concurrency", int64(p.Concurrency), 1, 1024, "sandbox processes running at once")
	if p.MemoryTotalMB != 0 && p.MemoryTotalMB < p.MemoryMB {
		k.fail("tools.python.memory_total_mb", "must be 0 (half of the machine's memory) or at least memory_mb (%d), the limit of one program; got %d", p.MemoryMB, p.MemoryTotalMB)
	}
	s := t.Search
	if s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
		k.fail("tools.search.url", "must be empty (local passages) or an http(s):// URL, got %q", s.URL)
	}
	k.intIn("tools.search.top_k", int64(s.TopK), 1, 1000, "passages returned per search, all written into the prompt")
	k.intIn("tools.search.passage_chars", int64(s.PassageChars), 1, 1_000_000, "characters of one passage written into the prompt")
	k.positive("tools.search.timeout_seconds", s.TimeoutSeconds)
	k.intIn("tools.search.retries", int64(s.Retries), 0, 100, "retries of one search, the backoff doubling each time")
	k.nonNegative("tools.search.outage_seconds", s.OutageSeconds)
	k.intMin("tools.search.breaker_failures", int64(s.BreakerFailures), 1)
}
