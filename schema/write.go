package schema

import (
	"bufio"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/evosteer/evosteer-go/internal/atomicfile"
)

// MaxBatchRows is the number of rows per written record batch (the last
// batch of a file may be shorter). Fixing it makes the file bytes
// independent of how the input was chunked (DuckDB returns 2,048-row
// batches, builders return whatever they were given).
const MaxBatchRows = 65536

// compressConcurrency is the number of goroutines compressing the buffers of
// one batch. Each buffer is compressed on its own (the encoder is reset per
// buffer), so the bytes do not depend on it
// (TestCompressConcurrencyDeterministic).
var compressConcurrency = runtime.NumCPU()

// Write writes every batch of rr to path as a zstd-compressed Arrow IPC file
// with the declared schema and lin as metadata.
//
// Columns are matched by name, so the input may order them differently, mark
// them nullable, or name list elements differently (DuckDB's "l"); they are
// re-typed to the declared types without copying values. A missing, extra or
// mistyped column, or a null in a non-nullable column (or list element), is
// an error naming the column (and the row, counted from 0 over the whole
// input), and so is a value outside the table's domain rules, which every
// reader checks. Rows are re-chunked into batches of MaxBatchRows.
//
// The write is atomic: the file appears complete under path or not at all,
// and a failed write leaves no temporary file. The parent folder is created
// if needed. rr is not released.
func (t *Table) Write(path string, lin Lineage, rr array.RecordReader) error {
	return t.write(path, lin, rr, true)
}

// write is Write; with checkDomains false it writes values the readers refuse, which only the
// tests of those readers do.
func (t *Table) write(path string, lin Lineage, rr array.RecordReader, checkDomains bool) (err error) {
	fail := func(err error) error { return fmt.Errorf("write %s: %w", path, err) }
	md, err := lin.metadata(t)
	if err != nil {
		return fail(err)
	}
	if err := Conforms(t.Schema, rr.Schema()); err != nil {
		return fail(err)
	}
	err = atomicfile.Write(path, 0o644, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		if err := t.encode(bw, md, rr, checkDomains); err != nil {
			return err
		}
		return bw.Flush()
	})
	return err // atomicfile.Write names the path
}

// WriteBatches is Write over the given batches (which may have different
// column orders or nullability from one another).
func (t *Table) WriteBatches(path string, lin Lineage, batches ...arrow.RecordBatch) error {
	s := t.Schema
	if len(batches) > 0 {
		s = batches[0].Schema()
	}
	rr := &sliceReader{schema: s, recs: batches}
	rr.refs.Store(1)
	return t.Write(path, lin, rr)
}

// encode streams rr into w as an IPC file. Any panic from arrow-go becomes
// an error so that a bad input never takes the process down.
func (t *Table) encode(w *bufio.Writer, md arrow.Metadata, rr array.RecordReader, checkDomains bool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error while encoding: %v", p)
		}
	}()
	mem := newAllocator()
	fileSchema := arrow.NewSchema(t.Schema.Fields(), &md)
	fw, err := ipc.NewFileWriter(w,
		ipc.WithSchema(fileSchema),
		ipc.WithZstd(),
		ipc.WithAllocator(mem),
		ipc.WithCompressConcurrency(compressConcurrency),
	)
	if err != nil {
		return err
	}
	ch := &rechunker{t: t, mem: mem, schema: fileSchema, w: fw, checkDomains: checkDomains}
	defer ch.release()
	for rr.Next() {
		if err := ch.add(rr.RecordBatch()); err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil {
		return fmt.Errorf("reading input: %w", err)
	}
	if err := ch.flush(0); err != nil {
		return err
	}
	return fw.Close()
}

