//go:build duckdb_arrow

package duck

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func openTest(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return db
}

// mixedRows is the plain-Go copy of the table built by mixedReader.
type mixedRows struct {
	key  []int64
	a, b []float64
	s    []string
	flag []bool
}

var mixedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.PrimitiveTypes.Int64},
	{Name: "a", Type: arrow.PrimitiveTypes.Float64},
	{Name: "b", Type: arrow.PrimitiveTypes.Float64},
	{Name: "s", Type: arrow.BinaryTypes.String},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean},
}, nil)

// mixedReader returns n rows of mixed types in batches of the given sizes
// (cycled), with key in 0..6.
func mixedReader(t *testing.T, n int, batchSizes []int, seed uint64) (array.RecordReader, mixedRows) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 99))
	var rows mixedRows
	var batches []arrow.RecordBatch
	b := array.NewRecordBuilder(memory.DefaultAllocator, mixedSchema)
	defer b.Release()
	done := 0
	for i := 0; done < n; i++ {
		size := min(batchSizes[i%len(batchSizes)], n-done)
		for j := 0; j < size; j++ {
			k := int64(rng.IntN(7))
			a := rng.Float64()
			bv := rng.NormFloat64()*100 + float64(k)
			s := fmt.Sprintf("s%d-%d", k, rng.IntN(1000))
			f := rng.IntN(3) != 0
			b.Field(0).(*array.Int64Builder).Append(k)
			b.Field(1).(*array.Float64Builder).Append(a)
			b.Field(2).(*array.Float64Builder).Append(bv)
			b.Field(3).(*array.StringBuilder).Append(s)
			b.Field(4).(*array.BooleanBuilder).Append(f)
			rows.key = append(rows.key, k)
			rows.a = append(rows.a, a)
			rows.b = append(rows.b, bv)
			rows.s = append(rows.s, s)
			rows.flag = append(rows.flag, f)
		}
		batches = append(batches, b.NewRecordBatch())
		done += size
	}
	rr, err := array.NewRecordReader(mixedSchema, batches)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range batches {
		rec.Release()
	}
	t.Cleanup(rr.Release)
	return rr, rows
}

// readAll copies the reader's rows column by column into Go values and
// releases it.
func readAll(t *testing.T, rr array.RecordReader) [][]any {
	t.Helper()
	defer rr.Release()
	ncol := rr.Schema().NumFields()
	cols := make([][]any, ncol)
	for rr.Next() {
		rec := rr.RecordBatch()
		for c := 0; c < ncol; c++ {
			col := rec.Column(c)
			for i := 0; i < col.Len(); i++ {
				if col.IsNull(i) {
					cols[c] = append(cols[c], nil)
					continue
				}
				v := col.GetOneForMarshal(i)
				if s, ok := v.(string); ok {
					// Strings point into the batch's buffers, which DuckDB
					// frees on the next Next or Release: copy them.
					v = strings.Clone(s)
				}
				cols[c] = append(cols[c], v)
			}
		}
	}
	if err := rr.Err(); err != nil {
		t.Fatal(err)
	}
	return cols
}

func query(t *testing.T, db *DB, q string, params map[string]any) [][]any {
	t.Helper()
	rr, err := db.Query(context.Background(), q, params)
	if err != nil {
		t.Fatal(err)
	}
	return readAll(t, rr)
}

func closeRel(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}

