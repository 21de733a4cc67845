package report

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/schema"
)

// The payers of Costs besides the agent roles.
const (
	PayerController = "controller"
	PayerAuthor     = "author"
)

// StepExecution is the usage of one executions row, with the step its file belongs to.
type StepExecution struct {
	Step                            int
	Role                            string
	ModelCalls, TokensIn, TokensOut int64
	UsageEstimated                  bool
}

// StepProposal is a proposals row with the step its file belongs to.
type StepProposal struct {
	Step int
	schema.ProposalRow
}

// CostRow is one payer's use at one step (or, with Step 0, over the run): sql/costs.sql's row.
type CostRow struct {
	Step      int
	Payer     string // an agent role, PayerController or PayerAuthor
	Requests  int64
	TokensIn  int64
	TokensOut int64
	Estimated int64    // requests whose counts the client estimated
	Cost      *float64 // nil without prices
}

// Costs is sql/costs.sql in plain Go: per step and payer — each agent role (its executions'
// model calls and reported usage), the controller (requests: controller_requests when served,
// controller_calls otherwise) and the author (a request per window of a model author) — the
// requests, tokens, estimated requests and the price, ordered by step, then the agent roles by
// name, the controller, the author.
func Costs(execs []StepExecution, eps []StepEpisode, props []StepProposal, prices config.Costs) []CostRow {
	type key struct {
		step, kind int
		payer      string
	}
	by := map[key]*CostRow{}
	add := func(k key, requests, in, out, estimated int64) {
		r := by[k]
		if r == nil {
			r = &CostRow{Step: k.step, Payer: k.payer}
			by[k] = r
		}
		r.Requests += requests
		r.TokensIn += in
		r.TokensOut += out
		r.Estimated += estimated
	}
	for _, x := range execs {
		est := int64(0)
		if x.UsageEstimated {
			est = x.ModelCalls
		}
		add(key{x.Step, 0, x.Role}, x.ModelCalls, x.TokensIn, x.TokensOut, est)
	}
	for _, e := range eps {
		if e.ControllerCount == schema.ControllerCountServed {
			add(key{e.Step, 1, PayerController}, e.ControllerRequests, e.ControllerTokensIn, e.ControllerTokensOut, 0)
		} else {
			add(key{e.Step, 1, PayerController}, e.ControllerCalls, e.ControllerTokensIn, e.ControllerTokensOut, e.ControllerCalls)
		}
	}
	for _, p := range props {
		requests := int64(0)
		if p.Backend == "openai" {
			requests = 1
		}
		add(key{p.Step, 2, PayerAuthor}, requests, p.TokensIn, p.TokensOut, 0)
	}
	keys := make([]key, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.step, b.step), cmp.Compare(a.kind, b.kind), strings.Compare(a.payer, b.payer))
	})
	out := make([]CostRow, len(keys))
	for i, k := range keys {
		out[i] = *by[k]
		out[i].Cost = price(prices, out[i])
	}
	return out
}

// CostTotals sums rows over the steps per payer (Step 0), in the order the payers first appear.
func CostTotals(rows []CostRow, prices config.Costs) []CostRow {
	var out []CostRow
	at := map[string]int{}
	for _, r := range rows {
		i, ok := at[r.Payer]
		if !ok {
			i = len(out)
			at[r.Payer] = i
			out = append(out, CostRow{Payer: r.Payer})
		}
		t := &out[i]
		t.Requests += r.Requests
		t.TokensIn += r.TokensIn
		t.TokensOut += r.TokensOut
		t.Estimated += r.Estimated
	}
	for i := range out {
		out[i].Cost = price(prices, out[i])
	}
	return out
}

func price(prices config.Costs, r CostRow) *float64 {
	if !prices.Priced() {
		return nil
	}
	c := prices.Cost(r.TokensIn, r.TokensOut)
	return &c
}

// readExecutionUsage appends the usage columns of one executions file, without reading the
// prompts and outputs as Go values.
func readExecutionUsage(path string, step int, out []StepExecution) ([]StepExecution, error) {
	err := schema.Executions.EachBatch(path, func(rec arrow.RecordBatch) error {
		roles, err1 := schema.Column[*array.String](rec, "role")
		calls, err2 := schema.Column[*array.Int64](rec, "model_calls")
		in, err3 := schema.Column[*array.Int64](rec, "tokens_in")
		out2, err4 := schema.Column[*array.Int64](rec, "tokens_out")
		est, err5 := schema.Column[*array.Boolean](rec, "usage_estimated")
		if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
			return err
		}
		for i := range int(rec.NumRows()) {
			out = append(out, StepExecution{Step: step, Role: strings.Clone(roles.Value(i)), ModelCalls: calls.Value(i),
				TokensIn: in.Value(i), TokensOut: out2.Value(i), UsageEstimated: est.Value(i)})
		}
		return nil
	})
	return out, err
}

