//go:build duckdb_arrow

package duck

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// smallReader builds a one-batch reader with int64 column id and, when
// extra is set, a utf8 column note.
func smallReader(t *testing.T, ids []int64, extra bool) array.RecordReader {
	t.Helper()
	fields := []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}
	if extra {
		fields = append(fields, arrow.Field{Name: "note", Type: arrow.BinaryTypes.String})
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		if extra {
			b.Field(1).(*array.StringBuilder).Append("n" + string(rune('a'+id%26)))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rr.Release)
	return rr
}

func TestAppendTableConstantColumns(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	err := db.AppendTable(ctx, "log", smallReader(t, []int64{1, 2, 3}, false),
		[]Column{{Name: "step", Value: int64(1)}, {Name: "stage", Value: "rollout"}})
	if err != nil {
		t.Fatal(err)
	}
	err = db.AppendTable(ctx, "log", smallReader(t, []int64{4, 5, 6, 7, 8}, false),
		[]Column{{Name: "step", Value: int64(2)}, {Name: "stage", Value: "rollout"}})
	if err != nil {
		t.Fatal(err)
	}

	// Constant columns come first.
	rr, err := db.Query(ctx, `SELECT * FROM log`, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range rr.Schema().Fields() {
		names = append(names, f.Name)
	}
	rr.Release()
	if strings.Join(names, ",") != "step,stage,id" {
		t.Fatalf("columns %v, want step,stage,id", names)
	}

	cols := query(t, db, `SELECT step, count(*) AS n, max(id) AS m, min(stage) AS st FROM log GROUP BY step ORDER BY step`, nil)
	if len(cols[0]) != 2 ||
		cols[0][0] != int64(1) || cols[1][0] != int64(3) || cols[2][0] != int64(3) ||
		cols[0][1] != int64(2) || cols[1][1] != int64(5) || cols[2][1] != int64(8) || cols[3][1] != "rollout" {
		t.Fatalf("per step: %v", cols)
	}
	cols = query(t, db, `SELECT typeof(step), typeof(stage), typeof(id) FROM log LIMIT 1`, nil)
	if cols[0][0] != "BIGINT" || cols[1][0] != "VARCHAR" || cols[2][0] != "BIGINT" {
		t.Fatalf("types %v", cols)
	}
}

func TestAppendTableByName(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	step := func(s int64) []Column { return []Column{{Name: "step", Value: s}} }
	if err := db.AppendTable(ctx, "t", smallReader(t, []int64{1, 2}, false), step(1)); err != nil {
		t.Fatal(err)
	}
	// An extra column: the table gains it; old rows get NULL.
	if err := db.AppendTable(ctx, "t", smallReader(t, []int64{3, 4, 5}, true), step(2)); err != nil {
		t.Fatal(err)
	}
	// A missing column: NULL for the new rows.
	if err := db.AppendTable(ctx, "t", smallReader(t, []int64{6}, false), step(3)); err != nil {
		t.Fatal(err)
	}
	cols := query(t, db, `SELECT step, count(*) AS n, count(note) AS notes FROM t GROUP BY step ORDER BY step`, nil)
	want := [][]any{{int64(1), int64(2), int64(3)}, {int64(2), int64(3), int64(1)}, {int64(0), int64(3), int64(0)}}
	for c := range want {
		for r := range want[c] {
			if cols[c][r] != want[c][r] {
				t.Fatalf("per step (step, n, notes): got %v, want %v", cols, want)
			}
		}
	}
	cols = query(t, db, `SELECT note FROM t WHERE id = 4`, nil)
	if cols[0][0] != "ne" {
		t.Fatalf("note of id 4: %v", cols[0][0])
	}

	// Appending without constant columns to a table that has them: NULL.
	if err := db.AppendTable(ctx, "t", smallReader(t, []int64{9}, true), nil); err != nil {
		t.Fatal(err)
	}
	cols = query(t, db, `SELECT step FROM t WHERE id = 9`, nil)
	if cols[0][0] != nil {
		t.Fatalf("step of id 9: %v", cols[0][0])
	}
	// A new constant column on an existing table is added.
	if err := db.AppendTable(ctx, "t", smallReader(t, []int64{10}, false), []Column{{Name: "stage", Value: "eval"}}); err != nil {
		t.Fatal(err)
	}
	cols = query(t, db, `SELECT count(stage), max(stage) FROM t`, nil)
	if cols[0][0] != int64(1) || cols[1][0] != "eval" {
		t.Fatalf("stage: %v", cols)
	}
}

func TestAppendTableAppendsToLoadedTable(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	if err := db.LoadTable(ctx, "base", smallReader(t, []int64{1, 2}, true)); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendTable(ctx, "base", smallReader(t, []int64{3}, true), nil); err != nil {
		t.Fatal(err)
	}
	cols := query(t, db, `SELECT count(*) FROM base`, nil)
	if cols[0][0] != int64(3) {
		t.Fatalf("count %v", cols[0][0])
	}
}

func TestAppendTableErrors(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	err := db.AppendTable(ctx, "t", smallReader(t, []int64{1}, false), []Column{{Name: "ID", Value: int64(1)}})
	if err == nil || !strings.Contains(err.Error(), `append to table "t"`) || !strings.Contains(err.Error(), `"ID"`) {
		t.Fatalf("clashing constant column: %v", err)
	}
	err = db.AppendTable(ctx, "t", smallReader(t, []int64{1}, false), []Column{{Name: "step", Value: nil}})
	if err == nil || !strings.Contains(err.Error(), "nil value") {
		t.Fatalf("nil constant: %v", err)
	}
	// A type clash rolls the whole append back.
	if err := db.Exec(ctx, `CREATE TEMP TABLE typed (id BIGINT, note DATE)`, nil); err != nil {
		t.Fatal(err)
	}
	err = db.AppendTable(ctx, "typed", smallReader(t, []int64{1}, true), []Column{{Name: "extra", Value: int64(1)}})
	if err == nil || !strings.Contains(err.Error(), `append to table "typed"`) {
		t.Fatalf("type clash: %v", err)
	}
	rr, err := db.Query(ctx, `SELECT * FROM typed`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := rr.Schema().NumFields(); n != 2 {
		t.Errorf("the failed append left %d columns, want 2", n)
	}
	rr.Release()
	cols := query(t, db, `SELECT count(*) FROM duckdb_tables() WHERE starts_with(table_name, '__evosteer_')`, nil)
	if cols[0][0] != int64(0) {
		t.Errorf("staging tables left: %v", cols[0][0])
	}
	// The database is still usable (the transaction was closed).
	if err := db.AppendTable(ctx, "typed", smallReader(t, []int64{2}, false), nil); err != nil {
		t.Fatal(err)
	}
}
