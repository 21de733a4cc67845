package rollout

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/evosteer/evosteer-go/internal/arrowfmt"
	"github.com/evosteer/evosteer-go/internal/duck"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/schema"
)

// Summary describes a step's rollout: its episodes by family and source and its decisions by
// action kind (sql/rollout_rewards.sql, sql/rollout_actions.sql over every shard), as aligned
// text tables.
type Summary struct {
	Step   int
	Run    string // the run folder, for the closing hint
	Tables []SummaryTable
}

// SummaryTable is one query's result, rendered.
type SummaryTable struct {
	Title, Text string
}

// Summary reads the step's rollout back (Summarize).
func (Stage) Summary(ctx context.Context, r *rundir.Folder, step int) (rundir.Summary, error) {
	return rundir.AsSummary(Summarize(ctx, r, step))
}

// Summarize loads the run's episodes and decisions into DuckDB and runs the two summary
// queries for step.
func Summarize(ctx context.Context, r *rundir.Folder, step int) (*Summary, error) {
	db, err := duck.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if _, err := db.LoadRun(ctx, r.Dir, []string{schema.Episodes.Name, schema.Decisions.Name}); err != nil {
		return nil, err
	}
	s := &Summary{Step: step, Run: r.Dir}
	for _, q := range []struct{ title, file string }{
		{"Reward by family and source", "rollout_rewards"},
		{"Decisions by action kind", "rollout_actions"},
	} {
		rr, err := db.RunFile(ctx, q.file, map[string]any{"step": int64(step)})
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		err = arrowfmt.Write(&b, rr, arrowfmt.Options{})
		rr.Release()
		if err != nil {
			return nil, fmt.Errorf("%s.sql: %w", q.file, err)
		}
		s.Tables = append(s.Tables, SummaryTable{Title: q.title, Text: b.String()})
	}
	return s, nil
}

// Write prints the tables and how to query the files.
func (s *Summary) Write(w io.Writer) error {
	var b strings.Builder
	for _, t := range s.Tables {
		fmt.Fprintf(&b, "\n%s (step %d):\n%s", t.Title, s.Step, t.Text)
	}
	fmt.Fprintf(&b, "\nQuery the files with SQL, e.g.\n  evosteer sql --run %s \"SELECT family, avg(reward) FROM episodes GROUP BY 1\"\n", s.Run)
	_, err := io.WriteString(w, b.String())
	return err
}
