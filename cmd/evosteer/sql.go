package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/internal/arrowfmt"
	"github.com/evosteer/evosteer-go/internal/atomicfile"
	"github.com/evosteer/evosteer-go/internal/duck"
)

func newSQLCmd() *cobra.Command {
	var runs []string
	var tables []string
	var format, outPath string
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

The query cannot change a run, nor write any file: DuckDB's access to files and the network is
switched off and its settings locked before the tables load, so COPY ... TO, EXPORT DATABASE,
ATTACH of a file, read_csv and the like, INSTALL and LOAD fail, and only a reading statement
(SELECT, FROM, WITH, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN) runs. DuckDB does not spill to disk
either: a query that needs more memory than it may use fails. Export results with --format csv
or json, on standard output or into --out FILE, a file outside every queried run folder. On
standard output every format prints control characters in the text (ESC, CR, DEL, ...) as
escapes (\x1b, \r in a table or csv; \u001b, \u007f in json); --out FILE keeps the data byte
for byte.

Examples:
  evosteer sql --run runs/demo "SELECT step, source, avg(reward) FROM episodes GROUP BY ALL ORDER BY ALL"
  evosteer sql --run runs/demo --list
  echo "SELECT * FROM ledger WHERE event = 'promote'" | evosteer sql --run runs/demo --format csv
  evosteer sql --run runs/demo --format json --out episodes.json "SELECT * FROM episodes WHERE step = 1"
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
			if outPath != "" {
				var err error
				if outPath, err = outsideRuns(outPath, runs); err != nil {
					return err
				}
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
			// Sealed before anything loads, so that the database never has a file it may write:
			// no temporary directory to spill the loaded tables into (DuckDB's default is .tmp in
			// the working directory, which may be a link into a run), no file the query may open.
			if err := db.Seal(ctx); err != nil {
				return err
			}
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
				if errors.Is(err, duck.ErrSealed) {
					return fmt.Errorf("%w (evosteer sql reads the loaded tables only: files, the network and settings are off so that no query can change a run; export with --format csv|json, on standard output or into --out FILE)", err)
				}
				return err
			}
			defer rr.Release()
			opt := arrowfmt.Options{Format: format, MaxWidth: width, MaxRows: limit}
			if outPath == "" {
				// Standard output is the terminal, as for the table format and every error: csv
				// and json show control characters as escapes there; --out keeps the bytes.
				opt.Terminal = true
				return arrowfmt.Write(out, rr, opt)
			}
			// Written beside the target and renamed over it: a symbolic link at outPath is
			// replaced, never followed into a run.
			return atomicfile.Write(outPath, 0o644, func(w io.Writer) error { return arrowfmt.Write(w, rr, opt) })
		},
	}
	cmd.Flags().StringArrayVar(&runs, "run", nil, "run folder to query (required; repeat to query several runs together)")
	cmd.Flags().StringSliceVar(&tables, "tables", nil, "load only these tables (comma-separated); faster on big runs")
	cmd.Flags().StringVar(&format, "format", "table", "output format: table, csv or json")
	cmd.Flags().IntVar(&width, "width", 60, "table format: cut longer cells to this many characters (0 = no limit)")
	cmd.Flags().IntVar(&limit, "max-rows", 0, "print at most this many rows (0 = all)")
	cmd.Flags().StringVar(&outPath, "out", "", "write the query's result to this file (outside every run folder) instead of standard output")
	cmd.Flags().BoolVar(&list, "list", false, "list the loaded tables with row and file counts instead of querying")
	cmd.MarkFlagRequired("run")
	return cmd
}

// outsideRuns resolves --out (its folder must exist; symbolic links in the folder's path are
// followed) and refuses a file inside any of the run folders, which the query tool must not
// change.
func outsideRuns(out string, runs []string) (string, error) {
	abs, err := filepath.Abs(out)
	if err != nil {
		return "", fmt.Errorf("sql: --out %s: %w", out, err)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", fmt.Errorf("sql: --out %s: its folder: %w", out, err)
	}
	target := filepath.Join(dir, filepath.Base(abs))
	for _, run := range runs {
		root, err := filepath.Abs(run)
		if err == nil {
			root, err = filepath.EvalSymlinks(root)
		}
		if err != nil {
			return "", fmt.Errorf("sql: run folder: %w", err)
		}
		if rel, err := filepath.Rel(root, target); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "", fmt.Errorf("sql: --out %s is inside the run folder %s; the query tool does not change a run, write elsewhere", out, run)
		}
	}
	return target, nil
}
