package schema

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"path/filepath"
	"strings"
	"testing"
)

// writeSpoiled writes rows without the writer's domain check, as a damaged or hand-made file
// would hold them.
func writeSpoiled[T any](t *testing.T, tbl *Table, path string, lin Lineage, rows []T) {
	t.Helper()
	rec, err := Build(tbl, rows)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	rr := &sliceReader{schema: rec.Schema(), recs: []arrow.RecordBatch{rec}}
	rr.refs.Store(1)
	if err := tbl.write(path, lin, rr, false); err != nil {
		t.Fatal(err)
	}
}

// badRows reads the seed file of table t, lets edit spoil its rows, writes them (past the
// writer's own check, as a damaged file holds them) and returns the path and the error of
// reading the file back.
func badRows[T any](t *testing.T, tbl *Table, edit func([]T)) (string, error) {
	t.Helper()
	seed := filepath.Join(seedDir, tbl.Name+".arrow")
	rows, err := ReadFile[T](tbl, seed)
	if err != nil {
		t.Fatal(err)
	}
	f, err := tbl.Open(seed)
	if err != nil {
		t.Fatal(err)
	}
	lin := f.Lineage
	f.Close()
	edit(rows)
	p := filepath.Join(t.TempDir(), "step-000001", tbl.Name+".arrow")
	writeSpoiled(t, tbl, p, lin, rows)
	_, err = ReadFile[T](tbl, p)
	// The writer refuses exactly what the readers refuse: no stage records a file as done that
	// the next stage cannot read.
	if werr := WriteRows(tbl, p+".checked", lin, rows); (werr == nil) != (err == nil) {
		t.Errorf("the writer and the reader disagree: write %v, read %v", werr, err)
	}
	return p, err
}

