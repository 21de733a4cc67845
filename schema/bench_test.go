package schema

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

const benchRows = 1_000_000

var (
	benchOnce    sync.Once
	benchBatches []arrow.RecordBatch
	benchBytes   int64
)

// decisionsData builds a decisions table shaped like a real rollout:
// episodes of ~8 decisions, 30 features, a 40-float policy input, ~10 legal
// actions with 16-wide mostly one-hot descriptors and a prior logit each,
// short strings. It is
// built once (in 16,384-row batches) and shared by the sub-benchmarks.
func decisionsData() ([]arrow.RecordBatch, int64) {
	benchOnce.Do(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		kinds := []string{"ADD_AGENT", "ADD_EDGE", "DROP_AGENT", "SET_OUTPUT", "BIND_SKILL", "STOP"}
		roles := []string{"solver", "critic", "planner", "coder", "verifier"}
		b := array.NewRecordBuilder(memory.DefaultAllocator, Decisions.Schema)
		defer b.Release()
		ep, t := 0, 0
		for row := range benchRows {
			if t == 0 || rng.IntN(8) == 0 {
				ep, t = ep+1, 0
			}
			nLegal := 6 + rng.IntN(9)
			chosen := rng.IntN(nLegal)
			nNodes, nEdges := 1+t/2, t/2
			legal := make([]string, nLegal)
			for i := range legal {
				k := kinds[rng.IntN(len(kinds))]
				legal[i] = fmt.Sprintf(`{"kind":%q,"role":%q,"src":%d,"dst":%d}`, k, roles[rng.IntN(len(roles))], rng.IntN(6), rng.IntN(6))
			}
			f := 0
			b.Field(f).(*array.StringBuilder).Append(fmt.Sprintf("3/task-%06d/current/%d", ep/4, ep%4))
			f++
			b.Field(f).(*array.Int32Builder).Append(int32(t))
			f++
			b.Field(f).(*array.StringBuilder).Append(legal[chosen])
			f++
			b.Field(f).(*array.StringBuilder).Append(kinds[rng.IntN(len(kinds))])
			f++
			lb := b.Field(f).(*array.ListBuilder)
			lb.Append(true)
			for _, s := range legal {
				lb.ValueBuilder().(*array.StringBuilder).Append(s)
			}
			f++
			b.Field(f).(*array.Int32Builder).Append(int32(chosen))
			f++
			b.Field(f).(*array.BooleanBuilder).Append(nLegal == 1)
			f++
			feats := make([]float32, 30)
			for i := range feats {
				switch {
				case i < 10: // counts and small integers
					feats[i] = float32(rng.IntN(8))
				case i < 20: // ratios
					feats[i] = float32(rng.IntN(101)) / 100
				default: // continuous
					feats[i] = float32(rng.NormFloat64())
				}
			}
			fb := b.Field(f).(*array.FixedSizeListBuilder)
			fb.Append(true)
			fb.ValueBuilder().(*array.Float32Builder).AppendValues(feats, nil)
			f++
			value := float32(rng.Float64())
			b.Field(f).(*array.Float32Builder).Append(value)
			f++
			b.Field(f).(*array.Float32Builder).Append(float32(rng.NormFloat64() * 0.1))
			f++
			pb := b.Field(f).(*array.ListBuilder)
			pb.Append(true)
			pv := pb.ValueBuilder().(*array.Float32Builder)
			pv.AppendValues(feats, nil)
			for range 10 {
				pv.Append(float32(rng.IntN(2)))
			}
			f++
			ab := b.Field(f).(*array.ListBuilder)
			ab.Append(true)
			av := ab.ValueBuilder().(*array.Float32Builder)
			for range nLegal {
				d := make([]float32, 16)
				d[rng.IntN(6)] = 1 // action kind one-hot
				d[6+rng.IntN(5)] = 1
				d[11] = float32(rng.IntN(6)) / 5
				d[12] = float32(rng.IntN(6)) / 5
				d[13] = float32(rng.NormFloat64())
				av.AppendValues(d, nil)
			}
			f++
			b.Field(f).(*array.Int32Builder).Append(16)
			f++
			lp := b.Field(f).(*array.ListBuilder)
			lp.Append(true)
			for range nLegal {
				lp.ValueBuilder().(*array.Float32Builder).Append(float32(rng.IntN(7) - 3))
			}
			f++
			b.Field(f).(*array.Float64Builder).Append(-rng.ExpFloat64())
			f++
			b.Field(f).(*array.StringBuilder).Append(fmt.Sprintf("sha256:%016x", rng.Uint64()))
			f++
			b.Field(f).(*array.StringBuilder).Append(fmt.Sprintf("coarse:%d:%d", nNodes, nEdges))
			f++
			b.Field(f).(*array.Int32Builder).Append(int32(nNodes))
			f++
			b.Field(f).(*array.Int32Builder).Append(int32(nEdges))
			f++
			b.Field(f).(*array.StringBuilder).Append(fmt.Sprintf("node %d answered; tests %d/%d passed", rng.IntN(6), rng.IntN(5), 5))
			f++
			b.Field(f).(*array.BooleanBuilder).Append(rng.IntN(3) == 0)
			f++
			if rng.IntN(3) == 0 {
				b.Field(f).AppendNull()
			} else {
				b.Field(f).(*array.Float64Builder).Append(float64(rng.IntN(2)))
			}
			t++
			if (row+1)%16384 == 0 || row == benchRows-1 {
				rec := b.NewRecordBatch()
				benchBytes += recordSize(rec)
				benchBatches = append(benchBatches, rec)
			}
		}
	})
	return benchBatches, benchBytes
}

