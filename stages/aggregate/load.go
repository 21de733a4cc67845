package aggregate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/evosteer/evosteer-go/internal/duck"
	"github.com/evosteer/evosteer-go/schema"
)

// source is one table file and the step it belongs to.
type source struct {
	path string
	step int
}

// The columns the SQL files read of each input table (a step column is added to every one).
var (
	episodeColumns = []string{"episode_id", "task_id", "family", "task_type", "source", "pair_id",
		"comparison_id", "candidate_skill_id", "reward", "healthy", "terminal_structure_key", "terminal_coarse_key"}
	decisionColumns = []string{"episode_id", "t", "structure_key", "coarse_key", "n_nodes", "n_edges", "features"}
	taskColumns     = []string{"task_id", "prior_rate", "prior_count"}
	bucketColumns   = []string{"kind", "key", "n_nodes", "n_edges", "stopped", "visits", "excess_sum", "log_pooled_ratio", "correction"}
	poolColumns     = []string{"task_id", "family", "reward_sum", "episodes"}
	usedColumns     = []string{"comparison_id", "task_id", "first_step"}
	// Outputs read back by a later SQL file of the same step (reread).
	anchorColumns = []string{"episode_id", "anchor"}
	pairColumns   = []string{"comparison_id", "task_id", "eligible"}
)

// loadTable loads the given columns of every file of table t in srcs (in order) into the DuckDB
// table name, with a leading step column (BIGINT) holding each file's step. With no files, the
// table is created empty with the same columns, so that the SQL runs unchanged. Row order is
// file order (the tables' rowid).
//
// Fixed-size list columns (the 30 features) are handed to DuckDB as plain lists (the same
// values, with an offsets buffer): DuckDB ingests LIST several times faster than ARRAY (about
// 4 s against 10 s for 10M feature vectors here); the SQL casts them back (features::FLOAT[30]).
func loadTable(ctx context.Context, db *duck.DB, name string, t *schema.Table, cols []string, srcs []source) (rows int64, err error) {
	return readInto(t, cols, srcs, func(cr *chainReader) error { return db.LoadTable(ctx, name, cr) })
}

// appendTable is loadTable into a table that may already hold rows of other steps (a state
// loaded as an input, with the new step's rows appended), or that is created.
func appendTable(ctx context.Context, db *duck.DB, name string, t *schema.Table, cols []string, srcs []source) error {
	_, err := readInto(t, cols, srcs, func(cr *chainReader) error { return db.AppendTable(ctx, name, cr, nil) })
	return err
}

// readInto hands load a chainReader over srcs and returns the rows it read.
func readInto(t *schema.Table, cols []string, srcs []source, load func(*chainReader) error) (rows int64, err error) {
	cr, err := newChainReader(t, cols, srcs)
	if err != nil {
		return 0, err
	}
	defer func() {
		cr.Release()
		if cerr := cr.closeFiles(); err == nil {
			err = cerr
		}
	}()
	if err := load(cr); err != nil {
		return 0, err
	}
	if cr.err != nil {
		return 0, cr.err
	}
	return cr.rows, nil
}

// chainReader reads the files of one table one after the other, projected to some columns,
// with a constant step column in front. A goroutine decodes the next batches (decompression and
// checks, in schema) while DuckDB ingests the current one. Files stay open (their batches may
// point into the mapping) until closeFiles, which the caller runs once DuckDB has materialised
// the rows.
type chainReader struct {
	refs   atomic.Int64
	table  *schema.Table
	cols   []string
	schema *arrow.Schema
	srcs   []source

	start sync.Once
	items chan item
	done  chan struct{}
	wg    sync.WaitGroup
	files []*schema.File // written by the producer, read after wg.Wait

	cur  arrow.RecordBatch
	err  error
	rows int64
}

type item struct {
	rec arrow.RecordBatch
	err error
}

func newChainReader(t *schema.Table, cols []string, srcs []source) (*chainReader, error) {
	fields := []arrow.Field{{Name: "step", Type: arrow.PrimitiveTypes.Int64}}
	for _, c := range cols {
		i := t.Schema.FieldIndices(c)
		if len(i) != 1 {
			return nil, fmt.Errorf("table %s has no column %q", t.Name, c)
		}
		f := t.Schema.Field(i[0])
		if fl, ok := f.Type.(*arrow.FixedSizeListType); ok {
			f.Type = arrow.ListOfNonNullable(fl.Elem())
		}
		fields = append(fields, f)
	}
	cr := &chainReader{table: t, cols: cols, schema: arrow.NewSchema(fields, nil), srcs: srcs,
		items: make(chan item, 2), done: make(chan struct{})}
	cr.refs.Store(1)
	return cr, nil
}

