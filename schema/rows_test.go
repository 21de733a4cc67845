package schema

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

type scoreRow struct {
	EpisodeID    string  `arrow:"episode_id"`
	T            int32   `arrow:"t"`
	LogpTheta    float64 `arrow:"logp_theta"`
	LogpRho      float64 `arrow:"logp_rho"`
	DeltaL       float64 `arrow:"delta_l"`
	LegalCount   int32   `arrow:"legal_count"`
	ThetaVersion int64   `arrow:"theta_version"`
	Note         string  // untagged fields are ignored
}

type valueRow struct {
	EpisodeID string      `arrow:"episode_id"`
	T         int32       `arrow:"t"`
	Features  [30]float32 `arrow:"features"`
	TaskType  string      `arrow:"task_type"`
	Label     float64     `arrow:"label"`
}

// roundTrip writes rows through WriteRows, and reads them back with Rows.
func roundTrip[T any](t *testing.T, table *Table, rows []T) []T {
	t.Helper()
	path := filepath.Join(t.TempDir(), table.Name+".arrow")
	if err := WriteRows(table, path, Lineage{Run: "r", Stage: "s", ConfigSHA256: "c"}, rows); err != nil {
		t.Fatal(err)
	}
	back, err := ReadFile[T](table, path)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

func TestRowsRoundTrip(t *testing.T) {
	scores := []scoreRow{{"a", 0, -1.5, -1, -0.5, 3, 2, ""}, {"b", 1, 0, 0, 0, 1, 2, ""}}
	if got := roundTrip(t, Scores, scores); !reflect.DeepEqual(got, scores) {
		t.Fatalf("scores: %+v", got)
	}
	var f [30]float32
	for i := range f {
		f[i] = float32(i) / 7
	}
	values := []valueRow{{"a", 2, f, "medqa", 1}, {"b", 0, [30]float32{}, "alfworld", 0}}
	if got := roundTrip(t, ValueData, values); !reflect.DeepEqual(got, values) {
		t.Fatalf("value_data: %+v", got)
	}
	id, j, p := "evosteer-x", int64(4), 0.01
	ledger := []LedgerRow{{Seq: 1, Event: "proposal", AlphaSpent: 0}, {Seq: 2, Event: "look", SkillID: &id, J: &j, PPlus: &p, AlphaSpent: 0.002}}
	if got := roundTrip(t, Ledger, ledger); !reflect.DeepEqual(got, ledger) {
		t.Fatalf("ledger: %+v", got)
	}
}

func TestRowsRejectMismatchedStructs(t *testing.T) {
	type missing struct {
		EpisodeID string `arrow:"episode_id"`
	}
	type wrongType struct {
		scoreRow
		T string `arrow:"t"`
	}
	type extra struct {
		scoreRow
		X int64 `arrow:"x"`
	}
	type notNullable struct {
		LedgerRow
		AlphaSpent *float64 `arrow:"alpha_spent"`
	}
	for name, err := range map[string]error{
		"missing":      func() error { _, err := Build(Scores, []missing{{}}); return err }(),
		"extra":        func() error { _, err := Build(Scores, []extra{{}}); return err }(),
		"wrong type":   func() error { _, err := Build(Scores, []wrongType{{}}); return err }(),
		"not nullable": func() error { _, err := Build(Ledger, []notNullable{{}}); return err }(),
	} {
		if err == nil || !strings.Contains(err.Error(), "table ") {
			t.Errorf("%s: want a clear error, got %v", name, err)
		}
	}
}
