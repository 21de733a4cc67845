//go:build duckdb_arrow

package duck

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestNamedParametersBindByName(t *testing.T) {
	db := openTest(t)
	const q = `SELECT $b AS b, $a AS a, $c AS c, $a + 1 AS a1`
	// Many map iteration orders; names must decide, never positions.
	for i := 0; i < 20; i++ {
		cols := query(t, db, q, map[string]any{"a": int64(1), "b": "bee", "c": 2.5})
		if cols[0][0] != "bee" || cols[1][0] != int64(1) || cols[2][0] != 2.5 || cols[3][0] != int64(2) {
			t.Fatalf("bound %v", cols)
		}
	}
}

func TestNamedParametersMissing(t *testing.T) {
	db := openTest(t)
	_, err := db.Query(context.Background(), `SELECT $alpha + $beta AS x`, map[string]any{"alpha": 1})
	if err == nil || !strings.Contains(err.Error(), "missing parameter $beta") {
		t.Fatalf("err = %v", err)
	}
	// Nil map with a parameterised query.
	_, err = db.Query(context.Background(), `SELECT $alpha AS x`, nil)
	if err == nil || !strings.Contains(err.Error(), "missing parameter $alpha") {
		t.Fatalf("err = %v", err)
	}
}

func TestNamedParametersUnused(t *testing.T) {
	db := openTest(t)
	_, err := db.Query(context.Background(), `SELECT $step AS x`, map[string]any{"step": 1, "stpe": 2})
	if err == nil || !strings.Contains(err.Error(), "parameter $stpe not used by the SQL") {
		t.Fatalf("err = %v", err)
	}
	// A typo: both sides are named.
	err = db.Exec(context.Background(), `SELECT $step AS x`, map[string]any{"stpe": 2})
	if err == nil || !strings.Contains(err.Error(), "missing parameter $step") || !strings.Contains(err.Error(), "$stpe not used") {
		t.Fatalf("err = %v", err)
	}
	// Parameters for a query that takes none.
	_, err = db.Query(context.Background(), `SELECT 1 AS x`, map[string]any{"x": 1})
	if err == nil || !strings.Contains(err.Error(), "$x not used") {
		t.Fatalf("err = %v", err)
	}
}

func TestNoParametersNilMap(t *testing.T) {
	db := openTest(t)
	cols := query(t, db, `SELECT 41 + 1 AS x`, nil)
	if cols[0][0] != int32(42) {
		t.Fatalf("got %v (%T)", cols[0][0], cols[0][0])
	}
	cols = query(t, db, `SELECT 'ok' AS x`, map[string]any{})
	if cols[0][0] != "ok" {
		t.Fatalf("got %v", cols[0][0])
	}
	if err := db.Exec(context.Background(), `SET threads = 2`, nil); err != nil {
		t.Fatal(err)
	}
}

func TestPositionalParametersRefused(t *testing.T) {
	db := openTest(t)
	for _, q := range []string{`SELECT ? AS x`, `SELECT $1 AS x`} {
		_, err := db.Query(context.Background(), q, map[string]any{"1": 1})
		if err == nil || !strings.Contains(err.Error(), "positional parameter") {
			t.Fatalf("%s: err = %v", q, err)
		}
	}
}

// TestParameterGoTypes pins how the Go values of a params map bind.
func TestParameterGoTypes(t *testing.T) {
	db := openTest(t)
	when := time.Date(2026, 11, 3, 4, 5, 6, 0, time.UTC)
	cases := []struct {
		value    any
		wantType string
	}{
		{int(3), "BIGINT"},
		{int64(3), "BIGINT"},
		{int32(3), "INTEGER"},
		{uint(3), "UBIGINT"},
		{3.5, "DOUBLE"},
		{"x", "VARCHAR"},
		{true, "BOOLEAN"},
		{[]string{"a", "b"}, "VARCHAR[]"},
		{[]int{1, 2}, "BIGINT[]"},
		{[]int64{1, 2}, "BIGINT[]"},
		{[]float64{1, 2}, "DOUBLE[]"},
		{when, "TIMESTAMP WITH TIME ZONE"},
		{nil, `"NULL"`},
	}
	for _, c := range cases {
		cols := query(t, db, `SELECT typeof($v) AS t`, map[string]any{"v": c.value})
		if cols[0][0] != c.wantType {
			t.Errorf("%T: bound as %v, want %s", c.value, cols[0][0], c.wantType)
		}
	}

	// A []string is usable as a set of names.
	cols := query(t, db, `SELECT list_contains($names, 'b') AS in_list, 'c' IN (SELECT unnest($names)) AS in_sub`,
		map[string]any{"names": []string{"a", "b"}})
	if cols[0][0] != true || cols[1][0] != false {
		t.Errorf("[]string membership: %v", cols)
	}
	cols = query(t, db, `SELECT list_contains($names, 'b') AS in_list`, map[string]any{"names": []string{}})
	if cols[0][0] != false {
		t.Errorf("empty []string membership: %v", cols)
	}
	cols = query(t, db, `SELECT $when = TIMESTAMPTZ '2026-11-03 04:05:06+00' AS same`, map[string]any{"when": when})
	if cols[0][0] != true {
		t.Errorf("time.Time: %v", cols)
	}

	for _, bad := range []any{map[string]int{"a": 1}, struct{ X int }{1}, &struct{}{}} {
		_, err := db.Query(context.Background(), `SELECT $v AS v`, map[string]any{"v": bad})
		if err == nil || !strings.Contains(err.Error(), "parameter $v: unsupported Go type") {
			t.Errorf("%T: err = %v", bad, err)
		}
	}
}