// TestLoadTableViewPitfall pins ARCHITECTURE.md §10: querying a registered Arrow view
// directly gives wrong answers, so LoadTable materialises it. A projected,
// filtered GROUP BY run twice, and a second projection, must match plain Go.
func TestLoadTableViewPitfall(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	const n = 12_345
	rr, rows := mixedReader(t, n, []int{1000, 3001, 777, 2048}, 1)
	if err := db.LoadTable(ctx, "t", rr); err != nil {
		t.Fatal(err)
	}

	// Plain Go.
	type agg struct {
		sum   float64
		count int64
	}
	want := map[int64]*agg{}
	var sumA float64
	for i := range rows.key {
		sumA += rows.a[i]
		if rows.flag[i] && rows.a[i] > 0.3 {
			g := want[rows.key[i]]
			if g == nil {
				g = &agg{}
				want[rows.key[i]] = g
			}
			g.sum += rows.b[i]
			g.count++
		}
	}
	if len(want) != 7 {
		t.Fatalf("test data has %d groups, want 7", len(want))
	}

	const q = `SELECT key, sum(b) AS sb, count(*) AS n FROM t WHERE flag AND a > 0.3 GROUP BY key ORDER BY key`
	for run := 1; run <= 2; run++ {
		cols := query(t, db, q, nil)
		if len(cols[0]) != len(want) {
			t.Fatalf("run %d: %d groups, want %d", run, len(cols[0]), len(want))
		}
		for i := range cols[0] {
			k := cols[0][i].(int64)
			w := want[k]
			if w == nil {
				t.Fatalf("run %d: unexpected key %d", run, k)
			}
			if got := cols[2][i].(int64); got != w.count {
				t.Errorf("run %d key %d: count %d, want %d", run, k, got, w.count)
			}
			if got := cols[1][i].(float64); !closeRel(got, w.sum) {
				t.Errorf("run %d key %d: sum(b) %.12g, want %.12g", run, k, got, w.sum)
			}
		}
	}

	cols := query(t, db, `SELECT sum(a) AS sa, count(*) AS n FROM t`, nil)
	if got := cols[0][0].(float64); !closeRel(got, sumA) {
		t.Errorf("sum(a) = %.12g, want %.12g", got, sumA)
	}
	if got := cols[1][0].(int64); got != n {
		t.Errorf("count(*) = %d, want %d", got, n)
	}

	// A string column and the boolean survive too.
	cols = query(t, db, `SELECT s, flag FROM t WHERE rowid = 4321`, nil)
	if cols[0][0] != rows.s[4321] || cols[1][0] != rows.flag[4321] {
		t.Errorf("row 4321: got (%v, %v), want (%v, %v)", cols[0][0], cols[1][0], rows.s[4321], rows.flag[4321])
	}

	// No internal view or staging table is left behind.
	cols = query(t, db, `SELECT count(*) FROM duckdb_views() WHERE starts_with(view_name, '__evosteer_')`, nil)
	if cols[0][0].(int64) != 0 {
		t.Errorf("internal views left: %v", cols[0][0])
	}
}

func TestLoadTableExistingNameFails(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	rr, _ := mixedReader(t, 10, []int{10}, 2)
	if err := db.LoadTable(ctx, "Dup", rr); err != nil {
		t.Fatal(err)
	}
	rr2, _ := mixedReader(t, 10, []int{10}, 3)
	err := db.LoadTable(ctx, "dup", rr2)
	if err == nil || !strings.Contains(err.Error(), `load table "dup"`) || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("loading a second table of the same name: err = %v", err)
	}
}

