package openai

import (
	"time"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor/search"
	"github.com/evosteer/evosteer-go/internal/sandbox"
)

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// NewSandbox returns the python sandbox of tools.python.
func NewSandbox(p config.PythonTool) (*sandbox.Sandbox, error) {
	return sandbox.New(sandbox.Config{Interpreter: p.Interpreter, Concurrency: p.Concurrency, MemoryTotal: p.MemoryTotalMB << 20, Limits: sandbox.Limits{
		CPU: time.Duration(p.CPUSeconds) * time.Second, Wall: time.Duration(p.WallSeconds) * time.Second,
		Memory: p.MemoryMB << 20, FileSize: p.FileMB << 20, OpenFiles: p.OpenFiles, Processes: p.Processes}})
}

// FromConfig builds the executor of a configuration: the API key from the environment variable
// executor.openai.api_key_env, the python sandbox, and the retrieval client when tools.search.url
// is set.
func FromConfig(c *config.Config) (*Executor, error) {
	o := c.Executor.OpenAI
	key, err := APIKeyFromEnv(o.APIKeyEnv)
	if err != nil {
		return nil, err
	}
	client, err := NewClient(ClientConfig{BaseURL: o.BaseURL, Replicas: o.Replicas, Model: o.Model, APIKey: key, MaxConcurrency: o.MaxConcurrency,
		Timeout: seconds(o.TimeoutSeconds), Outage: seconds(o.OutageSeconds), BackoffInitial: seconds(o.BackoffSeconds),
		BackoffMax: seconds(o.BackoffMaxSeconds), DisableThinking: o.DisableThinking, BaseURLSetting: "executor.openai.base_url"})
	if err != nil {
		return nil, err
	}
	sb, err := NewSandbox(c.Tools.Python)
	if err != nil {
		return nil, err
	}
	s := c.Tools.Search
	var remote search.Searcher
	if s.URL != "" {
		if remote, err = search.NewClient(search.ClientConfig{URL: s.URL, TopK: s.TopK, Timeout: seconds(s.TimeoutSeconds),
			Retries: s.Retries, Outage: seconds(s.OutageSeconds), BreakerFailures: s.BreakerFailures}); err != nil {
			return nil, err
		}
	}
	return New(Config{Temperature: c.Executor.Temperature, SendSeed: o.SendSeed, ContextWindow: o.ContextWindow,
		TurnOutputTokens: c.Tools.TurnOutputTokens, FinalOutputReserve: c.Tools.FinalOutputReserve,
		ResultChars: c.Tools.ResultChars, SearchTopK: s.TopK, PassageChars: s.PassageChars,
		SearchReserve: seconds(s.TimeoutSeconds) + 5*time.Second, MeasureWall: !o.FixedWallClock}, client, sb, remote)
}
