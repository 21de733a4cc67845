package aggregate

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/evosteer/evosteer-go/internal/duck"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/schema"
)

// Summary describes one step's aggregate outputs (sql/aggregate_summary.sql). Means are NaN
// when there are no anchors.
type Summary struct {
	Step                                             int
	Minimum                                          int64
	Anchors, LOO                                     int64
	MeanPHat, MeanAnchor                             float64
	Buckets, ExactBuckets, ExactAtMinimum            int64
	CoarseBuckets, CoarseAtMinimum                   int64
	Corrections, CorrectionsExact, CorrectionsCoarse int64
	CorrectionsNone, ValueData                       int64
	Pairs, PairsEligible, Wins, Losses, Ties         int64
}

// Summary reads the step's outputs back (Summarize).
func (Stage) Summary(ctx context.Context, r *rundir.Folder, step int) (rundir.Summary, error) {
	return rundir.AsSummary(Summarize(ctx, r, step))
}

// Summarize loads the few columns the summary needs from step's aggregate outputs and runs
// sql/aggregate_summary.sql.
func Summarize(ctx context.Context, r *rundir.Folder, step int) (*Summary, error) {
	db, err := duck.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	dir := r.StageDir(step, layout.Aggregate)
	for _, l := range []struct {
		name  string
		table *schema.Table
		file  string
		cols  []string
	}{
		{"anchors", schema.Anchors, layout.AnchorsFile, []string{"p_hat", "anchor", "loo"}},
		{"buckets", schema.Buckets, layout.BucketsFile, []string{"kind", "visits"}},
		{"corrections", schema.Corrections, layout.CorrectionsFile, []string{"kind"}},
		{"value_data", schema.ValueData, layout.ValueDataFile, []string{"t"}},
		{"pairs", schema.Pairs, layout.PairsFile, []string{"outcome", "eligible"}},
	} {
		if _, err := loadTable(ctx, db, l.name, l.table, l.cols, []source{{filepath.Join(dir, l.file), step}}); err != nil {
			return nil, fmt.Errorf("summary: %w", err)
		}
	}
	rr, err := db.RunFile(ctx, "aggregate_summary", map[string]any{"step": int64(step), "minimum": r.Config.Buckets.Minimum})
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	if !rr.Next() || rr.RecordBatch().NumRows() != 1 {
		return nil, fmt.Errorf("summary: no result row (%v)", rr.Err())
	}
	rec := rr.RecordBatch()
	ints := map[string]int64{}
	floats := map[string]float64{}
	for i, f := range rec.Schema().Fields() {
		switch c := rec.Column(i).(type) {
		case *array.Int64:
			ints[f.Name] = c.Value(0)
		case *array.Float64:
			floats[f.Name] = nan()
			if c.IsValid(0) {
				floats[f.Name] = c.Value(0)
			}
		default:
			return nil, fmt.Errorf("summary: column %s has type %s", f.Name, c.DataType())
		}
	}
	return &Summary{Step: step, Minimum: r.Config.Buckets.Minimum,
		Anchors: ints["anchors"], LOO: ints["loo"], MeanPHat: floats["mean_p_hat"], MeanAnchor: floats["mean_anchor"],
		Buckets: ints["buckets"], ExactBuckets: ints["exact_buckets"], ExactAtMinimum: ints["exact_at_minimum"],
		CoarseBuckets: ints["coarse_buckets"], CoarseAtMinimum: ints["coarse_at_minimum"],
		Corrections: ints["corrections"], CorrectionsExact: ints["corrections_exact"],
		CorrectionsCoarse: ints["corrections_coarse"], CorrectionsNone: ints["corrections_none"],
		ValueData: ints["value_data"], Pairs: ints["pairs"], PairsEligible: ints["pairs_eligible"],
		Wins: ints["wins"], Losses: ints["losses"], Ties: ints["ties"]}, nil
}

// Write prints the summary as a few aligned lines.
func (s *Summary) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "aggregate step %d:\n", s.Step)
	fmt.Fprintf(&b, "  anchors      %9d rows  mean p_hat %.4f, mean anchor %.4f, %d leave-one-out\n", s.Anchors, s.MeanPHat, s.MeanAnchor, s.LOO)
	fmt.Fprintf(&b, "  buckets      %9d rows  exact %d (%d at the minimum of %d visits), coarse %d (%d at the minimum)\n",
		s.Buckets, s.ExactBuckets, s.ExactAtMinimum, s.Minimum, s.CoarseBuckets, s.CoarseAtMinimum)
	fmt.Fprintf(&b, "  corrections  %9d rows  from the previous step's buckets: exact %d, coarse %d, none %d\n",
		s.Corrections, s.CorrectionsExact, s.CorrectionsCoarse, s.CorrectionsNone)
	fmt.Fprintf(&b, "  value_data   %9d rows\n", s.ValueData)
	fmt.Fprintf(&b, "  pairs        %9d rows  eligible %d: %d win, %d loss, %d tie\n", s.Pairs, s.PairsEligible, s.Wins, s.Losses, s.Ties)
	_, err := io.WriteString(w, b.String())
	return err
}

func nan() float64 { return math.NaN() }