func TestLoadTableEmptyReaderKeepsColumns(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	rr, err := array.NewRecordReader(mixedSchema, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	if err := db.LoadTable(ctx, "empty", rr); err != nil {
		t.Fatal(err)
	}
	cols := query(t, db, `SELECT count(*) FROM empty`, nil)
	if cols[0][0].(int64) != 0 {
		t.Fatalf("count = %v", cols[0][0])
	}
	out, err := db.Query(ctx, `SELECT * FROM empty`, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if got := out.Schema().NumFields(); got != mixedSchema.NumFields() {
		t.Fatalf("empty table has %d columns, want %d", got, mixedSchema.NumFields())
	}
}

// failingReader yields its first batch, then fails.
type failingReader struct {
	array.RecordReader
	n   int
	err error
}

func (f *failingReader) Next() bool {
	if f.n >= 1 {
		f.err = fmt.Errorf("disk on fire")
		return false
	}
	f.n++
	return f.RecordReader.Next()
}

func (f *failingReader) Err() error { return f.err }

func TestLoadTableReaderErrorLeavesNoTable(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	rr, _ := mixedReader(t, 100, []int{10}, 4)
	err := db.LoadTable(ctx, "broken", &failingReader{RecordReader: rr})
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err = %v, want the reader's error", err)
	}
	cols := query(t, db, `SELECT count(*) FROM duckdb_tables() WHERE table_name = 'broken'`, nil)
	if cols[0][0].(int64) != 0 {
		t.Fatal("a table was left after the reader failed")
	}
}

func TestQueryErrorKeepsDuckDBMessage(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	_, err := db.Query(ctx, `SELECT * FROM no_such_table_xyz`, nil)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"Catalog Error", "no_such_table_xyz", "does not exist"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	_, err = db.Query(ctx, `SELEC 1`, nil)
	if err == nil || !strings.Contains(err.Error(), `Parser Error: syntax error at or near "SELEC"`) {
		t.Errorf("syntax error: %v", err)
	}
	err = db.Exec(ctx, `DROP TABLE no_such_table_xyz`, nil)
	if err == nil || !strings.Contains(err.Error(), "no_such_table_xyz") {
		t.Errorf("exec error: %v", err)
	}
}

func TestQueryTakesOneStatement(t *testing.T) {
	db := openTest(t)
	_, err := db.Query(context.Background(), `CREATE TEMP TABLE x AS SELECT 1 AS a; SELECT * FROM x`, nil)
	if err == nil || !strings.Contains(err.Error(), "more than one statement") {
		t.Fatalf("err = %v", err)
	}
	// Nothing ran.
	cols := query(t, db, `SELECT count(*) FROM duckdb_tables() WHERE table_name = 'x'`, nil)
	if cols[0][0].(int64) != 0 {
		t.Fatal("the first statement ran")
	}
}

func TestExecRunsSeveralStatements(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	err := db.Exec(ctx, `CREATE TEMP TABLE x (a BIGINT, s VARCHAR); INSERT INTO x VALUES ($a, $s)`,
		map[string]any{"a": 7, "s": "seven"})
	if err != nil {
		t.Fatal(err)
	}
	cols := query(t, db, `SELECT a, s FROM x`, nil)
	if cols[0][0] != int64(7) || cols[1][0] != "seven" {
		t.Fatalf("got %v", cols)
	}
	// Parameters in an earlier statement are refused.
	err = db.Exec(ctx, `INSERT INTO x VALUES ($a, 'x'); SELECT 1`, map[string]any{"a": 1})
	if err == nil || !strings.Contains(err.Error(), "last statement") {
		t.Fatalf("err = %v", err)
	}
}

func TestRunFileCatalog(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	for _, name := range []string{"rollout_steps", "rollout_tasks", "pairs"} {
		rr, _ := mixedReader(t, 3000, []int{2048}, 5)
		if err := db.LoadTable(ctx, name, rr); err != nil {
			t.Fatal(err)
		}
	}
	rr, err := db.RunFile(ctx, "catalog", map[string]any{"prefix": "rollout_"})
	if err != nil {
		t.Fatal(err)
	}
	if got := rr.Schema().Field(0).Name; got != "table_name" {
		t.Errorf("first column %q", got)
	}
	cols := readAll(t, rr)
	if len(cols[0]) != 2 || cols[0][0] != "rollout_steps" || cols[0][1] != "rollout_tasks" {
		t.Fatalf("tables %v", cols[0])
	}
	if cols[1][0].(int64) != 5 || cols[2][0].(int64) != 3000 || cols[3][0] != true {
		t.Fatalf("row %v %v %v", cols[1][0], cols[2][0], cols[3][0])
	}

	rr, err = db.RunFile(ctx, "catalog.sql", map[string]any{"prefix": ""})
	if err != nil {
		t.Fatal(err)
	}
	if cols := readAll(t, rr); len(cols[0]) != 3 {
		t.Fatalf("all tables: %v", cols[0])
	}

	_, err = db.RunFile(ctx, "catalogue", nil)
	if err == nil || !strings.Contains(err.Error(), `"catalogue"`) || !strings.Contains(err.Error(), "available: ") ||
		!strings.Contains(err.Error(), "catalog") {
		t.Fatalf("unknown file: %v", err)
	}
	_, err = db.RunFile(ctx, "catalog", nil)
	if err == nil || !strings.Contains(err.Error(), "catalog.sql") || !strings.Contains(err.Error(), "$prefix") {
		t.Fatalf("missing parameter: %v", err)
	}
}

func TestClosedDB(t *testing.T) {
	db, err := Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := db.Query(context.Background(), "SELECT 1", nil); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("query after close: %v", err)
	}
}

