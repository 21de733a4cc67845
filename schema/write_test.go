package schema

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestBytesIndependentOfChunking: DuckDB hands back 2,048-row batches with
// its own buffer layout; the file must not depend on that.
func TestBytesIndependentOfChunking(t *testing.T) {
	const rows = 70_000 // more than one output batch
	rec := randomBatch(Decisions.Schema, rows, 42, map[string]bool{})
	defer rec.Release()
	dir := t.TempDir()

	one := filepath.Join(dir, "one.arrow")
	if err := Decisions.WriteBatches(one, testLineage, rec); err != nil {
		t.Fatal(err)
	}
	want := readBytes(t, one)

	sliced := chunks(t, rec, 2048, false)
	defer release(sliced)
	copied := chunks(t, rec, 2048, true)
	defer release(copied)
	odd := chunks(t, rec, 999, true)
	defer release(odd)

	// DuckDB-shaped: nullable everything, elements named "l", columns shuffled.
	ds := duckSchema(Decisions.Schema)
	duck := randomBatch(ds, rows, 42, map[string]bool{})
	defer duck.Release()
	perm := make([]int, len(ds.Fields())) // every column moved: reversed order
	for i := range perm {
		perm[i] = len(perm) - 1 - i
	}
	shuf := shuffled(duck, perm)
	defer shuf.Release()
	duckChunks := chunks(t, shuf, 2048, true)
	defer release(duckChunks)

	for name, batches := range map[string][]arrow.RecordBatch{
		"sliced-2048": sliced, "copied-2048": copied, "copied-999": odd, "duckdb-2048": duckChunks,
	} {
		p := filepath.Join(dir, name+".arrow")
		if err := Decisions.WriteBatches(p, testLineage, batches...); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := readBytes(t, p); !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes differ from the single-batch file (%d bytes)", name, len(got), len(want))
		}
	}

	// Same input, second write: same bytes.
	again := filepath.Join(dir, "again.arrow")
	if err := Decisions.WriteBatches(again, testLineage, rec); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readBytes(t, again), want) {
		t.Error("rewriting the same data changed the bytes")
	}

	// A different lineage must change the bytes (metadata is really stored).
	lin := testLineage
	lin.Step = 8
	other := filepath.Join(dir, "other.arrow")
	if err := Decisions.WriteBatches(other, lin, rec); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(readBytes(t, other), want) {
		t.Error("lineage does not reach the file")
	}
}

// TestCompressConcurrencyDeterministic justifies compressing with several
// goroutines: the bytes must not depend on how many.
func TestCompressConcurrencyDeterministic(t *testing.T) {
	rec := randomBatch(Decisions.Schema, 5000, 3, nil)
	defer rec.Release()
	defer func(n int) { compressConcurrency = n }(compressConcurrency)
	var files [][]byte
	for _, n := range []int{1, 4} {
		compressConcurrency = n
		p := filepath.Join(t.TempDir(), "d.arrow")
		if err := Decisions.WriteBatches(p, testLineage, rec); err != nil {
			t.Fatal(err)
		}
		files = append(files, readBytes(t, p))
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Error("file bytes depend on compression concurrency")
	}
}

func TestBatchSizes(t *testing.T) {
	const rows = 150_000
	rec := randomBatch(Scores.Schema, rows, 9, nil)
	defer rec.Release()
	in := chunks(t, rec, 2048, false)
	defer release(in)
	p := filepath.Join(t.TempDir(), "scores.arrow")
	if err := Scores.WriteBatches(p, testLineage, in...); err != nil {
		t.Fatal(err)
	}
	f, err := Scores.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.NumRows != rows {
		t.Errorf("NumRows = %d", f.NumRows)
	}
	rr, err := f.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	var sizes []int64
	for rr.Next() {
		sizes = append(sizes, rr.RecordBatch().NumRows())
	}
	if err := rr.Err(); err != nil {
		t.Fatal(err)
	}
	want := []int64{MaxBatchRows, MaxBatchRows, rows - 2*MaxBatchRows}
	if len(sizes) != 3 || sizes[0] != want[0] || sizes[1] != want[1] || sizes[2] != want[2] {
		t.Errorf("batch sizes %v, want %v", sizes, want)
	}
}

// TestRetype: DuckDB-typed input (all nullable, elements "l", shuffled
// columns) is written with the declared schema and reads back equal.
func TestRetype(t *testing.T) {
	for _, tbl := range []*Table{Decisions, Skills, ValueData, Ledger} {
		t.Run(tbl.Name, func(t *testing.T) {
			nulls := map[string]bool{}
			for _, f := range tbl.Schema.Fields() {
				nulls[f.Name] = f.Nullable
			}
			duck := randomBatch(duckSchema(tbl.Schema), 3000, 5, nulls)
			defer duck.Release()
			n := duck.NumCols()
			perm := make([]int, n)
			for i := range perm {
				perm[i] = int(n) - 1 - i
			}
			shuf := shuffled(duck, perm)
			defer shuf.Release()
			if Conforms(tbl.Schema, shuf.Schema()) != nil || shuf.Schema().Equal(tbl.Schema) {
				t.Fatal("test input should conform without being equal")
			}
			in := chunks(t, shuf, 2048, true)
			defer release(in)
			p := filepath.Join(t.TempDir(), tbl.Name+".arrow")
			if err := tbl.WriteBatches(p, testLineage, in...); err != nil {
				t.Fatal(err)
			}
			cols := readColumns(t, tbl, p, 3000)
			compareColumns(t, tbl, cols, shuf)
			for _, c := range cols {
				c.Release()
			}
		})
	}
}

