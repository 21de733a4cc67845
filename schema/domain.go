package schema

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A rule constrains the values of one column beyond its type: a range, a set of values, or a
// relation to other columns of its row. Every batch read from a file is checked against its
// table's rules (File.batch), after the checksums, so a value outside its domain stops every
// stage at the reader with the file, row and column, instead of flowing into outputs. Float
// columns, and float list elements, must also be finite in every table (declare adds the rule).
type rule struct {
	col string
	// check returns the first row (in rec) whose value breaks the rule and why, or -1. c is
	// the index of col; nulls of nullable columns are not checked.
	check func(rec arrow.RecordBatch, c int) (row int, why string)
	// The domain, for the tests' generators: [lo, hi] for within, values for oneOf.
	lo, hi float64
	values []string
}

// with adds rules to a table declaration. Like declare, it panics on a mistake (a rule on no
// column, or on a column of another type): each rule is run once on an empty batch.
func (t *Table) with(sets ...[]rule) *Table {
	rules := slices.Concat(sets...)
	cols := make([]arrow.Array, t.Schema.NumFields())
	for i, f := range t.Schema.Fields() {
		cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0)
		defer cols[i].Release()
	}
	empty := array.NewRecordBatch(t.Schema, cols, 0)
	defer empty.Release()
	for _, r := range rules {
		if t.Schema.FieldIndices(r.col) == nil {
			panic(fmt.Sprintf("schema: table %s: rule on unknown column %q", t.Name, r.col))
		}
		r.check(empty, t.Schema.FieldIndices(r.col)[0])
	}
	t.rules = append(t.rules, rules...)
	return t
}

// checkRules checks rec, the batch of a file of table t whose first row is row first of the
// file.
func (t *Table) checkRules(rec arrow.RecordBatch, first int64) error {
	for _, r := range t.rules {
		c := t.Schema.FieldIndices(r.col)[0]
		if row, why := r.check(rec, c); row >= 0 {
			return fmt.Errorf("row %d: column %q: %s", first+int64(row), r.col, why)
		}
	}
	return nil
}

// number reads element i of a numeric array as a float64, precise enough to compare with the
// rules' bounds; rules on other types are declaration mistakes.
func number(a arrow.Array) func(i int) float64 {
	switch a := a.(type) {
	case *array.Float64:
		return a.Value
	case *array.Float32:
		return func(i int) float64 { return float64(a.Value(i)) }
	case *array.Int32:
		return func(i int) float64 { return float64(a.Value(i)) }
	case *array.Int64:
		return func(i int) float64 { return float64(a.Value(i)) }
	case *array.Uint64:
		return func(i int) float64 { return float64(a.Value(i)) }
	}
	panic(fmt.Sprintf("schema: rule on non-numeric %s", a.DataType()))
}

func isFloat(dt arrow.DataType) bool {
	return dt != nil && (dt.ID() == arrow.FLOAT32 || dt.ID() == arrow.FLOAT64)
}

// finite: no NaN or ±Inf in a float column or in the elements of a list of floats. Lists of
// floats are most of a decisions file, so the values are scanned as one slice and a bad
// element is traced back to its row.
func finite(col string) rule {
	return rule{col: col, check: func(rec arrow.RecordBatch, c int) (int, string) {
		a := rec.Column(c)
		values, list := a, true
		switch l := a.(type) {
		case *array.List:
			values = l.ListValues()
		case *array.FixedSizeList:
			values = l.ListValues()
		default:
			list = false
		}
		row := func(k int) int { return k }
		if list {
			l := a.(array.ListLike)
			row = func(k int) int {
				return sort.Search(a.Len(), func(r int) bool { _, hi := l.ValueOffsets(r); return hi > int64(k) })
			}
		}
		var next func(from int) int // the index of the next non-finite value, or -1
		var at func(k int) float64
		switch v := values.(type) {
		case *array.Float32:
			f := v.Float32Values()
			next, at = func(from int) int { return nonFinite(f, from) }, func(k int) float64 { return float64(f[k]) }
		case *array.Float64:
			f := v.Float64Values()
			next, at = func(from int) int { return nonFinite(f, from) }, func(k int) float64 { return f[k] }
		default:
			panic(fmt.Sprintf("schema: rule finite on %s", values.DataType()))
		}
		for k := next(0); k >= 0; k = next(k + 1) {
			r := row(k)
			switch {
			case r >= a.Len() || a.IsNull(r):
				continue // not a value of the column (outside its rows, or under a null)
			case list:
				lo, _ := a.(array.ListLike).ValueOffsets(r)
				if int64(k) < lo {
					continue // before the first row's values
				}
				return r, fmt.Sprintf("element %d is %v, not finite", int64(k)-lo, at(k))
			default:
				return r, fmt.Sprintf("%v is not finite", at(k))
			}
		}
		return -1, ""
	}}
}

// nonFinite is the index of the first NaN or ±Inf in v from index from on, or -1.
func nonFinite[F float32 | float64](v []F, from int) int {
	for k := from; k < len(v); k++ {
		if x := v[k]; x-x != 0 { // NaN for NaN and ±Inf, 0 for every finite x
			return k
		}
	}
	return -1
}

// within: lo ≤ value ≤ hi in each numeric column (NaN is outside).
func within(lo, hi float64, cols ...string) []rule {
	rs := make([]rule, len(cols))
	for i, col := range cols {
		rs[i] = rule{col: col, lo: lo, hi: hi, check: func(rec arrow.RecordBatch, c int) (int, string) {
			a := rec.Column(c)
			v := number(a)
			for r := range a.Len() {
				if x := v(r); !a.IsNull(r) && !(x >= lo && x <= hi) {
					if math.IsInf(hi, 1) {
						return r, fmt.Sprintf("%v is below %v", x, lo)
					}
					return r, fmt.Sprintf("%v is outside [%v, %v]", x, lo, hi)
				}
			}
			return -1, ""
		}}
	}
	return rs
}

// atLeast: value ≥ lo in each numeric column.
func atLeast(lo float64, cols ...string) []rule { return within(lo, math.Inf(1), cols...) }

// oneOf: a string column holds one of values.
func oneOf(col string, values ...string) []rule {
	return []rule{{col: col, values: values, check: func(rec arrow.RecordBatch, c int) (int, string) {
		a := rec.Column(c).(*array.String)
		for r := range a.Len() {
			if !a.IsNull(r) && !slices.Contains(values, a.Value(r)) {
				return r, fmt.Sprintf("%q is not one of %s", a.Value(r), strings.Join(values, ", "))
			}
		}
		return -1, ""
	}}}
}

// rowRule checks each row with the function prepare returns for a batch, which says what is
// wrong with row r ("" for nothing); it may relate col to other columns of the row.
func rowRule(col string, prepare func(rec arrow.RecordBatch) func(r int) string) []rule {
	return []rule{{col: col, check: func(rec arrow.RecordBatch, _ int) (int, string) {
		ok := prepare(rec)
		for r := range int(rec.NumRows()) {
			if why := ok(r); why != "" {
				return r, why
			}
		}
		return -1, ""
	}}}
}

// listLen is the length of the list in row r of l.
func listLen(l *array.List, r int) int64 {
	lo, hi := l.ValueOffsets(r)
	return hi - lo
}

// column is the named column of a batch of a declared table, as array type A.
func column[A arrow.Array](rec arrow.RecordBatch, name string) A {
	a, err := Column[A](rec, name)
	if err != nil {
		panic(fmt.Sprintf("schema: rule: %v", err)) // a declaration mistake, caught by with
	}
	return a
}
