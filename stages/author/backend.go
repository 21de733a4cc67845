package author

import (
	"context"
	"fmt"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/schema"
)

// Window is what the author gets for one author window: the family, its skills (every status:
// the author must write something new and must not repeat retired ideas), statistics of the
// family's natural episodes, and the selected evidence.
type Window struct {
	Step     int
	Family   string
	TaskType string
	Seed     uint64 // derived from (run seed, step, family)
	Library  []skills.Skill
	Stats    FamilyStats
	Examples []Example
}

// Example is one evidence episode as the author is shown it.
type Example struct {
	Episode schema.EpisodeRow
	Task    string   // the task prompt
	Success bool     // reward >= success_threshold
	Actions []string // the episode's actions (canonical JSON), at most maxActions
	Nodes   []Node   // the team at the end: each node's last execution
}

// Node is one agent of an example's final team.
type Node struct {
	ID, Role      string
	Skills        []string
	Status        string
	FailureKind   string
	AnswerPresent bool
	Output        string
}

// Proposal is an author's answer. Record nil means "no proposal" (the model's JSON null).
// Raw is the model's reply, kept in the proposals log, also when the reply is rejected.
type Proposal struct {
	Record              *skills.Record
	Raw                 string
	TokensIn, TokensOut int64
}

// Author writes at most one candidate per window.
type Author interface {
	// Backend names the implementation (the proposals table's backend column).
	Backend() string
	// Propose returns the author's proposal. An error (a failed call, or an output that
	// breaks the output rules) wastes only this window; the Proposal returned with it still
	// carries whatever raw text and usage there was.
	Propose(ctx context.Context, w Window) (Proposal, error)
}

// Concurrent is an Author that can answer several windows at once: the stage asks it at most
// MaxConcurrency windows at a time. An Author without the method answers one window at a time.
// Either way the stage judges and writes the answers in window order, so the outputs do not
// depend on the order the answers arrive in.
type Concurrent interface {
	Author
	MaxConcurrency() int
}

// concurrency is how many windows a asks at once.
func concurrency(a Author) int {
	if c, ok := a.(Concurrent); ok {
		return max(1, c.MaxConcurrency())
	}
	return 1
}

// New returns the configured author backend.
func New(cfg *config.Config) (Author, error) {
	switch cfg.Author.Backend {
	case "sim":
		return newSimAuthor(cfg), nil
	case "openai":
		return newModelAuthor(cfg)
	}
	return nil, fmt.Errorf("unknown author backend %q", cfg.Author.Backend)
}
