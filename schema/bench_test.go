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
)

// benchRows is the decisions file's size: 1,000,000 rows, or 2,000 under -short (make test runs
// every benchmark once that way, so none of them rots).
func benchRows() int {
	if testing.Short() {
		return 2_000
	}
	return 1_000_000
}

var (
	benchOnce    sync.Once
	benchBatches []arrow.RecordBatch
	benchBytes   int64
	benchErr     error
)

// decisionsData builds a decisions table shaped like a real rollout:
// episodes of ~8 decisions, 30 features, a 40-float policy input, ~10 legal
// actions with 16-wide mostly one-hot descriptors, short strings. It is
// built once (in 16,384-row batches, through Build and DecisionRow, so it
// follows the table's columns) and shared by the sub-benchmarks.
func decisionsData(b *testing.B) ([]arrow.RecordBatch, int64) {
	benchOnce.Do(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		kinds := []string{"ADD_AGENT", "ADD_EDGE", "DROP_AGENT", "SET_OUTPUT", "BIND_SKILL", "STOP"}
		roles := []string{"solver", "critic", "planner", "coder", "verifier"}
		n := benchRows()
		rows := make([]DecisionRow, 0, 16384)
		ep, t := 0, 0
		for row := range n {
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
			d := DecisionRow{EpisodeID: fmt.Sprintf("3/task-%06d/current/%d", ep/4, ep%4), T: int32(t), ActionJSON: legal[chosen],
				ActionKind: kinds[rng.IntN(len(kinds))], LegalActions: legal, Chosen: int32(chosen), Forced: nLegal == 1,
				Value: float32(rng.Float64()), ValueChange: float32(rng.NormFloat64() * 0.1), ActionWidth: 16,
				LogpBehavior: -rng.ExpFloat64(), StructureKey: fmt.Sprintf("sha256:%016x", rng.Uint64()),
				CoarseKey: fmt.Sprintf("coarse:%d:%d", nNodes, nEdges), NNodes: int32(nNodes), NEdges: int32(nEdges),
				Observation:   fmt.Sprintf("node %d answered; tests %d/%d passed", rng.IntN(6), rng.IntN(5), 5),
				OutputChanged: rng.IntN(3) == 0}
			for i := range d.Features {
				switch {
				case i < 10: // counts and small integers
					d.Features[i] = float32(rng.IntN(8))
				case i < 20: // ratios
					d.Features[i] = float32(rng.IntN(101)) / 100
				default: // continuous
					d.Features[i] = float32(rng.NormFloat64())
				}
			}
			d.PolicyInput = make([]float32, 40)
			copy(d.PolicyInput, d.Features[:])
			for i := range 10 {
				d.PolicyInput[30+i] = float32(rng.IntN(2))
			}
			for range nLegal {
				a := make([]float32, 16)
				a[rng.IntN(6)] = 1 // action kind one-hot
				a[6+rng.IntN(5)] = 1
				a[11] = float32(rng.IntN(6)) / 5
				a[12] = float32(rng.IntN(6)) / 5
				a[13] = float32(rng.NormFloat64())
				d.ActionInputs = append(d.ActionInputs, a...)
				d.PriorLogits = append(d.PriorLogits, float32(rng.NormFloat64()))
			}
			if rng.IntN(2) == 0 {
				score := rng.Float64()
				d.OutputScore = &score
			}
			rows = append(rows, d)
			t++
			if len(rows) == 16384 || row == n-1 {
				rec, err := Build(Decisions, rows)
				if err != nil {
					benchErr = err
					return
				}
				benchBytes += recordSize(rec)
				benchBatches = append(benchBatches, rec)
				rows = rows[:0]
			}
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
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
	batches, size := decisionsData(b)
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
			if rows != int64(benchRows()) {
				b.Fatalf("read %d rows", rows)
			}
		}
		b.ReportMetric(fileMB(), "file-MB")
	})
}
