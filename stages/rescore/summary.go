package rescore

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/schema"
)

// Summary describes a step's scores.
type Summary struct {
	Step                int
	Decisions, Episodes int
	ThetaVersion        int64
	// MaxMismatch is the largest |rescored − behaviour| / max(1, |behaviour|) log-probability
	// over the sampled decisions of each source. It is measured only at policy.temperature 1,
	// where the behaviour distribution is the scored one (nil otherwise: the tempered
	// distribution needs every legal action's score, which the scores table does not keep; the
	// stage checked it while scoring).
	MaxMismatch map[string]float64
	Temperature float64
	// MeanAbsDeltaL is the mean |Δℓ| over decisions with more than one legal action.
	MeanAbsDeltaL float64
	// Drift is the served reference's re-query (nil without served_reference).
	Drift *Drift
}

// Drift describes rescore's re-query of a served ρ (rho_drift.arrow).
type Drift struct {
	Sample, Tolerance float64 // served_reference.rescore_sample and drift_tolerance
	Requeried         int     // decisions re-queried
	Worst             schema.RhoDriftRow
}

// Summary reads the step's scores back (Summarize).
func (Stage) Summary(ctx context.Context, r *rundir.Folder, step int) (rundir.Summary, error) {
	return rundir.AsSummary(Summarize(ctx, r, step))
}

// Summarize describes step's scores.arrow, with the step's episodes (their number and sources)
// and, at temperature 1, the behaviour log-probabilities of its decisions.
func Summarize(_ context.Context, r *rundir.Folder, step int) (*Summary, error) {
	res, err := Stage{}.Inputs(r, step)
	if err != nil {
		return nil, err
	}
	decisionFiles, episodeFiles := res.(*inputs).decisions, res.(*inputs).episodes
	scores, err := schema.ReadFile[schema.ScoreRow](schema.Scores, filepath.Join(r.StageDir(step, layout.Rescore), layout.ScoresFile))
	if err != nil {
		return nil, err
	}
	eps, err := schema.ReadFiles[schema.EpisodeRow](schema.Episodes, episodeFiles)
	if err != nil {
		return nil, err
	}
	s := &Summary{Step: step, Decisions: len(scores), Episodes: len(eps), Temperature: r.Config.Policy.Temperature}
	var absSum float64
	var branch int
	for _, sc := range scores {
		s.ThetaVersion = sc.ThetaVersion
		if sc.LegalCount > 1 {
			branch++
			absSum += math.Abs(sc.DeltaL)
		}
	}
	if branch > 0 {
		s.MeanAbsDeltaL = absSum / float64(branch)
	}
	if sr := r.Config.Served; sr != nil {
		rows, err := schema.ReadFile[schema.RhoDriftRow](schema.RhoDrift, filepath.Join(r.StageDir(step, layout.Rescore), layout.RhoDriftFile))
		if err != nil {
			return nil, err
		}
		s.Drift = &Drift{Sample: sr.RescoreSample, Tolerance: sr.DriftTolerance, Requeried: len(rows)}
		for i, row := range rows {
			if i == 0 || row.Drift > s.Drift.Worst.Drift {
				s.Drift.Worst = row
			}
		}
	}
	if s.Temperature != 1 {
		return s, nil
	}
	source := make(map[string]string, len(eps))
	for _, ep := range eps {
		source[ep.EpisodeID] = ep.Source
	}
	s.MaxMismatch = map[string]float64{}
	i := 0
	err = readBehavior(decisionFiles, func(path, episode string, t int32, forced bool, behavior float64) error {
		if i >= len(scores) || scores[i].EpisodeID != episode || scores[i].T != t {
			return fmt.Errorf("%s: decision %s/%d has no score in row %d of %s", path, episode, t, i, layout.ScoresFile)
		}
		sc := scores[i]
		i++
		if forced {
			return nil
		}
		src := source[episode]
		rescored := sc.LogpRho
		if src == "current" {
			rescored = sc.LogpTheta
		}
		s.MaxMismatch[src] = math.Max(s.MaxMismatch[src], relativeMismatch(rescored, behavior))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if i != len(scores) {
		return nil, fmt.Errorf("step %d: %d scores for %d decisions", step, len(scores), i)
	}
	return s, nil
}

// readBehavior calls f with the columns of every decision of the files that the summary needs,
// in order, without decoding the network inputs.
func readBehavior(paths []string, f func(path, episode string, t int32, forced bool, behavior float64) error) error {
	for _, p := range paths {
		file, err := schema.Decisions.Open(p)
		if err != nil {
			return err
		}
		err = func() error {
			defer file.Close()
			rr, err := file.Reader()
			if err != nil {
				return err
			}
			defer rr.Release()
			for rr.Next() {
				rec := rr.RecordBatch()
				col := func(name string) any { return rec.Column(rec.Schema().FieldIndices(name)[0]) }
				ids, ts := col("episode_id").(*array.String), col("t").(*array.Int32)
				forced, behavior := col("forced").(*array.Boolean), col("logp_behavior").(*array.Float64)
				for i := range int(rec.NumRows()) {
					if err := f(p, ids.Value(i), ts.Value(i), forced.Value(i), behavior.Value(i)); err != nil {
						return err
					}
				}
			}
			return rr.Err()
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// Write prints the summary.
func (s *Summary) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "rescore step %d: %d decisions of %d episodes under θ version %d; mean |Δℓ| %.4g over branch decisions\n",
		s.Step, s.Decisions, s.Episodes, s.ThetaVersion, s.MeanAbsDeltaL)
	if s.MaxMismatch == nil {
		fmt.Fprintf(&b, "  behaviour log-probabilities (temperature %g) agree with the rescored ones within %g relative (checked while scoring)\n", s.Temperature, learner.MaxBehaviorMismatch)
	}
	for _, src := range slices.Sorted(maps.Keys(s.MaxMismatch)) {
		fmt.Fprintf(&b, "  %-18s max |rescored − behaviour| / max(1, |behaviour|) log-prob %.2g\n", src, s.MaxMismatch[src])
	}
	if d := s.Drift; d != nil && d.Requeried == 0 {
		fmt.Fprintf(&b, "  served ρ drift: no decision re-queried (served_reference.rescore_sample %g)\n", d.Sample)
	} else if d != nil {
		fmt.Fprintf(&b, "  served ρ drift: %d decisions re-queried (rescore_sample %g), largest |Δ log ρ| %.3g nats (tolerance %g) at %s decision %d action %s\n",
			d.Requeried, d.Sample, d.Worst.Drift, d.Tolerance, d.Worst.EpisodeID, d.Worst.T, d.Worst.ActionJSON)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
