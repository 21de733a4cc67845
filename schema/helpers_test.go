package schema

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var testLineage = Lineage{
	Run:          "unit",
	Step:         7,
	Stage:        "rollout",
	ConfigSHA256: "c0ffee",
	Inputs: map[string]string{
		"step-000006/update/checkpoint/policy.bin": "aa",
		"step-000006/aggregate/buckets.arrow":      "bb",
		"tasks/train.arrow":                        "cc",
	},
}

// randomBatch builds rows random rows for schema s. nullsIn names the columns
// that may hold nulls (about one in five); nil means the schema's own
// nullable flags. Values depend only on seed, the column order and types.
// When s has the columns of a declared table, values keep to its rules
// (domain.go), so that the batch reads back.
func randomBatch(s *arrow.Schema, rows int, seed uint64, nullsIn map[string]bool) arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(seed, 1))
	domains := map[string]rule{}
	for _, t := range All() {
		if len(t.Schema.Fields()) == len(s.Fields()) && Conforms(t.Schema, s) == nil {
			for _, r := range t.rules {
				if r.values != nil || r.hi > r.lo {
					domains[r.col] = r
				}
			}
		}
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	for i, f := range s.Fields() {
		nulls := f.Nullable
		if nullsIn != nil {
			nulls = nullsIn[f.Name]
		}
		d, ok := domains[f.Name]
		for range rows {
			switch {
			case nulls && rng.IntN(5) == 0:
				b.Field(i).AppendNull()
			case ok:
				appendInDomain(b.Field(i), d, rng)
			default:
				appendRandom(b.Field(i), f.Type, rng)
			}
		}
	}
	rec := b.NewRecordBatch()
	if Conforms(Decisions.Schema, s) == nil {
		defer rec.Release()
		return validDecisions(rec)
	}
	return rec
}

// appendInDomain appends a random value of rule d's domain.
func appendInDomain(b array.Builder, d rule, rng *rand.Rand) {
	if d.values != nil {
		b.(*array.StringBuilder).Append(d.values[rng.IntN(len(d.values))])
		return
	}
	span := min(d.hi-d.lo, 1000)
	switch b := b.(type) {
	case *array.Int32Builder:
		b.Append(int32(d.lo) + rng.Int32N(int32(span)+1))
	case *array.Int64Builder:
		b.Append(int64(d.lo) + rng.Int64N(int64(span)+1))
	case *array.Float32Builder:
		b.Append(float32(d.lo + rng.Float64()*min(span, 1)))
	case *array.Float64Builder:
		b.Append(d.lo + rng.Float64()*min(span, 1))
	default:
		panic("appendInDomain: no generator for " + b.Type().String())
	}
}

// validDecisions returns rec with the columns that decisions' row rules relate to legal_actions
// rebuilt from it: at least one legal action, chosen among them, one prior logit each, and
// action_inputs of action_width 2 per action.
func validDecisions(rec arrow.RecordBatch) arrow.RecordBatch {
	s := rec.Schema()
	idx := func(name string) int { return s.FieldIndices(name)[0] }
	build := func(name string) array.Builder {
		return array.NewBuilder(memory.DefaultAllocator, s.Field(idx(name)).Type)
	}
	legalB, chosenB, priorB, widthB, inputsB := build("legal_actions"), build("chosen"), build("prior_logits"), build("action_width"), build("action_inputs")
	legal := rec.Column(idx("legal_actions")).(*array.List)
	words := legal.ListValues().(*array.String)
	for r := range int(rec.NumRows()) {
		lo, hi := legal.ValueOffsets(r)
		lb := legalB.(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).Append("stop")
		for k := lo; k < hi; k++ {
			lb.ValueBuilder().(*array.StringBuilder).Append(words.Value(int(k)))
		}
		n := int(hi-lo) + 1
		chosenB.(*array.Int32Builder).Append(int32(r % n))
		widthB.(*array.Int32Builder).Append(2)
		priorB.(*array.ListBuilder).Append(true)
		inputsB.(*array.ListBuilder).Append(true)
		for k := range n {
			priorB.(*array.ListBuilder).ValueBuilder().(*array.Float32Builder).Append(float32(k))
			inputsB.(*array.ListBuilder).ValueBuilder().(*array.Float32Builder).AppendValues([]float32{float32(k), 1}, nil)
		}
	}
	cols := rec.Columns()
	out := make([]arrow.Array, len(cols))
	for i, c := range cols {
		out[i] = c
		c.Retain()
	}
	for name, b := range map[string]array.Builder{"legal_actions": legalB, "chosen": chosenB, "prior_logits": priorB,
		"action_width": widthB, "action_inputs": inputsB} {
		out[idx(name)].Release()
		out[idx(name)] = b.NewArray()
		b.Release()
	}
	res := array.NewRecordBatch(s, out, rec.NumRows())
	for _, a := range out {
		a.Release()
	}
	return res
}

