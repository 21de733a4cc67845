package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/stages/report"
)

func newCostsCmd() *cobra.Command {
	var run, pricesPath string
	cmd := &cobra.Command{
		Use:   "costs --run DIR [--prices FILE]",
		Short: "Print what a run's model calls cost, per step and payer: requests, tokens and dollars",
		Long: `Run sql/costs.sql over the run folder (the query the report's costs section shows) and print
per step and payer (each agent role, the controller, rescore, the skill author) the requests, the
input tokens (and of them the cached prompt), the output tokens, the requests with estimated counts
and the cost, then the same per payer over the run.

Totals count only what a server billed: the agent roles of executor.backend openai, a served ρ
(served_reference: the token ids its scoring requests carried, prompt + path for each legal action,
and one generated token per action), rescore's drift re-queries of it, and a model author. The
prompt-only prior's controller charge (reference_prior: decisions charged to the episode budget,
with estimated tokens, that no server saw) and the simulated executor's and author's counts are
printed apart, as "not billed", and never as money. Each stage's one-item preflight request and
the evaluation's use are not in the run's tables and not counted.

Prices: --prices FILE, YAML or JSON, in dollars (or any currency) per million tokens:

  input_per_million: 0.15          # every model the file does not list (default 0)
  output_per_million: 0.6
  models:                          # per model name (executor.openai.model, served_reference.model, author.model)
    Qwen/Qwen3-8B:
      input_per_million: 0.05
      output_per_million: 0.2
      cached_input_per_million: 0.01   # optional: a scoring request's prompt repeated for every
                                       # candidate beyond the first (a server's prefix cache);
                                       # unset, it costs input_per_million

Without --prices the run's costs block (pipeline.yaml costs:, the report's prices) prices every
model alike; at its default (0, 0) no dollars are printed. An unknown key, a value that is not a
number, or a negative or non-finite price is refused with the file and the field named.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := rundir.Open(run)
			if err != nil {
				return err
			}
			prices := report.PricesFromConfig(r.Config.Costs)
			if pricesPath != "" {
				if prices, err = report.ReadPrices(pricesPath); err != nil {
					return err
				}
			}
			rows, err := report.LoadCosts(cmd.Context(), r.Dir, r.Config)
			if err != nil {
				return err
			}
			if len(rows) == 0 {
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "costs: %s has no rollout executions yet\n", r.Dir)
				return err
			}
			return printCosts(cmd.OutOrStdout(), report.Priced(rows, prices), report.CostTotals(rows, prices), prices)
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "run folder")
	cmd.Flags().StringVar(&pricesPath, "prices", "", "prices file (YAML or JSON) of $ per million input, cached input and output tokens per model; default: the run's costs block")
	_ = cmd.MarkFlagRequired("run")
	return cmd
}

// printCosts writes the rows, the run's totals per payer, the billed total and what no server billed.
func printCosts(w io.Writer, rows, totals []report.CostRow, prices report.Prices) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\tpayer\tmodel\trequests\ttokens in\tcached in\ttokens out\testimated\tcost $\t")
	line := func(step string, c report.CostRow) {
		model, cost := c.Model, "-"
		switch {
		case !c.Served:
			model, cost = "no server", "not billed"
		case c.Cost != nil:
			cost = fmt.Sprintf("%.4f", *c.Cost)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t\n", step, c.Payer, model, c.Requests, c.TokensIn, c.TokensCached, c.TokensOut, c.Estimated, cost)
	}
	for _, c := range rows {
		line(fmt.Sprint(c.Step), c)
	}
	for _, c := range totals {
		line("run", c)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var billed report.CostRow
	var apart []report.CostRow
	for _, c := range totals {
		if !c.Served {
			apart = append(apart, c)
			continue
		}
		billed.Requests += c.Requests
		billed.TokensIn += c.TokensIn
		billed.TokensCached += c.TokensCached
		billed.TokensOut += c.TokensOut
	}
	total := "no prices (--prices FILE, or the run's costs block)"
	if prices.Priced() {
		total = fmt.Sprintf("$%.4f", report.Billed(totals))
	}
	fmt.Fprintf(w, "billed: %s for %d requests, %d input tokens (%d of them cached prompt), %d output tokens; prices from %s\n",
		total, billed.Requests, billed.TokensIn, billed.TokensCached, billed.TokensOut, prices.Source)
	for _, c := range apart {
		what := "simulated"
		if c.Payer == report.PayerController {
			what = "the prompt-only prior's charge to the episode budget (reference_prior, no server)"
		}
		fmt.Fprintf(w, "not billed: %s %d requests, %d input and %d output tokens (%d estimated): %s, not money\n",
			c.Payer, c.Requests, c.TokensIn, c.TokensOut, c.Estimated, what)
	}
	return nil
}
