package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/internal/arrowfmt"
	"github.com/evosteer/evosteer-go/internal/duck"
)

func newSQLCmd() *cobra.Command {
	var runs []string
	var tables []string
	var format string
	var width, limit int
	var list bool
	cmd := &cobra.Command{
		Use:   "sql --run DIR [--run DIR ...] [QUERY]",
		Short: "Query every table of one or several runs with DuckDB SQL",
		Long: `Load every Arrow file of the run folder into DuckDB, one table per schema name (episodes,
decisions, scores, anchors, buckets, pairs, ledger, skills, proposals, ...), with every step and shard in
one table and two leading columns: step (the step folder's number; 0 outside step folders) and
stage (the folder the file came from; skills, for instance, is written by validate and author).
The probe table (evosteer probe) has the probed step as step and probe as stage.
Then run QUERY, or the query read from standard input, and print the result.

With --run given several times, the runs' files load into the same tables and every table gains
a first column run_name (the folder's base name, or the path as given where two base names are
the same), so one query compares runs. Tables must have the same schema version in every run.

Examples:
  evosteer sql --run runs/demo "SELECT step, source, avg(reward) FROM episodes GROUP BY ALL ORDER BY ALL"
  evosteer sql --run runs/demo --list
  echo "SELECT * FROM ledger WHERE event = 'promote'" | evosteer sql --run runs/demo --format csv
  evosteer sql --run runs/ablations/full-s1 --run runs/ablations/value-head-s1 \
    "SELECT run_name, block, avg(score) FROM eval_results WHERE policy = 'evosteer' GROUP BY ALL ORDER BY ALL"`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			query := ""
			if len(args) == 1 {
				query = args[0]
			} else if !list {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return fmt.Errorf("read query from standard input: %w", err)
				}
				query = string(b)
			}
			if !list && strings.TrimSpace(query) == "" {
				return fmt.Errorf("sql: no query given (pass it as an argument or on standard input; --list shows the tables)")
			}
			seen := map[string]bool{}
			for _, run := range runs {
				if _, err := os.Stat(run); err != nil {
					return fmt.Errorf("sql: run folder: %w", err)
				}
				clean := filepath.Clean(run)
				if seen[clean] {
					return fmt.Errorf("sql: run folder %s given twice", run)
				}
				seen[clean] = true
			}
			ctx := cmd.Context()
			db, err := duck.Open(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			var loaded []duck.LoadedTable
			if len(runs) == 1 {
				loaded, err = db.LoadRun(ctx, runs[0], tables)
			} else {
				loaded, err = db.LoadRuns(ctx, runs, duck.RunLabels(runs), tables)
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if list {
				for _, t := range loaded {
					fmt.Fprintf(out, "%-14s %10d rows  %d file(s)\n", t.Name, t.Rows, len(t.Files))
				}
				return nil
			}
			rr, err := db.Query(ctx, query, nil)
			if err != nil {
				return err
			}
			defer rr.Release()
			return arrowfmt.Write(out, rr, arrowfmt.Options{Format: format, MaxWidth: width, MaxRows: limit})
		},
	}
	cmd.Flags().StringArrayVar(&runs, "run", nil, "run folder to query (required; repeat to query several runs together)")
	cmd.Flags().StringSliceVar(&tables, "tables", nil, "load only these tables (comma-separated); faster on big runs")
	cmd.Flags().StringVar(&format, "format", "table", "output format: table, csv or json")
	cmd.Flags().IntVar(&width, "width", 60, "table format: cut longer cells to this many characters (0 = no limit)")
	cmd.Flags().IntVar(&limit, "max-rows", 0, "print at most this many rows (0 = all)")
	cmd.Flags().BoolVar(&list, "list", false, "list the loaded tables with row and file counts instead of querying")
	cmd.MarkFlagRequired("run")
	return cmd
}