// TestDomainsRefused: a value outside its column's domain stops the read with the file, row
// and column. ReadFile and File.Reader share the check, so every stage refuses such a row: rescore,
// update, validate and author read with ReadFile(s), aggregate and `evosteer sql` through
// File.Reader (DuckDB never sees the row).
func TestDomainsRefused(t *testing.T) {
	str := func(s string) *string { return &s }
	cases := []struct {
		name string
		read func(t *testing.T) (string, error)
		want string // after "read <path>: batch 0: "
	}{
		{"reward NaN", func(t *testing.T) (string, error) {
			return badRows(t, Episodes, func(r []EpisodeRow) { r[1].Reward = math.NaN() })
		}, `row 1: column "reward": NaN is not finite`},
		{"reward 5", func(t *testing.T) (string, error) {
			return badRows(t, Episodes, func(r []EpisodeRow) { r[2].Reward = 5 })
		}, `row 2: column "reward": 5 is outside [0, 1]`},
		{"reward -Inf", func(t *testing.T) (string, error) {
			return badRows(t, Episodes, func(r []EpisodeRow) { r[0].Reward = math.Inf(-1) })
		}, `row 0: column "reward": -Inf is not finite`},
		{"source bogus", func(t *testing.T) (string, error) {
			return badRows(t, Episodes, func(r []EpisodeRow) { r[1].Source = "bogus" })
		}, `row 1: column "source": "bogus" is not one of current, natural_reference, paired_treatment, paired_control`},
		{"split", func(t *testing.T) (string, error) {
			return badRows(t, Tasks, func(r []TaskRow) { r[0].Split = "dev" })
		}, `row 0: column "split": "dev" is not one of train, test`},
		{"negative count", func(t *testing.T) (string, error) {
			return badRows(t, Episodes, func(r []EpisodeRow) { r[2].TokensOut = -1 })
		}, `row 2: column "tokens_out": -1 is below 0`},
		{"chosen beyond legal actions", func(t *testing.T) (string, error) {
			return badRows(t, Decisions, func(r []DecisionRow) { r[1].Chosen = int32(len(r[1].LegalActions)) })
		}, `row 1: column "chosen": `},
		{"prior logits per legal action", func(t *testing.T) (string, error) {
			return badRows(t, Decisions, func(r []DecisionRow) { r[0].PriorLogits = append(r[0].PriorLogits, 1) })
		}, `row 0: column "prior_logits": `},
		{"NaN feature", func(t *testing.T) (string, error) {
			return badRows(t, Decisions, func(r []DecisionRow) { r[2].Features[7] = float32(math.NaN()) })
		}, `row 2: column "features": element 7 is NaN, not finite`},
		{"output score", func(t *testing.T) (string, error) {
			return badRows(t, Decisions, func(r []DecisionRow) { s := 1.5; r[0].OutputScore = &s })
		}, `row 0: column "output_score": 1.5 is outside [0, 1]`},
		{"legal count", func(t *testing.T) (string, error) {
			return badRows(t, Scores, func(r []ScoreRow) { r[1].LegalCount = 0 })
		}, `row 1: column "legal_count": 0 is below 1`},
		{"log-prob Inf", func(t *testing.T) (string, error) {
			return badRows(t, Scores, func(r []ScoreRow) { r[0].LogpRho = math.Inf(-1) })
		}, `row 0: column "logp_rho": -Inf is not finite`},
		{"p_hat", func(t *testing.T) (string, error) {
			return badRows(t, Anchors, func(r []AnchorRow) { r[2].PHat = 1.01 })
		}, `row 2: column "p_hat": 1.01 is outside [0, 1]`},
		{"correction kind", func(t *testing.T) (string, error) {
			return badRows(t, Corrections, func(r []CorrectionRow) { r[0].Kind = "Exact" })
		}, `row 0: column "kind": "Exact" is not one of exact, coarse, none`},
		{"pair outcome", func(t *testing.T) (string, error) {
			return badRows(t, Pairs, func(r []PairRow) { r[1].Outcome = "draw" })
		}, `row 1: column "outcome": "draw" is not one of win, loss, tie`},
		{"pooled episodes", func(t *testing.T) (string, error) {
			return badRows(t, AnchorPool, func(r []AnchorPoolRow) { r[1].Episodes = 0 })
		}, `row 1: column "episodes": 0 is below 1`},
		{"pooled reward sum", func(t *testing.T) (string, error) {
			return badRows(t, AnchorPool, func(r []AnchorPoolRow) { r[0].RewardSum = -0.5 })
		}, `row 0: column "reward_sum": -0.5 is below 0`},
		{"first step of a used key", func(t *testing.T) (string, error) {
			return badRows(t, PairsUsed, func(r []PairsUsedRow) { r[2].FirstStep = 0 })
		}, `row 2: column "first_step": 0 is below 1`},
		{"ledger outcome (nullable)", func(t *testing.T) (string, error) {
			return badRows(t, Ledger, func(r []LedgerRow) { r[0].Outcome = str("won") })
		}, `row 0: column "outcome": "won" is not one of win, loss, tie`},
		{"alpha spent", func(t *testing.T) (string, error) {
			return badRows(t, Ledger, func(r []LedgerRow) { r[2].AlphaSpent = 2 })
		}, `row 2: column "alpha_spent": 2 is outside [0, 1]`},
		{"skill status", func(t *testing.T) (string, error) {
			return badRows(t, Skills, func(r []SkillRow) { r[0].Status = "admitted" })
		}, `row 0: column "status": "admitted" is not one of candidate, validated, retired`},
		{"checkpoint value", func(t *testing.T) (string, error) {
			return badRows(t, Checkpoint, func(r []CheckpointRow) {
				for i := range r {
					if len(r[i].Value) > 0 {
						r[i].Value[len(r[i].Value)-1] = float32(math.Inf(1))
						return
					}
				}
				t.Fatal("no checkpoint row with values")
			})
		}, `row 0: column "value": element 63 is +Inf, not finite`},
		{"eval score", func(t *testing.T) (string, error) {
			return badRows(t, EvalResults, func(r []EvalRow) { r[1].Score = -0.5 })
		}, `row 1: column "score": -0.5 is outside [0, 1]`},
		{"update metrics NaN", func(t *testing.T) (string, error) {
			return badRows(t, UpdateMetrics, func(r []UpdateMetricsRow) { r[0].Loss = math.NaN() })
		}, `row 0: column "loss": NaN is not finite`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := c.read(t)
			if err == nil {
				t.Fatal("the file reads without error")
			}
			if want := "read " + p + ": batch 0: " + c.want; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q\nwant prefix %q", err, want)
			}
		})
	}
}

// TestDomainRowCountsAcrossBatches: the row named is the file's, not the batch's.
func TestDomainRowCountsAcrossBatches(t *testing.T) {
	rows := make([]ScoreRow, MaxBatchRows+5)
	for i := range rows {
		rows[i] = ScoreRow{EpisodeID: "e", T: int32(i % 30), LegalCount: 2, LogpTheta: -0.5, LogpRho: -0.7, DeltaL: 0.2}
	}
	rows[MaxBatchRows+3].DeltaL = math.NaN()
	p := filepath.Join(t.TempDir(), "scores.arrow")
	writeSpoiled(t, Scores, p, testLineage, rows)
	_, err := ReadFile[ScoreRow](Scores, p)
	if want := `read ` + p + `: batch 1: row 65539: column "delta_l": NaN is not finite`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

// TestNullsOutsideDomains: a null in a nullable column with a domain is not a value to check.
func TestNullsOutsideDomains(t *testing.T) {
	_, err := badRows(t, Decisions, func(r []DecisionRow) {
		for i := range r {
			r[i].OutputScore = nil
		}
	})
	if err != nil {
		t.Error(err)
	}
}