// TestReaderOutlivesLaterCalls: results are materialised, so a reader can be
// read after other calls ran, even after its table was dropped.
func TestReaderOutlivesLaterCalls(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	rr, rows := mixedReader(t, 10_000, []int{2500}, 6)
	if err := db.LoadTable(ctx, "t", rr); err != nil {
		t.Fatal(err)
	}
	out, err := db.Query(ctx, `SELECT a FROM t ORDER BY rowid`, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if !out.Next() {
		t.Fatal(out.Err())
	}
	got := append([]float64(nil), out.RecordBatch().Column(0).(*array.Float64).Float64Values()...)
	if err := db.Exec(ctx, `DROP TABLE t`, nil); err != nil {
		t.Fatal(err)
	}
	_ = query(t, db, `SELECT 1`, nil)
	for out.Next() {
		got = append(got, out.RecordBatch().Column(0).(*array.Float64).Float64Values()...)
	}
	if err := out.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows.a) {
		t.Fatalf("%d rows, want %d", len(got), len(rows.a))
	}
	for i := range got {
		if got[i] != rows.a[i] {
			t.Fatalf("row %d: %v, want %v", i, got[i], rows.a[i])
		}
	}
}

func TestConcurrentCalls(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	readers := make([]array.RecordReader, 8)
	for g := range readers {
		readers[g], _ = mixedReader(t, 3000, []int{1000}, uint64(g))
	}
	errs := make(chan error, 8)
	for g, rr := range readers {
		go func() {
			name := fmt.Sprintf("c%d", g)
			if err := db.LoadTable(ctx, name, rr); err != nil {
				errs <- err
				return
			}
			out, err := db.Query(ctx, `SELECT count(*) AS n FROM `+name+` WHERE key >= $k`, map[string]any{"k": 0})
			if err != nil {
				errs <- err
				return
			}
			defer out.Release()
			if !out.Next() || out.RecordBatch().Column(0).(*array.Int64).Value(0) != 3000 {
				errs <- fmt.Errorf("%s: bad count (%v)", name, out.Err())
				return
			}
			errs <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestRetainedBatchSurvivesNext pins the batch lifetime rule of the package
// doc: a retained batch stays valid after the reader moves on.
func TestRetainedBatchSurvivesNext(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	rr, rows := mixedReader(t, 5000, []int{5000}, 7)
	if err := db.LoadTable(ctx, "t", rr); err != nil {
		t.Fatal(err)
	}
	out, err := db.Query(ctx, `SELECT s FROM t ORDER BY rowid`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Next() {
		t.Fatal(out.Err())
	}
	first := out.RecordBatch()
	first.Retain()
	defer first.Release()
	for out.Next() {
	}
	out.Release()
	col := first.Column(0).(*array.String)
	for i := 0; i < col.Len(); i++ {
		if col.Value(i) != rows.s[i] {
			t.Fatalf("row %d: %q, want %q", i, col.Value(i), rows.s[i])
		}
	}
}

// After Seal no statement reaches a file or switches access back on; loaded tables are still
// queried, and Arrow readers still load.
func TestSealCutsFileAccess(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	rr, rows := mixedReader(t, 100, []int{30}, 1)
	defer rr.Release()
	if err := db.LoadTable(ctx, "t", rr); err != nil {
		t.Fatal(err)
	}
	if err := db.Seal(ctx); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "out.csv")
	for _, q := range []string{
		"COPY t TO '" + target + "'",
		"ATTACH '" + target + ".db' AS x",
		"SELECT * FROM read_csv('" + target + "')",
		"SET enable_external_access = true",
		"SET lock_configuration = false",
	} {
		err := db.Exec(ctx, q, nil)
		if !errors.Is(err, ErrSealed) {
			t.Errorf("%s: %v, want ErrSealed", q, err)
		}
	}
	if ents, _ := os.ReadDir(filepath.Dir(target)); len(ents) != 0 {
		t.Errorf("files written: %v", ents)
	}
	if got := query(t, db, "SELECT count(*) FROM t", nil); got[0][0] != int64(len(rows.key)) {
		t.Errorf("count %v", got)
	}
	more, _ := mixedReader(t, 10, []int{10}, 2)
	defer more.Release()
	if err := db.LoadTable(ctx, "u", more); err != nil {
		t.Fatalf("load after Seal: %v", err)
	}
}

// TestSealLeavesNoDirectoryToWrite: DuckDB lets statements open files under its temporary
// directory (.tmp in the working directory by default) even with external access off, and spills
// a big query there. A sealed database has none: a COPY into .tmp, by a relative or an absolute
// path, is refused, and a query beyond memory_limit fails instead of spilling; no file appears.
func TestSealLeavesNoDirectoryToWrite(t *testing.T) {
	ctx := context.Background()
	cwd := t.TempDir()
	t.Chdir(cwd)
	tmp := filepath.Join(cwd, ".tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	db := openTest(t)
	if err := db.Exec(ctx, "SET memory_limit = '32MB'", nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Seal(ctx); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"COPY (SELECT 1) TO '.tmp/x.csv'",
		"COPY (SELECT 1) TO '" + filepath.ToSlash(filepath.Join(tmp, "x.csv")) + "'",
		"EXPORT DATABASE '.tmp/export'",
	} {
		if err := db.Exec(ctx, q, nil); !errors.Is(err, ErrSealed) {
			t.Errorf("%s: %v, want ErrSealed", q, err)
		}
	}
	got := query(t, db, "SELECT current_setting('temp_directory') AS t, current_setting('allowed_directories')::VARCHAR AS a", nil)
	if got[0][0] != "" || got[1][0] != "[]" {
		t.Errorf("temp_directory, allowed_directories: %q", got)
	}
	rr, err := db.Query(ctx, "SELECT count(*) FROM (SELECT random() AS x, range AS r FROM range(5000000) ORDER BY x)", nil)
	if err == nil {
		rr.Release()
		t.Error("a query beyond memory_limit ran (so it spilled to disk)")
	} else if !strings.Contains(err.Error(), "Out of Memory") {
		t.Errorf("a query beyond memory_limit: %v", err)
	}
	for _, d := range []string{cwd, tmp} {
		if ents, _ := os.ReadDir(d); len(ents) != map[string]int{cwd: 1, tmp: 0}[d] {
			t.Errorf("%s holds %v", d, ents)
		}
	}
}

// TestSealedQueryRunsReadingStatementsOnly: on a sealed database Query refuses, before running
// it, every statement that does not read (ErrSealed, naming its kind), and runs the reading ones.
func TestSealedQueryRunsReadingStatementsOnly(t *testing.T) {
	ctx := context.Background()
	db := openTest(t)
	if err := db.Seal(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(ctx, "CREATE TEMP TABLE t AS SELECT 1 AS x", nil); err != nil {
		t.Fatal(err)
	}
	for q, kind := range map[string]string{
		"ATTACH ':memory:' AS m": "ATTACH", "DETACH m": "DETACH", "SET threads = 1": "SET", "SET VARIABLE v = 1": "SET",
		"CHECKPOINT": "CALL", "CALL pragma_table_info('t')": "CALL", "INSTALL httpfs": "INSTALL or LOAD", "LOAD httpfs": "INSTALL or LOAD",
		"INSERT INTO t VALUES (2)": "INSERT", "UPDATE t SET x = 3": "UPDATE", "DELETE FROM t": "DELETE",
		"CREATE TABLE u AS SELECT 1": "CREATE", "DROP TABLE t": "DROP", "ALTER TABLE t ADD COLUMN y INT": "ALTER",
	} {
		rr, err := db.Query(ctx, q, nil)
		if err == nil {
			rr.Release()
		}
		if !errors.Is(err, ErrSealed) || !strings.Contains(err.Error(), kind+" statement refused") {
			t.Errorf("%s: %v, want ErrSealed naming %s", q, err, kind)
		}
	}
	for _, q := range []string{"SELECT x FROM t", "FROM t", "WITH a AS (SELECT 1) SELECT * FROM a", "VALUES (1)", "DESCRIBE t", "SHOW TABLES", "SUMMARIZE t", "PRAGMA table_info('t')", "EXPLAIN SELECT * FROM t"} {
		rr, err := db.Query(ctx, q, nil)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		rr.Release()
	}
	if got := query(t, db, "SELECT count(*) FROM t", nil); got[0][0] != int64(1) {
		t.Errorf("t changed: %v", got)
	}
}