// endpoint names who serves a payer's requests, from the configuration: the executor's server
// for the agent roles, the served reference (or no server, for the prior) for the controller,
// the author's server.
func endpoint(cfg *config.Config, payer string) string {
	servers := func(base string, replicas []string) string {
		if len(replicas) == 0 {
			return base
		}
		return fmt.Sprintf("%s (+%d replicas)", base, len(replicas))
	}
	switch payer {
	case PayerController:
		if sr := cfg.Served; sr != nil {
			return servers(sr.BaseURL, sr.Replicas)
		}
		return "reference_prior (no server)"
	case PayerAuthor:
		if cfg.Author.Backend == "openai" {
			return cfg.Author.BaseURL
		}
		return "sim (no server)"
	}
	if cfg.Executor.Backend == "openai" {
		return servers(cfg.Executor.OpenAI.BaseURL, cfg.Executor.OpenAI.Replicas)
	}
	return "sim (no server)"
}

// costSection is the last step's and the run's requests, tokens and prices per payer, and what
// the evaluation used.
func costSection(r *rundir.Folder, d *data) (f Figure, err error) {
	f = Figure{ID: IDCosts, Title: "Costs"}
	cfg := r.Config
	prices := cfg.Costs
	rows := Costs(d.executions, d.episodes, d.proposals, prices)
	if len(rows) == 0 {
		f.Note = "No rollout has written executions yet."
		return f, nil
	}
	header := []string{"payer", "served by", "requests", "input tokens", "output tokens", "estimated"}
	if prices.Priced() {
		header = append(header, "cost")
	}
	t := &Table{Header: header, Labels: 2}
	block := func(title string, rs []CostRow) {
		t.Rows = append(t.Rows, Row{Cells: append([]string{title}, make([]string, len(header)-1)...), Bold: true})
		var sum CostRow
		for _, c := range rs {
			t.Rows = append(t.Rows, costCells(cfg, c, c.Payer, endpoint(cfg, c.Payer)))
			sum.Requests += c.Requests
			sum.TokensIn += c.TokensIn
			sum.TokensOut += c.TokensOut
			sum.Estimated += c.Estimated
		}
		sum.Cost = price(prices, sum)
		total := costCells(cfg, sum, "all", "")
		total.Bold = true
		t.Rows = append(t.Rows, total)
	}
	last := rows[len(rows)-1].Step
	var lastRows []CostRow
	steps := map[int]bool{}
	for _, c := range rows {
		steps[c.Step] = true
		if c.Step == last {
			lastRows = append(lastRows, c)
		}
	}
	block(fmt.Sprintf("step %d", last), lastRows)
	block(fmt.Sprintf("run (%d steps)", len(steps)), CostTotals(rows, prices))
	f.Table = t
	priced := "No prices are configured (costs: in pipeline.yaml), so no cost column is shown."
	if prices.Priced() {
		priced = fmt.Sprintf("Cost = (input × %g + output × %g) / 10⁶ at the configured prices per million tokens "+
			"(costs.input_per_million, costs.output_per_million), the same for every payer.", prices.InputPerMillion, prices.OutputPerMillion)
	}
	f.Caption = "Model use of the rollouts and the skill author (sql/costs.sql computes the same per step: " +
		"evosteer sql over the run, docs/LLM-EXECUTORS.md \"What a run cost\"). A payer is an agent role " +
		"(executions: its model calls and usage as the server reported it, before the cap at each reservation), the " +
		"controller (episodes: scoring requests to a served reference, or, for the prompt-only prior, the decisions " +
		"charged to the budget, whose tokens are estimated) or the author (proposals: one request a window of a model " +
		"author, none of the simulated one). Estimated counts the requests whose token counts the client estimated " +
		"because the server reported none. " + priced + " " + evalUsage(d)
	return f, nil
}

// evalUsage says what the evaluation used, from eval/results.arrow, which keeps tokens (input
// and output together) per task and no requests: its totals per policy, without a price.
func evalUsage(d *data) string {
	if !d.evalFound {
		return "The evaluation's use is not shown: the run is not evaluated yet."
	}
	type acc struct{ tasks, agents, controller float64 }
	by := map[string]*acc{}
	var order []string
	for _, e := range d.eval {
		a := by[e.Policy]
		if a == nil {
			a = &acc{}
			by[e.Policy] = a
			order = append(order, e.Policy)
		}
		a.tasks += float64(e.Tasks)
		a.agents += e.TokensPerTask * float64(e.Tasks)
		a.controller += e.ControllerTokensPerTask * float64(e.Tasks)
	}
	parts := make([]string, len(order))
	for i, p := range order {
		a := by[p]
		parts[i] = fmt.Sprintf("%s %s agent + %s controller tokens over %.0f tasks", p, thousands(int64(a.agents+0.5)), thousands(int64(a.controller+0.5)), a.tasks)
	}
	return "Evaluation (" + EvalFile + " keeps each policy's mean tokens per task, input and output together, " +
		"and no requests, roles or estimated counts, so it is not priced): " + strings.Join(parts, "; ") + "."
}

func costCells(cfg *config.Config, c CostRow, payer, servedBy string) Row {
	cells := []string{payer, servedBy, thousands(c.Requests), thousands(c.TokensIn), thousands(c.TokensOut), thousands(c.Estimated)}
	if cfg.Costs.Priced() {
		cells = append(cells, fmt.Sprintf("%.4f", *c.Cost))
	}
	return Row{Cells: cells}
}

// thousands writes n with a comma every three digits: 1,234,567.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString(",")
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