// rechunker collects re-typed slices of input batches and writes them out as
// batches of exactly MaxBatchRows rows. Output columns are always freshly
// concatenated so that their buffers (validity bitmaps, offsets, padding) do
// not depend on the input's layout.
type rechunker struct {
	t       *Table
	mem     memory.Allocator
	schema  *arrow.Schema
	w       *ipc.FileWriter
	pending []arrow.RecordBatch // re-typed, declared column order
	rows    int64               // rows in pending
	seen    int64               // input rows seen before the current batch
	// checkDomains applies the readers' domain rules to every batch.
	checkDomains bool
}

func (c *rechunker) add(rec arrow.RecordBatch) error {
	n := rec.NumRows()
	if n == 0 {
		return nil
	}
	if err := Conforms(c.t.Schema, rec.Schema()); err != nil {
		return err // a reader may change schema between batches
	}
	cols := make([]arrow.Array, len(c.t.Schema.Fields()))
	defer func() {
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, f := range c.t.Schema.Fields() {
		in := rec.Column(rec.Schema().FieldIndices(f.Name)[0])
		if row := firstBad(in, f.Type, f.Nullable, 0); row >= 0 {
			what := "null"
			if f.Nullable || in.IsValid(row) {
				what = "null element"
			}
			return fmt.Errorf("column %q: %s at row %d (column is not nullable)", f.Name, what, c.seen+int64(row))
		}
		d := retype(in.Data(), f.Type)
		cols[i] = array.MakeFromData(d)
		d.Release()
	}
	batch := array.NewRecordBatch(c.t.Schema, cols, n)
	// The readers' domain rules hold for every file written: a value they would refuse (a
	// negative token count from a server, a non-finite weight) fails the write, so the stage
	// that made it is never recorded as done.
	if c.checkDomains {
		if err := c.t.checkRules(batch, c.seen); err != nil {
			batch.Release()
			return err
		}
	}
	c.pending = append(c.pending, batch)
	c.rows += n
	c.seen += n
	return c.flush(MaxBatchRows)
}

// flush writes batches while at least atLeast rows are pending (atLeast 0:
// write whatever is left).
func (c *rechunker) flush(atLeast int64) error {
	for c.rows > 0 && c.rows >= atLeast {
		size := min(c.rows, MaxBatchRows)
		var parts []arrow.RecordBatch
		var rest []arrow.RecordBatch
		need := size
		for _, r := range c.pending {
			switch {
			case need == 0:
				rest = append(rest, r)
			case r.NumRows() <= need:
				parts = append(parts, r)
				need -= r.NumRows()
			default:
				parts = append(parts, r.NewSlice(0, need))
				rest = append(rest, r.NewSlice(need, r.NumRows()))
				r.Release()
				need = 0
			}
		}
		c.pending, c.rows = rest, c.rows-size
		err := c.writeParts(parts, size)
		for _, p := range parts {
			p.Release()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *rechunker) writeParts(parts []arrow.RecordBatch, rows int64) error {
	cols := make([]arrow.Array, len(c.t.Schema.Fields()))
	defer func() {
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
	}()
	in := make([]arrow.Array, len(parts))
	for i := range cols {
		for j, p := range parts {
			in[j] = p.Column(i)
		}
		a, err := array.Concatenate(in, c.mem)
		if err != nil {
			return fmt.Errorf("column %q: %w", c.t.Schema.Field(i).Name, err)
		}
		cols[i] = a
	}
	rec := array.NewRecordBatch(c.schema, cols, rows)
	defer rec.Release()
	return c.w.Write(rec)
}

func (c *rechunker) release() {
	for _, r := range c.pending {
		r.Release()
	}
	c.pending = nil
}

// retype returns d with the declared type dt: same buffers, children re-typed
// recursively. This turns DuckDB's all-nullable, "l"-named list types into
// the declared ones without touching values. The caller releases the result.
func retype(d arrow.ArrayData, dt arrow.DataType) arrow.ArrayData {
	var children []arrow.ArrayData
	switch t := dt.(type) {
	case *arrow.ListType:
		children = []arrow.ArrayData{retype(d.Children()[0], t.Elem())}
	case *arrow.LargeListType:
		children = []arrow.ArrayData{retype(d.Children()[0], t.Elem())}
	case *arrow.FixedSizeListType:
		children = []arrow.ArrayData{retype(d.Children()[0], t.Elem())}
	case *arrow.StructType:
		for i, f := range t.Fields() {
			children = append(children, retype(d.Children()[i], f.Type))
		}
	default:
		children = d.Children()
		for _, c := range children {
			c.Retain() // balance the release below
		}
	}
	out := array.NewData(dt, d.Len(), d.Buffers(), children, d.NullN(), d.Offset())
	for _, c := range children {
		c.Release()
	}
	return out
}

// firstBad returns the first index >= from of arr that is null although
// the declaration (type dt, nullable) forbids it, at the top level or in a
// nested element, or -1. The declared type matters, not arr's: DuckDB marks
// every list element nullable. Only element ranges referenced by arr's rows
// are checked.
func firstBad(arr arrow.Array, dt arrow.DataType, nullable bool, from int) int {
	if !nullable && arr.NullN() > 0 {
		for i := from; i < arr.Len(); i++ {
			if arr.IsNull(i) {
				return i
			}
		}
	}
	n := arr.Len()
	switch a := arr.(type) {
	case array.ListLike:
		lt, ok := dt.(arrow.ListLikeType)
		if !ok {
			return -1
		}
		elem := lt.ElemField()
		child := a.ListValues()
		if from >= n || !hasNulls(child) {
			return -1
		}
		// Walk the bad element positions, mapping each to its row.
		i := from
		start, _ := a.ValueOffsets(i)
		for {
			j := int64(firstBad(child, elem.Type, elem.Nullable, int(start)))
			if j < 0 {
				return -1
			}
			for ; i < n; i++ {
				s, e := a.ValueOffsets(i)
				if j < s {
					break // j lies outside every row's range: look further
				}
				if j < e {
					return i
				}
			}
			if i >= n {
				return -1
			}
			start, _ = a.ValueOffsets(i)
		}
	case *array.Struct:
		st, ok := dt.(*arrow.StructType)
		if !ok {
			return -1
		}
		best := -1
		for k, f := range st.Fields() {
			if j := firstBad(a.Field(k), f.Type, f.Nullable, from); j >= 0 && (best < 0 || j < best) {
				best = j
			}
		}
		return best
	}
	return -1
}

// hasNulls is a cheap pre-check: a child without nulls anywhere in its tree
// cannot hold a bad element.
func hasNulls(arr arrow.Array) bool {
	if arr.NullN() > 0 {
		return true
	}
	switch a := arr.(type) {
	case array.ListLike:
		return hasNulls(a.ListValues())
	case *array.Struct:
		for k := range a.NumField() {
			if hasNulls(a.Field(k)) {
				return true
			}
		}
	}
	return false
}

// sliceReader is a RecordReader over a fixed list of batches. It is not array.NewRecordReader
// because that one refuses batches whose schemas differ from the first's, and WriteBatches
// accepts any batches that conform to the table (columns in another order, other nullability:
// DuckDB's output) and lets Write name the batch and column that does not.
type sliceReader struct {
	refs   atomic.Int64
	schema *arrow.Schema
	recs   []arrow.RecordBatch
	i      int
	cur    arrow.RecordBatch
}

func (r *sliceReader) Retain()               { r.refs.Add(1) }
func (r *sliceReader) Release()              { r.refs.Add(-1) }
func (r *sliceReader) Schema() *arrow.Schema { return r.schema }
func (r *sliceReader) Err() error            { return nil }
func (r *sliceReader) Next() bool {
	if r.i >= len(r.recs) {
		r.cur = nil
		return false
	}
	r.cur = r.recs[r.i]
	r.i++
	return true
}
func (r *sliceReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is the deprecated name of RecordBatch, required by the interface.
func (r *sliceReader) Record() arrow.RecordBatch { return r.cur }
