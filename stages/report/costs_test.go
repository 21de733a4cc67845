package report

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/duck"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/schema"
)

// costRun writes into a run two steps of executions (two roles, reported and estimated usage),
// episodes (controllers counted estimated and served) and proposals (a simulated and a model
// author), and returns the rows it wrote.
func costRun(t *testing.T, prices config.Costs) (*rundir.Folder, []StepExecution, []StepEpisode, []StepProposal) {
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
	var allX []StepExecution
	var allE []StepEpisode
	var allP []StepProposal
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
		for _, x := range xs {
			allX = append(allX, StepExecution{Step: step, Role: x.Role, ModelCalls: x.ModelCalls, TokensIn: x.TokensIn, TokensOut: x.TokensOut, UsageEstimated: x.UsageEstimated})
		}
		for _, e := range eps {
			allE = append(allE, StepEpisode{step, e})
		}
		for _, p := range props {
			allP = append(allP, StepProposal{step, p})
		}
	}
	return r, allX, allE, allP
}

// sqlCosts runs sql/costs.sql over the run as `evosteer sql` loads it.
func sqlCosts(t *testing.T, dir string, prices config.Costs) []CostRow {
	t.Helper()
	ctx := context.Background()
	db, err := duck.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.LoadRun(ctx, dir, nil); err != nil {
		t.Fatal(err)
	}
	rr, err := db.RunFile(ctx, "costs", map[string]any{"input_per_million": prices.InputPerMillion, "output_per_million": prices.OutputPerMillion})
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	var out []CostRow
	for rr.Next() {
		rec := rr.RecordBatch()
		col := func(name string) int {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) != 1 {
				t.Fatalf("costs.sql has no column %s: %s", name, rec.Schema())
			}
			return idx[0]
		}
		i64 := func(name string, i int) int64 { return rec.Column(col(name)).(*array.Int64).Value(i) }
		for i := range int(rec.NumRows()) {
			c := CostRow{Step: int(i64("step", i)), Payer: strings.Clone(rec.Column(col("payer")).(*array.String).Value(i)),
				Requests: i64("requests", i), TokensIn: i64("tokens_in", i), TokensOut: i64("tokens_out", i), Estimated: i64("estimated", i)}
			if cost := rec.Column(col("cost")); cost.IsValid(i) {
				v := cost.(*array.Float64).Value(i)
				c.Cost = &v
			}
			out = append(out, c)
		}
	}
	if err := rr.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCostsSQLAgreesWithGo: sql/costs.sql over a run's files gives, row for row, what the
// report's plain-Go Costs gives over the same rows, with and without prices; and the hand count
// of one step's rows agrees with both.
func TestCostsSQLAgreesWithGo(t *testing.T) {
	for _, prices := range []config.Costs{{}, {InputPerMillion: 0.15, OutputPerMillion: 0.6}} {
		r, xs, eps, props := costRun(t, prices)
		want := Costs(xs, eps, props, prices)
		got := sqlCosts(t, r.Dir, prices)
		if len(got) != len(want) || len(want) != 8 {
			t.Fatalf("prices %+v: SQL %d rows, Go %d (want 8: 2 steps × solver, verifier, controller, author)", prices, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			same := g.Step == w.Step && g.Payer == w.Payer && g.Requests == w.Requests && g.TokensIn == w.TokensIn &&
				g.TokensOut == w.TokensOut && g.Estimated == w.Estimated && (g.Cost == nil) == (w.Cost == nil) &&
				(g.Cost == nil || math.Abs(*g.Cost-*w.Cost) <= 1e-12*math.Max(1, math.Abs(*w.Cost)))
			if !same {
				t.Errorf("prices %+v row %d: SQL %+v (cost %v), Go %+v (cost %v)", prices, i, g, g.Cost, w, w.Cost)
			}
		}
		if got[0].Payer != "solver" || got[1].Payer != "verifier" || got[2].Payer != PayerController || got[3].Payer != PayerAuthor {
			t.Errorf("order of step 1: %s %s %s %s", got[0].Payer, got[1].Payer, got[2].Payer, got[3].Payer)
		}
		// Step 1's controller, by hand: episodes 0, 2, 4 estimated (3 + 5 + 7 calls), 1 and 3 served
		// (2 + 4 requests); the author: one model window of 5001 + 700 tokens.
		if c := got[2]; c.Requests != 15+6 || c.Estimated != 15 || c.TokensIn != 10000+5*17 || c.TokensOut != 90 {
			t.Errorf("step 1 controller: %+v", c)
		}
		if a := got[3]; a.Requests != 1 || a.TokensIn != 5001 || a.TokensOut != 700 || a.Estimated != 0 {
			t.Errorf("step 1 author: %+v", a)
		}
		if prices.Priced() && math.Abs(*got[3].Cost-(5001*0.15+700*0.6)/1e6) > 1e-15 {
			t.Errorf("step 1 author's cost %g", *got[3].Cost)
		}
	}
}

// TestCostSection: the report's costs section shows the last step and the run per payer, with
// the cost column only when prices are configured.
func TestCostSection(t *testing.T) {
	for _, prices := range []config.Costs{{}, {InputPerMillion: 0.15, OutputPerMillion: 0.6}} {
		r, xs, eps, props := costRun(t, prices)
		rep, err := Build(r)
		if err != nil {
			t.Fatal(err)
		}
		f := section(t, rep, IDCosts)
		if f.Table == nil {
			t.Fatalf("no costs table: %+v", f)
		}
		md := f.Table.Markdown()
		total := CostTotals(Costs(xs, eps, props, prices), prices)
		ctrl := total[2]
		wantRow := fmt.Sprintf("| controller | reference_prior (no server) | %s | %s | %s | %s |", thousands(ctrl.Requests), thousands(ctrl.TokensIn), thousands(ctrl.TokensOut), thousands(ctrl.Estimated))
		if prices.Priced() {
			wantRow = strings.TrimSuffix(wantRow, " |") + fmt.Sprintf(" | %.4f |", *ctrl.Cost)
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
