package schema

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Stages keep their rows as Go structs whose fields carry `arrow:"column"` tags; Build and Rows
// convert between such slices and record batches of a declared table, so no stage hand-writes
// builder code. Supported field types: string, bool, int32, int64, uint64, float32, float64,
// []string, []float32, [N]float32 (fixed_size_list), and pointers to the scalars for nullable
// columns (nil = null).

// NullIfZero is the value of a nullable column for v: nil (null) for the zero value, so an
// empty string is stored as a null, and a pointer to v otherwise.
func NullIfZero[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// binding maps one declared column to one struct field.
type binding struct {
	col   int
	index []int
	name  string
}

func bindings(t *Table, typ reflect.Type) ([]binding, error) {
	if typ.Kind() != reflect.Struct {
		return nil, fmt.Errorf("table %s: rows must be structs, got %s", t.Name, typ)
	}
	byName := map[string][]int{}
	for _, f := range reflect.VisibleFields(typ) {
		tag, _, _ := strings.Cut(f.Tag.Get("arrow"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		if _, dup := byName[tag]; dup {
			return nil, fmt.Errorf("table %s: %s has two fields tagged %q", t.Name, typ, tag)
		}
		byName[tag] = f.Index
	}
	out := make([]binding, 0, len(t.Schema.Fields()))
	for i, f := range t.Schema.Fields() {
		idx, ok := byName[f.Name]
		if !ok {
			return nil, fmt.Errorf("table %s: %s has no field tagged arrow:%q", t.Name, typ, f.Name)
		}
		delete(byName, f.Name)
		if err := fieldFits(typ.FieldByIndex(idx).Type, f); err != nil {
			return nil, fmt.Errorf("table %s: column %q: %w", t.Name, f.Name, err)
		}
		out = append(out, binding{col: i, index: idx, name: f.Name})
	}
	for extra := range byName {
		return nil, fmt.Errorf("table %s: %s tags %q, which is not a column", t.Name, typ, extra)
	}
	return out, nil
}

// goTypes names the Go type that holds each arrow type.
var goTypes = map[arrow.Type]reflect.Type{
	arrow.STRING:  reflect.TypeFor[string](),
	arrow.BOOL:    reflect.TypeFor[bool](),
	arrow.INT32:   reflect.TypeFor[int32](),
	arrow.INT64:   reflect.TypeFor[int64](),
	arrow.UINT64:  reflect.TypeFor[uint64](),
	arrow.FLOAT32: reflect.TypeFor[float32](),
	arrow.FLOAT64: reflect.TypeFor[float64](),
}

func fieldFits(gt reflect.Type, f arrow.Field) error {
	switch dt := f.Type.(type) {
	case *arrow.ListType:
		if gt.Kind() == reflect.Slice && goTypes[dt.Elem().ID()] == gt.Elem() {
			return nil
		}
	case *arrow.FixedSizeListType:
		if gt.Kind() == reflect.Array && gt.Len() == int(dt.Len()) && goTypes[dt.Elem().ID()] == gt.Elem() {
			return nil
		}
	default:
		want := goTypes[dt.ID()]
		if gt == want || (f.Nullable && gt.Kind() == reflect.Pointer && gt.Elem() == want) {
			return nil
		}
	}
	return fmt.Errorf("field type %s cannot hold %s (nullable %v)", gt, f.Type, f.Nullable)
}

// Build turns rows into one record batch of table t. The caller releases it.
func Build[T any](t *Table, rows []T) (arrow.RecordBatch, error) {
	bs, err := bindings(t, reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, t.Schema)
	defer b.Release()
	for r := range rows {
		v := reflect.ValueOf(&rows[r]).Elem()
		for _, bd := range bs {
			if err := appendValue(b.Field(bd.col), v.FieldByIndex(bd.index)); err != nil {
				return nil, fmt.Errorf("table %s: row %d column %q: %w", t.Name, r, bd.name, err)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

func appendValue(b array.Builder, v reflect.Value) error {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			b.AppendNull()
			return nil
		}
		v = v.Elem()
	}
	switch bb := b.(type) {
	case *array.StringBuilder:
		bb.Append(v.String())
	case *array.BooleanBuilder:
		bb.Append(v.Bool())
	case *array.Int32Builder:
		bb.Append(int32(v.Int()))
	case *array.Int64Builder:
		bb.Append(v.Int())
	case *array.Uint64Builder:
		bb.Append(v.Uint())
	case *array.Float32Builder:
		bb.Append(float32(v.Float()))
	case *array.Float64Builder:
		bb.Append(v.Float())
	case *array.ListBuilder:
		bb.Append(true)
		for i := 0; i < v.Len(); i++ {
			if err := appendValue(bb.ValueBuilder(), v.Index(i)); err != nil {
				return err
			}
		}
	case *array.FixedSizeListBuilder:
		bb.Append(true)
		for i := 0; i < v.Len(); i++ {
			if err := appendValue(bb.ValueBuilder(), v.Index(i)); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unsupported builder %T", b)
	}
	return nil
}

// Rows reads every batch of rr (which must conform to t) into structs. Strings are copied, so
// the rows outlive the reader.
func Rows[T any](t *Table, rr array.RecordReader) ([]T, error) {
	bs, err := bindings(t, reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	if err := Conforms(t.Schema, rr.Schema()); err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Name, err)
	}
	var out []T
	for rr.Next() {
		rec := rr.RecordBatch()
		cols := make([]arrow.Array, len(bs))
		for i, bd := range bs {
			cols[i] = rec.Column(rec.Schema().FieldIndices(bd.name)[0])
		}
		for r := 0; r < int(rec.NumRows()); r++ {
			var row T
			v := reflect.ValueOf(&row).Elem()
			for i, bd := range bs {
				setValue(v.FieldByIndex(bd.index), cols[i], r)
			}
			out = append(out, row)
		}
	}
	return out, rr.Err()
}

func setValue(dst reflect.Value, a arrow.Array, i int) {
	if a.IsNull(i) {
		return // zero value; pointers stay nil
	}
	if dst.Kind() == reflect.Pointer {
		p := reflect.New(dst.Type().Elem())
		dst.Set(p)
		dst = p.Elem()
	}
	switch c := a.(type) {
	case *array.String:
		dst.SetString(strings.Clone(c.Value(i)))
	case *array.Boolean:
		dst.SetBool(c.Value(i))
	case *array.Int32:
		dst.SetInt(int64(c.Value(i)))
	case *array.Int64:
		dst.SetInt(c.Value(i))
	case *array.Uint64:
		dst.SetUint(c.Value(i))
	case *array.Float32:
		dst.SetFloat(float64(c.Value(i)))
	case *array.Float64:
		dst.SetFloat(c.Value(i))
	case *array.List:
		start, end := c.ValueOffsets(i)
		n := int(end - start)
		dst.Set(reflect.MakeSlice(dst.Type(), n, n))
		for k := 0; k < n; k++ {
			setValue(dst.Index(k), c.ListValues(), int(start)+k)
		}
	case *array.FixedSizeList:
		start, _ := c.ValueOffsets(i)
		for k := 0; k < dst.Len(); k++ {
			setValue(dst.Index(k), c.ListValues(), int(start)+k)
		}
	}
}

// ReadFile opens a file of table t and reads all its rows into structs.
func ReadFile[T any](t *Table, path string) ([]T, error) {
	f, err := t.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rr, err := f.Reader()
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	rows, err := Rows[T](t, rr)
	if err != nil {
		if err != rr.Err() { // the reader's own errors already name the file
			err = fmt.Errorf("read %s: %w", path, err)
		}
		return nil, err
	}
	return rows, nil
}

// EachBatch opens a file of table t and calls fn with each of its record batches in order, for
// a reader that needs a few columns and not the rows as structs. Strings read from a batch alias
// the file's mapping, which closes when EachBatch returns: clone what is kept.
func (t *Table) EachBatch(path string, fn func(rec arrow.RecordBatch) error) error {
	f, err := t.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	rr, err := f.Reader()
	if err != nil {
		return err
	}
	defer rr.Release()
	for rr.Next() {
		if err := fn(rr.RecordBatch()); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return rr.Err()
}

// ReadFiles reads every file of table t (e.g. the shards of one stage output) in order.
func ReadFiles[T any](t *Table, paths []string) ([]T, error) {
	var out []T
	for _, p := range paths {
		rows, err := ReadFile[T](t, p)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// WriteRows builds rows into a batch of table t and writes it to path (see Table.Write).
func WriteRows[T any](t *Table, path string, lin Lineage, rows []T) error {
	rec, err := Build(t, rows)
	if err != nil {
		return err
	}
	defer rec.Release()
	return t.WriteBatches(path, lin, rec)
}

// Column returns the named column of a record batch as array type A, or an error naming the
// column when the batch lacks it or holds another type. For readers of query results and of a
// few columns of a wide file, where Rows would materialise every column.
func Column[A arrow.Array](rec arrow.RecordBatch, name string) (A, error) {
	var zero A
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		return zero, fmt.Errorf("no column %q", name)
	}
	a, ok := rec.Column(idx[0]).(A)
	if !ok {
		return zero, fmt.Errorf("column %q has type %s", name, rec.Column(idx[0]).DataType())
	}
	return a, nil
}