// recordSize is the bytes of all buffers of rec (arrow/util has the same
// function but pulls in protobuf packages this module does not carry).
func recordSize(rec arrow.RecordBatch) int64 {
	var size func(d arrow.ArrayData) int64
	size = func(d arrow.ArrayData) int64 {
		var n int64
		for _, b := range d.Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
		for _, c := range d.Children() {
			n += size(c)
		}
		return n
	}
	var n int64
	for _, c := range rec.Columns() {
		n += size(c.Data())
	}
	return n
}

// scanAll touches every value of every column, as a consumer would.
func scanAll(rec arrow.RecordBatch) (sum float64) {
	var scan func(a arrow.Array)
	scan = func(a arrow.Array) {
		switch a := a.(type) {
		case *array.String:
			for i := range a.Len() {
				sum += float64(len(a.Value(i)))
			}
		case *array.Int32:
			for _, v := range a.Int32Values() {
				sum += float64(v)
			}
		case *array.Float32:
			for _, v := range a.Float32Values() {
				sum += float64(v)
			}
		case *array.Float64:
			for _, v := range a.Float64Values() {
				sum += v
			}
		case *array.Boolean:
			for i := range a.Len() {
				if a.Value(i) {
					sum++
				}
			}
		case array.ListLike:
			scan(a.ListValues())
		}
	}
	for _, c := range rec.Columns() {
		scan(c)
	}
	return sum
}

// BenchmarkDecisionsWriteRead measures writing and reading a 1,000,000-row
// decisions file. MB/s is over the uncompressed in-memory size; file-MB is
// the size on disk. Run: go test ./schema -run xxx -bench Decisions -benchtime 1x
func BenchmarkDecisionsWriteRead(b *testing.B) {
	batches, size := decisionsData()
	dir := b.TempDir()
	path := filepath.Join(dir, "decisions.arrow")
	fileMB := func() float64 {
		st, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		return float64(st.Size()) / 1e6
	}
	b.Run("write", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if err := Decisions.WriteBatches(path, testLineage, batches...); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(fileMB(), "file-MB")
		b.ReportMetric(float64(size)/1e6, "mem-MB")
	})
	if _, err := os.Stat(path); err != nil {
		if err := Decisions.WriteBatches(path, testLineage, batches...); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("read", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			f, err := Decisions.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			rr, err := f.Reader()
			if err != nil {
				b.Fatal(err)
			}
			var rows int64
			for rr.Next() {
				rows += rr.RecordBatch().NumRows()
				scanAll(rr.RecordBatch())
			}
			if err := rr.Err(); err != nil {
				b.Fatal(err)
			}
			rr.Release()
			f.Close()
			if rows != benchRows {
				b.Fatalf("read %d rows", rows)
			}
		}
		b.ReportMetric(fileMB(), "file-MB")
	})
}