// writeErr runs a failing write into an empty folder and checks the error
// and that nothing (no file, no temp file) is left behind.
func writeErr(t *testing.T, tbl *Table, want []string, batches ...arrow.RecordBatch) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, tbl.Name+".arrow")
	err := tbl.WriteBatches(p, testLineage, batches...)
	if err == nil {
		t.Fatal("write succeeded")
	}
	for _, w := range append([]string{p}, want...) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	if names := dirEntries(t, dir); len(names) != 0 {
		t.Errorf("failed write left %v", names)
	}
}

// dropColumn returns rec without the named column.
func dropColumn(rec arrow.RecordBatch, name string) arrow.RecordBatch {
	var perm []int
	for i, f := range rec.Schema().Fields() {
		if f.Name != name {
			perm = append(perm, i)
		}
	}
	return shuffled(rec, perm)
}

// withColumn returns rec with column name replaced (or appended) by arr.
func withColumn(rec arrow.RecordBatch, f arrow.Field, arr arrow.Array) arrow.RecordBatch {
	fs := rec.Schema().Fields()
	cols := append([]arrow.Array(nil), rec.Columns()...)
	if idx := rec.Schema().FieldIndices(f.Name); len(idx) > 0 {
		fs[idx[0]], cols[idx[0]] = f, arr
	} else {
		fs, cols = append(fs, f), append(cols, arr)
	}
	return array.NewRecordBatch(arrow.NewSchema(fs, nil), cols, rec.NumRows())
}

func TestWriteErrors(t *testing.T) {
	mem := memory.DefaultAllocator
	rec := randomBatch(Episodes.Schema, 100, 11, nil)
	defer rec.Release()

	t.Run("missing column", func(t *testing.T) {
		r := dropColumn(rec, "reward")
		defer r.Release()
		writeErr(t, Episodes, []string{`column "reward": missing`}, r)
	})
	t.Run("extra column", func(t *testing.T) {
		r := withColumn(rec, arrow.Field{Name: "bonus", Type: arrow.PrimitiveTypes.Float64}, rec.Column(11))
		defer r.Release()
		writeErr(t, Episodes, []string{`column "bonus"`, "not declared"}, r)
	})
	t.Run("wrong type", func(t *testing.T) {
		r := withColumn(rec, arrow.Field{Name: "reward", Type: arrow.PrimitiveTypes.Int64}, rec.Column(17))
		defer r.Release()
		writeErr(t, Episodes, []string{`column "reward"`, "int64", "float64"}, r)
	})
	t.Run("null in non-nullable", func(t *testing.T) {
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		for i := range 100 {
			if i == 37 {
				b.AppendNull()
			} else {
				b.Append(0.5)
			}
		}
		arr := b.NewArray()
		defer arr.Release()
		r := withColumn(rec, arrow.Field{Name: "reward", Type: arrow.PrimitiveTypes.Float64, Nullable: true}, arr)
		defer r.Release()
		// second batch: the row number counts across batches
		writeErr(t, Episodes, []string{`column "reward"`, "null at row 137"}, rec, r)
	})
	t.Run("null list element", func(t *testing.T) {
		dt := duckType(Skills.Schema.Field(7).Type)
		lb := array.NewListBuilder(mem, dt.(*arrow.ListType).Elem())
		defer lb.Release()
		vb := lb.ValueBuilder().(*array.StringBuilder)
		for i := range 10 {
			lb.Append(true)
			vb.Append("x")
			if i == 6 {
				vb.AppendNull()
			}
		}
		arr := lb.NewArray()
		defer arr.Release()
		sk := randomBatch(Skills.Schema, 10, 1, nil)
		defer sk.Release()
		r := withColumn(sk, arrow.Field{Name: "plan", Type: arr.DataType(), Nullable: true}, arr)
		defer r.Release()
		writeErr(t, Skills, []string{`column "plan"`, "null element at row 6"}, r)
	})
	t.Run("reader error", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "episodes.arrow")
		rr := &errReader{sliceReader: sliceReader{schema: rec.Schema(), recs: []arrow.RecordBatch{rec}}}
		err := Episodes.Write(p, testLineage, rr)
		if err == nil || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), p) {
			t.Errorf("error = %v", err)
		}
		if names := dirEntries(t, dir); len(names) != 0 {
			t.Errorf("failed write left %v", names)
		}
	})
	t.Run("negative step", func(t *testing.T) {
		lin := testLineage
		lin.Step = -1
		if err := Episodes.WriteBatches(filepath.Join(t.TempDir(), "e.arrow"), lin, rec); err == nil {
			t.Error("negative step accepted")
		}
	})
}

type errReader struct{ sliceReader }

func (r *errReader) Err() error { return errors.New("boom") }

func TestWriteReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "scores.arrow")
	a := randomBatch(Scores.Schema, 10, 1, nil)
	defer a.Release()
	b := randomBatch(Scores.Schema, 20, 2, nil)
	defer b.Release()
	if err := Scores.WriteBatches(p, testLineage, a); err != nil {
		t.Fatal(err)
	}
	old := readBytes(t, p)
	// A failing write must leave the previous file untouched.
	bad := dropColumn(b, "t")
	defer bad.Release()
	if err := Scores.WriteBatches(p, testLineage, bad); err == nil {
		t.Fatal("bad write succeeded")
	}
	if !bytes.Equal(readBytes(t, p), old) {
		t.Error("failed write changed the existing file")
	}
	if err := Scores.WriteBatches(p, testLineage, b); err != nil {
		t.Fatal(err)
	}
	f, err := Scores.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.NumRows != 20 {
		t.Errorf("NumRows = %d after replace", f.NumRows)
	}
	if names := dirEntries(t, dir); len(names) != 1 {
		t.Errorf("folder holds %v", names)
	}
}
