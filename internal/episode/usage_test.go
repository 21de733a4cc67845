package episode

import (
	"testing"

	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/orchestra"
)

// An execution whose usage the client estimated (the server reported none) is stored as such in
// executions.usage_estimated; a reported one is not.
func TestExecutionRowKeepsEstimatedUsage(t *testing.T) {
	for _, estimated := range []bool{false, true} {
		x := orchestra.ExecutionRecord{ExecIndex: 2, NodeID: "n1", Role: "solver", Result: executor.Result{Status: "success",
			Usage: executor.Usage{TokensIn: 120, TokensOut: 30, ModelCalls: 2, Estimated: estimated}}}
		row := executionRowOf("1/t/current/0", 3, x)
		if row.UsageEstimated != estimated || row.TokensIn != 120 || row.TokensOut != 30 || row.ModelCalls != 2 || row.Role != "solver" {
			t.Errorf("estimated %v: row %+v", estimated, row)
		}
	}
}
