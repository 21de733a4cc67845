package schema

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// checkedAllocators replaces the allocator of every Write and open File with a
// memory.CheckedAllocator around the recycler for the rest of the test, and returns the
// allocators made so far.
func checkedAllocators(t *testing.T) func() []*memory.CheckedAllocator {
	var mu sync.Mutex
	var made []*memory.CheckedAllocator
	old := newAllocator
	newAllocator = func() memory.Allocator {
		c := memory.NewCheckedAllocator(newRecycler())
		mu.Lock()
		made = append(made, c)
		mu.Unlock()
		return c
	}
	t.Cleanup(func() { newAllocator = old })
	return func() []*memory.CheckedAllocator {
		mu.Lock()
		defer mu.Unlock()
		return append([]*memory.CheckedAllocator(nil), made...)
	}
}

// Writing a table in several batches and reading it back every way the stages do (rows, batch
// by batch, whole table) releases every buffer the writer and the reader allocated: the
// recycler reuses a buffer only after its last Release, so a missing Release is a leak and an
// extra one a buffer handed out twice.
func TestReadsAndWritesReleaseEveryBuffer(t *testing.T) {
	allocs := checkedAllocators(t)
	for _, tbl := range []*Table{Decisions, Episodes, Scores} {
		rec := randomBatch(tbl.Schema, 5000, 21, nil)
		in := chunks(t, rec, 1500, true)
		rec.Release()
		p := filepath.Join(t.TempDir(), tbl.Name+".arrow")
		if err := tbl.WriteBatches(p, testLineage, in...); err != nil {
			t.Fatal(err)
		}
		release(in)

		f, err := tbl.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		rr, err := f.Reader()
		if err != nil {
			t.Fatal(err)
		}
		n := int64(0)
		for rr.Next() {
			n += rr.RecordBatch().NumRows()
		}
		rr.Release()
		whole, err := f.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		whole.Release()
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if n != 5000 || whole.NumRows() != 5000 {
			t.Fatalf("%s: read %d rows batch by batch, %d whole", tbl.Name, n, whole.NumRows())
		}
	}
	if _, err := ReadFile[DecisionRow](Decisions, filepath.Join(t.TempDir(), "missing.arrow")); err == nil {
		t.Fatal("a missing file read")
	}
	made := allocs()
	if len(made) < 6 {
		t.Fatalf("%d allocators made: reads and writes did not go through newAllocator", len(made))
	}
	for i, c := range made {
		if c.CurrentAlloc() != 0 {
			t.Errorf("allocator %d: %d bytes still held after every batch, table and file was released", i, c.CurrentAlloc())
		}
	}
}
