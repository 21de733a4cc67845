package orchestra

import (
	"fmt"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
)

// Vector is a budget amount in every resource the episode ledger tracks (the reference's
// BudgetVector).
type Vector struct {
	InputTokens  int64
	OutputTokens int64
	ModelCalls   int64
	AgentTurns   int64
	ToolCalls    int64
	WallMS       int64
}

func (v Vector) add(o Vector) Vector {
	return Vector{v.InputTokens + o.InputTokens, v.OutputTokens + o.OutputTokens, v.ModelCalls + o.ModelCalls,
		v.AgentTurns + o.AgentTurns, v.ToolCalls + o.ToolCalls, v.WallMS + o.WallMS}
}

func (v Vector) sub(o Vector) Vector {
	return Vector{v.InputTokens - o.InputTokens, v.OutputTokens - o.OutputTokens, v.ModelCalls - o.ModelCalls,
		v.AgentTurns - o.AgentTurns, v.ToolCalls - o.ToolCalls, v.WallMS - o.WallMS}
}

// capAt limits every component of v to the same component of limit.
func (v Vector) capAt(limit Vector) Vector {
	return Vector{min(v.InputTokens, limit.InputTokens), min(v.OutputTokens, limit.OutputTokens),
		min(v.ModelCalls, limit.ModelCalls), min(v.AgentTurns, limit.AgentTurns),
		min(v.ToolCalls, limit.ToolCalls), min(v.WallMS, limit.WallMS)}
}

func (v Vector) fitsWithin(limit Vector) bool { return v.capAt(limit) == v }

// Tokens is the combined input+output token count.
func (v Vector) Tokens() int64 { return v.InputTokens + v.OutputTokens }

// value is the JSON object the controller sees.
func (v Vector) value() map[string]any {
	return map[string]any{
		"input_tokens": v.InputTokens, "output_tokens": v.OutputTokens, "model_calls": v.ModelCalls,
		"agent_turns": v.AgentTurns, "tool_calls": v.ToolCalls, "wall_time_milliseconds": v.WallMS,
	}
}

// Caps is the episode cap of a budget configuration (METHOD.md §2.6; the release's
// episode_budget = null): the token count caps input tokens, output tokens, model calls and their
// combined total alike; agent turns are 2·tokens+50, so only the other caps ever bind.
func Caps(b config.Budget) Vector {
	return Vector{InputTokens: b.Tokens, OutputTokens: b.Tokens, ModelCalls: b.Tokens,
		AgentTurns: 2*b.Tokens + 50, ToolCalls: b.ToolCalls, WallMS: b.WallSeconds * 1000}
}

// EnvelopeVector is what one execution of a role reserves: its whole envelope and one
// agent turn (every reference role envelope has agent_turns = 1).
func EnvelopeVector(e executor.Envelope) Vector {
	return Vector{InputTokens: e.InputTokens, OutputTokens: e.OutputTokens, ModelCalls: e.ModelCalls,
		AgentTurns: 1, ToolCalls: e.ToolCalls, WallMS: e.WallMS}
}

// usageVector is an execution's reported usage as a budget amount.
func usageVector(u executor.Usage) Vector {
	return Vector{InputTokens: u.TokensIn, OutputTokens: u.TokensOut, ModelCalls: u.ModelCalls,
		AgentTurns: 1, ToolCalls: u.ToolCalls, WallMS: u.WallMS}
}

// Ledger is one episode's budget: every charge first reserves its maximum and later settles
// its actual usage, capped at that maximum. A reservation must fit the per-resource caps and
// the combined token cap counted over reserved and settled amounts together, so that what is
// in flight can never overrun the episode.
type Ledger struct {
	cap      Vector
	totalCap int64
	reserved Vector
	settled  Vector
	open     map[int]Vector
	next     int
}

// NewLedger starts an empty ledger with the caps of b.
func NewLedger(b config.Budget) *Ledger {
	return &Ledger{cap: Caps(b), totalCap: b.Tokens, open: map[int]Vector{}}
}

// CanReserve reports whether v fits on top of everything reserved and settled.
func (l *Ledger) CanReserve(v Vector) bool {
	proposed := l.reserved.add(l.settled).add(v)
	return proposed.fitsWithin(l.cap) && proposed.Tokens() <= l.totalCap
}

// reserve holds v and returns the reservation's id, or false when it does not fit.
func (l *Ledger) reserve(v Vector) (int, bool) {
	if !l.CanReserve(v) {
		return 0, false
	}
	l.next++
	l.open[l.next] = v
	l.reserved = l.reserved.add(v)
	return l.next, true
}

// settle closes a reservation, charging actual capped at the reserved maximum; it returns
// the amount charged.
func (l *Ledger) settle(id int, actual Vector) (Vector, error) {
	maximum, ok := l.open[id]
	if !ok {
		return Vector{}, fmt.Errorf("budget reservation %d is not open", id)
	}
	delete(l.open, id)
	charged := actual.capAt(maximum)
	l.reserved = l.reserved.sub(maximum)
	l.settled = l.settled.add(charged)
	return charged, nil
}

// Cap is the per-resource episode cap.
func (l *Ledger) Cap() Vector { return l.cap }

// TotalTokenCap is the combined input+output token cap.
func (l *Ledger) TotalTokenCap() int64 { return l.totalCap }

// Reserved is what open reservations hold.
func (l *Ledger) Reserved() Vector { return l.reserved }

// Settled is what has been charged.
func (l *Ledger) Settled() Vector { return l.settled }

// Available is the cap less everything reserved and settled.
func (l *Ledger) Available() Vector { return l.cap.sub(l.reserved).sub(l.settled) }

// TotalTokensAvailable is the combined token cap less reserved and settled tokens.
func (l *Ledger) TotalTokensAvailable() int64 {
	return l.totalCap - l.reserved.Tokens() - l.settled.Tokens()
}