var words = []string{"", "a", "node", "add_edge", "STOP", "É☃", "{\"kind\":\"stop\"}", "sha256:0f3a", "long text with spaces and more"}

func appendRandom(b array.Builder, dt arrow.DataType, rng *rand.Rand) {
	switch t := dt.(type) {
	case *arrow.StringType:
		s := words[rng.IntN(len(words))]
		if rng.IntN(3) == 0 {
			s = fmt.Sprintf("%s-%d", s, rng.Uint32())
		}
		b.(*array.StringBuilder).Append(s)
	case *arrow.BooleanType:
		b.(*array.BooleanBuilder).Append(rng.IntN(2) == 1)
	case *arrow.Int32Type:
		b.(*array.Int32Builder).Append(rng.Int32N(1000) - 10)
	case *arrow.Int64Type:
		b.(*array.Int64Builder).Append(rng.Int64() >> rng.IntN(63))
	case *arrow.Uint64Type:
		b.(*array.Uint64Builder).Append(rng.Uint64())
	case *arrow.Float32Type:
		b.(*array.Float32Builder).Append(float32(rng.NormFloat64()))
	case *arrow.Float64Type:
		b.(*array.Float64Builder).Append(rng.Float64())
	case *arrow.ListType:
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		for range rng.IntN(6) {
			appendRandom(lb.ValueBuilder(), t.Elem(), rng)
		}
	case *arrow.FixedSizeListType:
		lb := b.(*array.FixedSizeListBuilder)
		lb.Append(true)
		for range t.Len() {
			appendRandom(lb.ValueBuilder(), t.Elem(), rng)
		}
	default:
		panic("appendRandom: no generator for " + dt.String())
	}
}

// duckType is dt as DuckDB returns it: list elements named "l" and nullable.
func duckType(dt arrow.DataType) arrow.DataType {
	switch t := dt.(type) {
	case *arrow.ListType:
		return arrow.ListOfField(arrow.Field{Name: "l", Type: duckType(t.Elem()), Nullable: true})
	case *arrow.FixedSizeListType:
		return arrow.FixedSizeListOfField(t.Len(), arrow.Field{Name: "l", Type: duckType(t.Elem()), Nullable: true})
	}
	return dt
}

// duckSchema is s as DuckDB would return it: every field nullable, list
// elements named "l".
func duckSchema(s *arrow.Schema) *arrow.Schema {
	var fs []arrow.Field
	for _, f := range s.Fields() {
		fs = append(fs, arrow.Field{Name: f.Name, Type: duckType(f.Type), Nullable: true})
	}
	return arrow.NewSchema(fs, nil)
}

// shuffled returns rec with its columns in the order perm.
func shuffled(rec arrow.RecordBatch, perm []int) arrow.RecordBatch {
	var fs []arrow.Field
	var cols []arrow.Array
	for _, i := range perm {
		fs = append(fs, rec.Schema().Field(i))
		cols = append(cols, rec.Column(i))
	}
	return array.NewRecordBatch(arrow.NewSchema(fs, nil), cols, rec.NumRows())
}

// chunks splits rec into fresh batches of at most n rows. copyBuffers makes
// each chunk own new buffers (as a separate DuckDB batch would) instead of
// being a slice of rec.
func chunks(t testing.TB, rec arrow.RecordBatch, n int64, copyBuffers bool) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	for lo := int64(0); lo < rec.NumRows(); lo += n {
		s := rec.NewSlice(lo, min(lo+n, rec.NumRows()))
		if copyBuffers {
			cols := make([]arrow.Array, s.NumCols())
			for i := range cols {
				c, err := array.Concatenate([]arrow.Array{s.Column(i)}, memory.DefaultAllocator)
				if err != nil {
					t.Fatal(err)
				}
				cols[i] = c
			}
			c := array.NewRecordBatch(s.Schema(), cols, s.NumRows())
			for _, a := range cols {
				a.Release()
			}
			s.Release()
			s = c
		}
		out = append(out, s)
	}
	return out
}

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

func readBytes(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dirEntries lists the names in dir (temp files included).
func dirEntries(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func writeFile(t testing.TB, path string, data []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
