package report

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/duck"
	"github.com/evosteer/evosteer-go/internal/rundir"
)

// The payers of the cost rows besides the agent roles.
const (
	PayerController = "controller"
	PayerRescore    = "rescore"
	PayerAuthor     = "author"
)

// CostFile is the embedded query of the cost rows (sql/costs.sql), the one source of the
// report's costs section and of `evosteer costs`.
const CostFile = "costs"

// costTables are the tables sql/costs.sql reads, with the columns it reads of each: a run that
// has no file of one gets it empty (a run without served_reference has no prompts).
var costTables = []struct{ name, columns string }{
	{"executions", "role VARCHAR, model_calls BIGINT, tokens_in BIGINT, tokens_out BIGINT, usage_estimated BOOLEAN"},
	{"episodes", "controller_count VARCHAR, controller_calls BIGINT, controller_tokens_in BIGINT, controller_tokens_out BIGINT, controller_requests BIGINT, controller_tokens_sent BIGINT"},
	{"proposals", "backend VARCHAR, tokens_in BIGINT, tokens_out BIGINT"},
	{"prompts", "episode_id VARCHAR, t INTEGER, prompt_tokens INTEGER, requests INTEGER, tokens_sent BIGINT"},
	{"decisions", "episode_id VARCHAR, t INTEGER, legal_actions VARCHAR[]"},
	{"rho_drift", "episode_id VARCHAR, t INTEGER, requests INTEGER, tokens_sent BIGINT"},
}

// CostRow is one payer's use at one step (or, with Step 0, over the run): a row of
// sql/costs.sql, with who served it and, when a server billed it and prices are known, its cost.
type CostRow struct {
	Step         int
	Payer        string // an agent role, PayerController, PayerRescore or PayerAuthor
	Served       bool   // a server answered (and billed) the requests; false: the prior or a simulation
	Requests     int64
	TokensIn     int64
	TokensCached int64 // of TokensIn, the prompt a scoring request's candidates repeat beyond the first
	TokensOut    int64
	Estimated    int64    // requests whose counts the client estimated
	Model        string   // the served model's name ("" when no server)
	Cost         *float64 // nil when not served or without prices
}

// LoadCosts runs sql/costs.sql over the run folder dir and resolves each row's server and model
// from cfg: the agent roles are served when executor.backend is openai, by executor.openai's
// model; the controller and rescore by served_reference's; the author by its own.
func LoadCosts(ctx context.Context, dir string, cfg *config.Config) ([]CostRow, error) {
	db, err := duck.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	names := make([]string, len(costTables))
	for i, t := range costTables {
		names[i] = t.name
	}
	loaded, err := db.LoadRun(ctx, dir, names)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, l := range loaded {
		have[l.Name] = true
	}
	for _, t := range costTables {
		if !have[t.name] {
			if err := db.Exec(ctx, fmt.Sprintf("CREATE TABLE %s (step BIGINT, stage VARCHAR, %s)", t.name, t.columns), nil); err != nil {
				return nil, err
			}
		}
	}
	rr, err := db.RunFile(ctx, CostFile, nil)
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	var out []CostRow
	for rr.Next() {
		rec := rr.RecordBatch()
		cols := map[string]arrow.Array{}
		for i, f := range rec.Schema().Fields() {
			cols[f.Name] = rec.Column(i)
		}
		i64 := func(name string, i int) (int64, error) {
			c, ok := cols[name].(*array.Int64)
			if !ok {
				return 0, fmt.Errorf("sql/%s.sql: column %s is not BIGINT (%s)", CostFile, name, rec.Schema())
			}
			return c.Value(i), nil
		}
		payers, ok1 := cols["payer"].(*array.String)
		served, ok2 := cols["served"].(*array.Boolean)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("sql/%s.sql: no payer VARCHAR or served BOOLEAN column (%s)", CostFile, rec.Schema())
		}
		for i := range int(rec.NumRows()) {
			var v [6]int64
			var errs []error
			for k, name := range []string{"step", "requests", "tokens_in", "tokens_cached", "tokens_out", "estimated"} {
				var err error
				v[k], err = i64(name, i)
				errs = append(errs, err)
			}
			if err := errors.Join(errs...); err != nil {
				return nil, err
			}
			c := CostRow{Step: int(v[0]), Payer: strings.Clone(payers.Value(i)), Requests: v[1], TokensIn: v[2], TokensCached: v[3], TokensOut: v[4], Estimated: v[5]}
			if served.IsValid(i) {
				c.Served = served.Value(i)
			} else {
				c.Served = cfg.Executor.Backend == "openai"
			}
			if c.Served {
				c.Model = model(cfg, c.Payer)
			}
			out = append(out, c)
		}
	}
	return out, rr.Err()
}

// model is the name of the model that serves a payer's requests.
func model(cfg *config.Config, payer string) string {
	switch payer {
	case PayerController, PayerRescore:
		if cfg.Served != nil {
			return cfg.Served.Model
		}
		return ""
	case PayerAuthor:
		return cfg.Author.Model
	}
	return cfg.Executor.OpenAI.Model
}

