package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/internal/arrowfmt"
	"github.com/evosteer/evosteer-go/schema"
)

func newInspectCmd() *cobra.Command {
	var rows, width int
	var data bool
	cmd := &cobra.Command{
		Use:   "inspect FILE",
		Short: "Show an Arrow file's table, version, lineage, schema and first rows",
		Long: `Show what an Arrow file of the pipeline holds: its table name and schema version, the
lineage metadata (run, step, stage, config hash, and the sha256 of every input it was computed
from), the row count, the schema, and the first rows. The file is checked like every stage
checks its inputs, so a truncated, foreign or outdated file is reported here too. A folder is
refused (evosteer sql --run DIR queries every table of a run folder).

--data prints only the sha256 of the file's rows and schema without its lineage, so that two
files holding the same data compare equal whatever run, configuration or inputs they name
(scripts/same-outputs.sh uses it to tell a changed lineage from changed data).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if st, err := os.Stat(args[0]); err == nil && st.IsDir() {
				return fmt.Errorf("inspect %s: is a directory; give one Arrow file (evosteer inspect %s), or query every table of a run folder with evosteer sql --run %s",
					args[0], filepath.Join(args[0], "…", "FILE.arrow"), args[0])
			}
			if data {
				sum, err := schema.DataSHA256(args[0])
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), sum)
				return err
			}
			f, err := schema.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			out := cmd.OutOrStdout()
			l, esc := f.Lineage, arrowfmt.Escape // the lineage is the file's text: escaped for the terminal
			fmt.Fprintf(out, "file:    %s\ntable:   %s (version %d)\nrows:    %d\n", esc(f.Path), f.Table.Name, f.Version, f.NumRows)
			fmt.Fprintf(out, "run:     %s\nstep:    %d\nstage:   %s\nconfig:  %s\n", esc(l.Run), l.Step, esc(l.Stage), esc(l.ConfigSHA256))
			fmt.Fprintf(out, "inputs:  %d\n", len(l.Inputs))
			keys := make([]string, 0, len(l.Inputs))
			for k := range l.Inputs {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				fmt.Fprintf(out, "  %s  %s\n", esc(l.Inputs[k]), esc(k))
			}
			fmt.Fprintln(out, "schema:")
			for _, fl := range f.Schema.Fields() {
				null := ""
				if fl.Nullable {
					null = " (nullable)"
				}
				fmt.Fprintf(out, "  %s: %s%s\n", fl.Name, fl.Type, null)
			}
			if rows <= 0 {
				return nil
			}
			rr, err := f.Reader()
			if err != nil {
				return err
			}
			defer rr.Release()
			fmt.Fprintf(out, "first %d rows:\n", rows)
			var b strings.Builder
			if err := arrowfmt.Write(&b, rr, arrowfmt.Options{MaxRows: rows, MaxWidth: width}); err != nil {
				return fmt.Errorf("%s: %w", f.Path, err)
			}
			_, err = out.Write([]byte(b.String()))
			return err
		},
	}
	cmd.Flags().IntVar(&rows, "rows", 5, "how many rows to show (0 = none)")
	cmd.Flags().IntVar(&width, "width", 40, "cut longer cells to this many characters (0 = no limit)")
	cmd.Flags().BoolVar(&data, "data", false, "print only the sha256 of the rows and schema, without the lineage")
	return cmd
}
