package report

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/schema"
)

// costRun writes into a run two steps of executions (two roles, reported and estimated usage),
// episodes (controllers counted estimated and served) and proposals (a simulated and a model
// author), and returns the rows it wrote.
func costRun(t *testing.T, prices config.Costs) *rundir.Folder {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Costs = prices
	r, err := rundir.Init(filepath.Join(t.TempDir(), "costs"), cfg, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	for step := 1; step <= 2; step++ {
		var xs []schema.ExecutionRow
		var eps []schema.EpisodeRow
		for i := range 5 {
			id := fmt.Sprintf("%d/medqa/sim-%d/current/0", step, i)
			count, requests := schema.ControllerCountEstimated, int64(0)
			if i%2 == 1 {
				count, requests = schema.ControllerCountServed, int64(i+step)
			}
			eps = append(eps, schema.EpisodeRow{EpisodeID: id, TaskID: "medqa/sim", Family: "medqa", Split: "train", Source: SourceTheta,
				Healthy: true, ControllerCount: count, ControllerCalls: int64(3 + i), ControllerRequests: requests,
				ControllerTokensIn: int64(1000*i + 17*step), ControllerTokensOut: int64(9 * i)})
			for k := range 3 {
				role := []string{"solver", "verifier"}[(i+k)%2]
				xs = append(xs, schema.ExecutionRow{EpisodeID: id, T: int32(k), ExecIndex: int32(k), NodeID: "n0", Role: role,
					Skills: []string{}, ToolStatuses: []string{}, Status: "success", ModelCalls: int64(1 + k),
					TokensIn: int64(300*k + 11*i + step), TokensOut: int64(40*k + i), UsageEstimated: (i+k+step)%3 == 0})
			}
		}
		props := []schema.ProposalRow{
			{Window: 0, Family: "medqa", Backend: "sim", Status: "candidate_proposed", Plan: []string{}, Pitfalls: []string{}, Constraint: []string{}, Evidence: []string{}},
			{Window: 1, Family: "medqa", Backend: "openai", Status: "no_proposal", Plan: []string{}, Pitfalls: []string{}, Constraint: []string{}, Evidence: []string{},
				TokensIn: int64(5000 + step), TokensOut: 700},
		}
		lin := func(stage string) schema.Lineage { return schema.Lineage{Run: r.Name, Step: step, Stage: stage} }
		write(t, schema.WriteRows(schema.Episodes, filepath.Join(r.StageDir(step, layout.Rollout), layout.File(layout.Episodes)), lin(layout.Rollout), eps))
		write(t, schema.WriteRows(schema.Executions, filepath.Join(r.StageDir(step, layout.Rollout), layout.File(layout.Executions)), lin(layout.Rollout), xs))
		write(t, schema.WriteRows(schema.Proposals, filepath.Join(r.StageDir(step, layout.Author), layout.ProposalsFile), lin(layout.Author), props))
	}
	return r
}

// TestCostSection: the report's costs section shows the last step and the run per payer, with
// the cost column only when prices are configured.
func TestCostSection(t *testing.T) {
	for _, prices := range []config.Costs{{}, {InputPerMillion: 0.15, OutputPerMillion: 0.6}} {
		r := costRun(t, prices)
		rows, err := LoadCosts(context.Background(), r.Dir, r.Config)
		if err != nil {
			t.Fatal(err)
		}
		// Step 1 by hand: the controller's episodes 0, 2, 4 are the prior's (3 + 5 + 7 decisions,
		// not billed), 1 and 3 served (2 + 4 requests, no prompts rows); the model author one window.
		if len(rows) != 12 || rows[2].Payer != PayerController || rows[2].Served || rows[2].Requests != 15 || rows[2].Estimated != 15 ||
			rows[3].Payer != PayerController || !rows[3].Served || rows[3].Requests != 6 || rows[3].Estimated != 0 ||
			rows[5].Payer != PayerAuthor || !rows[5].Served || rows[5].Requests != 1 || rows[5].TokensIn != 5001 || rows[5].TokensOut != 700 {
			t.Fatalf("rows %+v", rows)
		}
		rep, err := Build(r)
		if err != nil {
			t.Fatal(err)
		}
		f := section(t, rep, IDCosts)
		if f.Table == nil {
			t.Fatalf("no costs table: %+v", f)
		}
		md := f.Table.Markdown()
		total := CostTotals(rows, PricesFromConfig(prices))
		ctrl := total[2]
		wantRow := fmt.Sprintf("| controller | reference_prior (no server) | %s | %s | %s | %s |", thousands(ctrl.Requests), thousands(ctrl.TokensIn), thousands(ctrl.TokensOut), thousands(ctrl.Estimated))
		if prices.Priced() {
			wantRow = strings.TrimSuffix(wantRow, " |") + " | not billed |"
		}
		if !strings.Contains(md, "| **step 2** |") || !strings.Contains(md, "| **run (2 steps)** |") || !strings.Contains(md, wantRow) {
			t.Errorf("prices %+v: costs table lacks the blocks or %q:\n%s", prices, wantRow, md)
		}
		if strings.Contains(f.Table.Header[len(f.Table.Header)-1], "cost") != prices.Priced() {
			t.Errorf("prices %+v: header %v", prices, f.Table.Header)
		}
		if !strings.Contains(f.Caption, "not evaluated yet") {
			t.Errorf("caption: %s", f.Caption)
		}
	}
}
