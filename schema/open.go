package schema

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/evosteer/evosteer-go/internal/mapfile"
)

// File is an open, checked table file. Its data is memory-mapped (read into
// memory where the filesystem cannot map it): record batches (and arrays,
// tables) obtained from it may point into the mapping and must not be used
// after Close, not even if retained. Decompressed
// buffers are recycled for later batches once released, so a batch must not
// be used after its last Release either (the usual arrow contract).
type File struct {
	Path    string
	Table   *Table
	Version int
	Lineage Lineage
	Schema  *arrow.Schema // as stored, with metadata
	NumRows int64

	data    []byte
	unmap   func() error
	r       *ipc.FileReader
	batches []batchInfo // from the batch headers
	closed  atomic.Bool
}

var arrowMagic = []byte("ARROW1")

// Open opens a file of any known table. See Table.Open.
func Open(path string) (*File, error) { return open(path, nil) }

// Open memory-maps path and checks that it is an Arrow IPC file of table t:
// magic bytes, the footer's and every batch header's structure against the
// file (before arrow-go reads them), the evosteer.schema metadata (name and
// version), the lineage metadata (its two copies agreeing), the columns (see
// Conforms; they must also be in declared order), and the record batch
// layout. Every error starts with "open <path>: ".
func (t *Table) Open(path string) (*File, error) { return open(path, t) }

func open(path string, want *Table) (*File, error) {
	data, unmap, err := mapfile.Map(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) { // avoid "open p: open p: ..."
			err = pe.Err
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return openData(path, data, unmap, want)
}

// openData checks data, the contents of path, and takes it over: Close calls unmap (if not
// nil), also when the check fails.
func openData(path string, data []byte, unmap func() error, want *Table) (f *File, err error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("open %s: "+format, append([]any{path}, args...)...)
	}
	corrupt := func(cause error) error { return fail("truncated or corrupt Arrow file: %w", cause) }
	f = &File{Path: path, data: data, unmap: unmap}
	defer func() {
		if p := recover(); p != nil {
			err = corrupt(fmt.Errorf("arrow-go panicked: %v", p))
		}
		if err != nil {
			f.Close()
			f = nil
		}
	}()

	switch n := min(len(data), len(arrowMagic)); {
	case len(data) == 0:
		return f, corrupt(errors.New("empty file"))
	case !bytes.Equal(data[:n], arrowMagic[:n]):
		return f, fail("not an Arrow IPC file (bad magic)")
	case len(data) < 2*len(arrowMagic) || !bytes.HasSuffix(data, arrowMagic):
		return f, corrupt(errors.New("no Arrow footer at the end of the file"))
	}
	// Everything arrow-go will parse is verified first (see verify.go): its
	// allocations are sized by the file's bytes.
	ft, err := readFooter(data)
	if err != nil {
		return f, corrupt(fmt.Errorf("footer: %w", err))
	}
	if ft.ndicts != 0 {
		return f, corrupt(fmt.Errorf("%d dictionary batches (no table uses dictionaries)", ft.ndicts))
	}
	f.batches = make([]batchInfo, len(ft.blocks))
	for i, b := range ft.blocks {
		if f.batches[i], err = readBatch(data, b); err != nil {
			return f, corrupt(fmt.Errorf("batch %d: %w", i, err))
		}
		f.batches[i].first = f.NumRows
		f.NumRows += f.batches[i].rows
	}
	limit := ft.start
	for _, b := range ft.blocks {
		limit = min(limit, int(b.offset))
	}
	stream, err := streamMetadata(data, limit)
	if err != nil {
		return f, corrupt(fmt.Errorf("schema message: %w", err))
	}
	if !slices.Equal(stream, ft.metadata) {
		return f, corrupt(errors.New("the schema metadata (lineage) differs between the schema message and the footer"))
	}
	f.r, err = ipc.NewMappedFileReader(data, ipc.WithAllocator(newAllocator()))
	if err != nil {
		return f, corrupt(err)
	}
	if f.r.NumRecords() != len(ft.blocks) {
		return f, corrupt(fmt.Errorf("footer lists %d batches, reader sees %d", len(ft.blocks), f.r.NumRecords()))
	}
	f.Schema = f.r.Schema()

	md := f.Schema.Metadata()
	i := md.FindKey(keySchema)
	if i < 0 {
		return f, fail("not an evosteer table file (metadata key %s missing)", keySchema)
	}
	name, version, err := parseID(md.Values()[i])
	if err != nil {
		return f, fail("%w", err)
	}
	t, ok := Lookup(name)
	if !ok {
		return f, fail("unknown table %q", name)
	}
	if want != nil && t != want {
		return f, fail("table %q, want %q", name, want.Name)
	}
	if known := knownVersions(t); !slices.Contains(known, version) {
		return f, fail("unknown version %d of table %s (this build knows %s)", version, name, joinInts(known))
	}
	f.Table, f.Version = t, version
	if f.Lineage, err = parseLineage(md); err != nil {
		return f, fail("%w", err)
	}
	if err := Conforms(t.Schema, f.Schema); err != nil {
		return f, fail("%w", err)
	}
	for i, fld := range t.Schema.Fields() {
		if got := f.Schema.Field(i).Name; got != fld.Name {
			return f, fail("column %d is %q, want %q (columns out of declared order)", i, got, fld.Name)
		}
	}
	// arrow-go indexes a header's nodes and buffers by the schema's layout without checking
	// the vectors' lengths: a shorter vector would be read past its end.
	nodes, buffers := layout(t.Schema)
	for i, b := range f.batches {
		if b.nodes != nodes || len(b.buffers) != buffers {
			return f, corrupt(fmt.Errorf("batch %d: %d field nodes and %d buffers, the columns have %d and %d",
				i, b.nodes, len(b.buffers), nodes, buffers))
		}
	}
	return f, nil
}