func (c *chainReader) Retain()                        { c.refs.Add(1) }
func (c *chainReader) Schema() *arrow.Schema          { return c.schema }
func (c *chainReader) Err() error                     { return c.err }
func (c *chainReader) RecordBatch() arrow.RecordBatch { return c.cur }

// Record is the deprecated name of RecordBatch, required by the interface.
func (c *chainReader) Record() arrow.RecordBatch { return c.cur }

// Release stops the producer and releases every batch not handed out.
func (c *chainReader) Release() {
	if c.refs.Add(-1) != 0 {
		return
	}
	if c.cur != nil {
		c.cur.Release()
		c.cur = nil
	}
	c.start.Do(func() { close(c.items) }) // never started: nothing to stop
	close(c.done)
	for it := range c.items {
		if it.rec != nil {
			it.rec.Release()
		}
	}
	c.wg.Wait()
}

func (c *chainReader) Next() bool {
	if c.cur != nil {
		c.cur.Release()
		c.cur = nil
	}
	if c.err != nil {
		return false
	}
	c.start.Do(func() {
		c.wg.Add(1)
		go c.produce()
	})
	it, ok := <-c.items
	switch {
	case !ok:
		return false
	case it.err != nil:
		c.err = it.err
		return false
	}
	c.cur = it.rec
	c.rows += it.rec.NumRows()
	return true
}

// produce reads every file in order and sends its projected batches, then closes items.
func (c *chainReader) produce() {
	defer c.wg.Done()
	defer close(c.items)
	send := func(it item) bool {
		select {
		case c.items <- it:
			return true
		case <-c.done:
			if it.rec != nil {
				it.rec.Release()
			}
			return false
		}
	}
	for _, src := range c.srcs {
		f, err := c.table.Open(src.path)
		if err != nil {
			send(item{err: err})
			return
		}
		c.files = append(c.files, f)
		idx := make([]int, len(c.cols))
		for i, name := range c.cols {
			idx[i] = f.Schema.FieldIndices(name)[0] // Open checked the columns
		}
		rr, err := f.Reader()
		if err != nil {
			send(item{err: err})
			return
		}
		for rr.Next() {
			if !send(item{rec: c.project(rr.RecordBatch(), idx, int64(src.step))}) {
				rr.Release()
				return
			}
		}
		err = rr.Err()
		rr.Release()
		if err != nil {
			send(item{err: err})
			return
		}
	}
}

// project builds the output batch of one file batch: the step column, then the columns idx
// (fixed-size lists as lists over the same values).
func (c *chainReader) project(rec arrow.RecordBatch, idx []int, step int64) arrow.RecordBatch {
	n := rec.NumRows()
	cols := make([]arrow.Array, 0, len(idx)+1)
	cols = append(cols, constInt64(step, int(n)))
	for _, i := range idx {
		col := rec.Column(i)
		if fl, ok := col.(*array.FixedSizeList); ok {
			cols = append(cols, asList(fl))
			continue
		}
		col.Retain()
		cols = append(cols, col)
	}
	out := array.NewRecordBatch(c.schema, cols, n)
	for _, a := range cols {
		a.Release()
	}
	return out
}

// asList views a fixed-size list array as a list array over the same child values.
func asList(fl *array.FixedSizeList) arrow.Array {
	size := int(fl.DataType().(*arrow.FixedSizeListType).Len())
	offs := make([]int32, fl.Offset()+fl.Len()+1)
	for k := range offs {
		offs[k] = int32(k * size)
	}
	d := fl.Data()
	ld := array.NewData(arrow.ListOfNonNullable(fl.DataType().(*arrow.FixedSizeListType).Elem()), fl.Len(),
		[]*memory.Buffer{d.Buffers()[0], memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offs))},
		[]arrow.ArrayData{d.Children()[0]}, d.NullN(), fl.Offset())
	defer ld.Release()
	return array.NewListData(ld)
}

// closeFiles closes the files once the producer has stopped (call Release first).
func (c *chainReader) closeFiles() error {
	c.wg.Wait()
	var errs []error
	for _, f := range c.files {
		errs = append(errs, f.Close())
	}
	c.files = nil
	return errors.Join(errs...)
}

// constInt64 is an int64 array of n copies of v.
func constInt64(v int64, n int) arrow.Array {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.Reserve(n)
	for range n {
		b.UnsafeAppend(v)
	}
	return b.NewArray()
}