// Priced sets each served row's Cost from prices (nil without a price); a row no server billed
// keeps a nil cost whatever the prices: its tokens are a simulation's, not money.
func Priced(rows []CostRow, prices Prices) []CostRow {
	out := slices.Clone(rows)
	for i := range out {
		out[i].Cost = nil
		if out[i].Served && prices.Priced() {
			c := prices.For(out[i].Model).Cost(out[i])
			out[i].Cost = &c
		}
	}
	return out
}

// CostTotals sums rows over the steps per payer and server (Step 0), in the order they first
// appear, and prices them as rows.
func CostTotals(rows []CostRow, prices Prices) []CostRow {
	var out []CostRow
	type key struct {
		payer  string
		served bool
	}
	at := map[key]int{}
	for _, r := range rows {
		k := key{r.Payer, r.Served}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, CostRow{Payer: r.Payer, Served: r.Served, Model: r.Model})
		}
		t := &out[i]
		t.Requests += r.Requests
		t.TokensIn += r.TokensIn
		t.TokensCached += r.TokensCached
		t.TokensOut += r.TokensOut
		t.Estimated += r.Estimated
	}
	return Priced(out, prices)
}

// Billed is the cost of the served rows: what the servers billed (0 without prices).
func Billed(rows []CostRow) float64 {
	total := 0.0
	for _, r := range rows {
		if r.Served && r.Cost != nil {
			total += *r.Cost
		}
	}
	return total
}

// endpoint names who serves a payer's requests, from the configuration: the executor's server
// for the agent roles, the served reference (or no server, for the prior) for the controller,
// the author's server.
func endpoint(cfg *config.Config, c CostRow) string {
	payer := c.Payer
	servers := func(base string, replicas []string) string {
		if len(replicas) == 0 {
			return base
		}
		return fmt.Sprintf("%s (+%d replicas)", base, len(replicas))
	}
	switch payer {
	case PayerController, PayerRescore:
		if sr := cfg.Served; sr != nil && c.Served {
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

// costSection is the last step's and the run's requests, tokens and prices per payer (sql/costs.sql,
// as `evosteer costs` prints it), and what the evaluation used.
func costSection(r *rundir.Folder, d *data) (f Figure, err error) {
	f = Figure{ID: IDCosts, Title: "Costs"}
	cfg := r.Config
	prices := PricesFromConfig(cfg.Costs)
	rows, err := LoadCosts(context.Background(), r.Dir, cfg)
	if err != nil {
		return f, err
	}
	rows = Priced(rows, prices)
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
		sum := CostRow{Served: true}
		for _, c := range rs {
			t.Rows = append(t.Rows, costCells(prices, c, c.Payer, endpoint(cfg, c)))
			if c.Served {
				sum.Requests += c.Requests
				sum.TokensIn += c.TokensIn
				sum.TokensOut += c.TokensOut
				sum.Estimated += c.Estimated
			}
		}
		if prices.Priced() {
			b := Billed(rs)
			sum.Cost = &b
		}
		total := costCells(prices, sum, "billed", "the servers")
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
	priced := "No prices are configured (costs: in pipeline.yaml), so no cost column is shown; evosteer costs --prices FILE prices a run per model."
	if prices.Priced() {
		priced = fmt.Sprintf("Cost = (input × %g + output × %g) / 10⁶ at the configured prices per million tokens "+
			"(costs.input_per_million, costs.output_per_million), the same for every model; evosteer costs --prices FILE "+
			"prices per model, with a cached-prompt price.", prices.InputPerMillion, prices.OutputPerMillion)
	}
	f.Caption = "Model use of the rollouts, rescore and the skill author: the rows of sql/costs.sql, which evosteer costs prints " +
		"per step (docs/LLM-EXECUTORS.md \"What a run cost\"). A payer is an agent role " +
		"(executions: its model calls and usage as the server reported it, before the cap at each reservation), the " +
		"controller (a served ρ: its scoring requests, the token ids they carried, prompt + path for each legal action, and one " +
		"generated token per action; the prompt-only prior: the decisions charged to the budget and their estimated tokens), rescore " +
		"(its drift re-queries of the served ρ) or the author (proposals: one request a window of a model author, none of the simulated one). " +
		"Billed sums only the rows a server answered: a row served by no server (the prior, a simulation) is a simulation's count, " +
		"left out of it and never priced. Estimated counts the requests whose token counts the client estimated " +
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

func costCells(prices Prices, c CostRow, payer, servedBy string) Row {
	cells := []string{payer, servedBy, thousands(c.Requests), thousands(c.TokensIn), thousands(c.TokensOut), thousands(c.Estimated)}
	if prices.Priced() {
		cost := "not billed"
		if c.Cost != nil {
			cost = fmt.Sprintf("%.4f", *c.Cost)
		}
		cells = append(cells, cost)
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