func joinInts(v []int) string {
	var b bytes.Buffer
	for i, x := range v {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, x)
	}
	return b.String()
}

// Close releases the reader and unmaps the file. Records obtained from the
// file must not be used afterwards. Close is idempotent.
func (f *File) Close() error {
	if f.closed.Swap(true) {
		return nil
	}
	if f.r != nil {
		f.r.Close()
	}
	if f.unmap != nil {
		return f.unmap()
	}
	return nil
}

// Reader returns a fresh RecordReader over all batches of the file. Each
// batch is checked when it is read (buffer sizes, offsets, nulls in
// non-nullable columns, checksums, then the values' domains: see domain.go);
// a corrupt batch or a value outside its domain ends the iteration with
// Err() naming the file and the batch index, and the row and column of a
// value. The reader's Schema is f.Schema.
// Release the reader when done; batches are valid until the next call to
// Next unless retained, and never after f.Close.
func (f *File) Reader() (array.RecordReader, error) {
	if f.closed.Load() {
		return nil, fmt.Errorf("read %s: file is closed", f.Path)
	}
	r := &fileReader{f: f}
	r.refs.Store(1)
	return r, nil
}

// ReadAll reads every batch into a table. The caller releases it, and must
// not use it after f.Close.
func (f *File) ReadAll() (arrow.Table, error) {
	rr, err := f.Reader()
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for rr.Next() {
		rec := rr.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := rr.Err(); err != nil {
		return nil, err
	}
	return array.NewTableFromRecords(f.Schema, recs), nil
}

// batch loads and checks batch i.
func (f *File) batch(i int) (rec arrow.RecordBatch, err error) {
	defer func() {
		if p := recover(); p != nil {
			if rec != nil {
				rec.Release()
			}
			rec, err = nil, fmt.Errorf("arrow-go panicked: %v", p)
		}
	}()
	if f.closed.Load() {
		return nil, errors.New("file is closed")
	}
	rec, err = f.r.RecordBatchAt(i)
	if err != nil {
		return nil, err
	}
	if rec.NumRows() != f.batches[i].rows {
		err = fmt.Errorf("%d rows, header says %d", rec.NumRows(), f.batches[i].rows)
	}
	for c, fld := range f.Table.Schema.Fields() {
		if err != nil {
			break
		}
		col := rec.Column(c)
		if int64(col.Len()) != rec.NumRows() {
			err = fmt.Errorf("column %q: %d values for %d rows", fld.Name, col.Len(), rec.NumRows())
		} else if e := checkData(col.Data(), fld.Type, fld.Nullable); e != nil {
			err = fmt.Errorf("column %q: %w", fld.Name, e)
		}
	}
	if err == nil {
		err = verifyChecksums(rec, f.Table.Schema, f.batches[i])
	}
	if err == nil {
		err = f.Table.checkRules(rec, f.batches[i].first)
	}
	if err != nil {
		rec.Release()
		return nil, err
	}
	return rec, nil
}

// fileReader adapts *ipc.FileReader (which has no Next) to RecordReader.
type fileReader struct {
	refs atomic.Int64
	f    *File
	i    int
	cur  arrow.RecordBatch
	err  error
}

func (r *fileReader) Retain()               { r.refs.Add(1) }
func (r *fileReader) Schema() *arrow.Schema { return r.f.Schema }
func (r *fileReader) Err() error            { return r.err }
func (r *fileReader) RecordBatch() arrow.RecordBatch {
	return r.cur
}

// Record is the deprecated name of RecordBatch, required by the interface.
func (r *fileReader) Record() arrow.RecordBatch { return r.cur }

func (r *fileReader) Release() {
	if r.refs.Add(-1) == 0 && r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

func (r *fileReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.err != nil || r.i >= len(r.f.batches) {
		return false
	}
	rec, err := r.f.batch(r.i)
	if err != nil {
		r.err = fmt.Errorf("read %s: batch %d: %w", r.f.Path, r.i, err)
		return false
	}
	r.cur = rec
	r.i++
	return true
}
