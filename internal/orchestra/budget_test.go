package orchestra

import (
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
)

func TestCaps(t *testing.T) {
	got := Caps(testBudget)
	want := Vector{InputTokens: 98304, OutputTokens: 98304, ModelCalls: 98304, AgentTurns: 2*98304 + 50, ToolCalls: 50, WallMS: 600000}
	if got != want {
		t.Errorf("Caps = %+v, want %+v", got, want)
	}
	l := NewLedger(testBudget)
	if l.TotalTokenCap() != 98304 || l.Available() != want || l.TotalTokensAvailable() != 98304 {
		t.Errorf("fresh ledger: cap %d available %+v tokens %d", l.TotalTokenCap(), l.Available(), l.TotalTokensAvailable())
	}
	if e := EnvelopeVector(executor.Envelope{InputTokens: 1, OutputTokens: 2, ModelCalls: 3, ToolCalls: 4, WallMS: 5}); e != (Vector{1, 2, 3, 1, 4, 5}) {
		t.Errorf("EnvelopeVector = %+v", e)
	}
}

func TestLedgerReserveSettleCapsAtReservation(t *testing.T) {
	l := NewLedger(testBudget)
	maximum := Vector{InputTokens: 1000, OutputTokens: 500, ModelCalls: 1, AgentTurns: 1, ToolCalls: 2, WallMS: 1000}
	id, ok := l.reserve(maximum)
	if !ok || l.Reserved() != maximum {
		t.Fatalf("reserve: ok=%v reserved=%+v", ok, l.Reserved())
	}
	if l.TotalTokensAvailable() != 98304-1500 {
		t.Errorf("tokens available while reserved = %d", l.TotalTokensAvailable())
	}
	charged, err := l.settle(id, Vector{InputTokens: 1200, OutputTokens: 100, ModelCalls: 3, AgentTurns: 1, ToolCalls: 1, WallMS: 5000})
	if err != nil {
		t.Fatal(err)
	}
	want := Vector{InputTokens: 1000, OutputTokens: 100, ModelCalls: 1, AgentTurns: 1, ToolCalls: 1, WallMS: 1000}
	if charged != want || l.Settled() != want || l.Reserved() != (Vector{}) {
		t.Errorf("charged %+v settled %+v reserved %+v, want %+v charged and nothing reserved", charged, l.Settled(), l.Reserved(), want)
	}
	if _, err := l.settle(id, Vector{}); err == nil {
		t.Error("settling a closed reservation succeeded")
	}
}

func TestLedgerCombinedTokenCap(t *testing.T) {
	l := NewLedger(config.Budget{Tokens: 1000, ToolCalls: 5, WallSeconds: 10})
	first, ok := l.reserve(Vector{InputTokens: 600})
	if !ok {
		t.Fatal("first reservation refused")
	}
	// Each component fits its own cap (900 input, 200 output ≤ 1000), but reserved+new
	// input+output = 1100 exceeds the combined cap.
	second := Vector{InputTokens: 300, OutputTokens: 200}
	if l.CanReserve(second) {
		t.Fatal("combined token cap not enforced")
	}
	if _, ok := l.reserve(second); ok {
		t.Fatal("reserve ignored the combined token cap")
	}
	if _, err := l.settle(first, Vector{InputTokens: 100}); err != nil {
		t.Fatal(err)
	}
	if !l.CanReserve(second) { // 100 settled + 500 new = 600
		t.Fatal("settling did not release the unused reservation")
	}
	if l.CanReserve(Vector{InputTokens: 100, OutputTokens: 801}) {
		t.Fatal("settled tokens not counted against the combined cap")
	}
	if l.CanReserve(Vector{ToolCalls: 6}) || !l.CanReserve(Vector{ToolCalls: 5}) || l.CanReserve(Vector{WallMS: 10001}) {
		t.Fatal("per-resource caps not enforced")
	}
}

func TestRuntimeSettlesUsageCappedAtEnvelope(t *testing.T) {
	sess := newFake()
	over := answer("Answer: 4")
	over.Usage = executor.Usage{TokensIn: 50000, TokensOut: 100, ModelCalls: 7, ToolCalls: 9, WallMS: 999999}
	sess.script["n0"] = []executor.Result{over}
	r := newTestRuntime(qaTask, sess, defaultOptions())
	out := mustApply(t, r, addAgent("n0", "solver", ""))
	want := Vector{InputTokens: 20480, OutputTokens: 100, ModelCalls: 1, AgentTurns: 1, ToolCalls: 0, WallMS: 360000}
	if got := out.Executions[0].Charged; got != want {
		t.Errorf("charged %+v, want %+v", got, want)
	}
	if r.Ledger().Settled() != want || r.Ledger().Reserved() != (Vector{}) || r.NodeUsage() != want {
		t.Errorf("ledger settled %+v reserved %+v node usage %+v", r.Ledger().Settled(), r.Ledger().Reserved(), r.NodeUsage())
	}
}
