package schema

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
)

// Table is the declaration of one pipeline table.
type Table struct {
	Name    string
	Version int
	// Schema is the declared schema, without metadata. Files are written with
	// exactly this schema plus lineage metadata.
	Schema *arrow.Schema
	rules  []rule // the values' domains, checked on read (domain.go)
}

// ID is the value stored under the metadata key evosteer.schema, e.g.
// "episodes@1".
func (t *Table) ID() string { return fmt.Sprintf("%s@%d", t.Name, t.Version) }

// All returns every declared table, in the order ARCHITECTURE.md §4.2 lists them. The slice is
// fresh; the tables are shared and must not be modified.
func All() []*Table {
	return []*Table{
		Episodes, Decisions, Prompts, Executions, Scores, RhoDrift, Anchors, Buckets,
		Corrections, ValueData, Pairs, AnchorPool, PairsUsed, Losses, Coefficients, Ledger, Skills, LedgerState,
		Proposals, EvidencePool, AuthorState, Tasks, SimTruth, Checkpoint, UpdateMetrics, EvalResults, Probe, ExactCurve, CalibrationFit, Pilot,
	}
}

// Lookup returns the table with the given name.
func Lookup(name string) (*Table, bool) {
	for _, t := range All() {
		if t.Name == name {
			return t, true
		}
	}
	return nil, false
}

// knownVersions lists the versions of a table this build can read. Only the
// current version exists today; when a table changes, bump its Version and
// decide here whether older files stay readable.
func knownVersions(t *Table) []int { return []int{t.Version} }

// Shorthands used by the table declarations.
var (
	utf8    arrow.DataType = arrow.BinaryTypes.String
	boolean arrow.DataType = arrow.FixedWidthTypes.Boolean
	i32     arrow.DataType = arrow.PrimitiveTypes.Int32
	i64     arrow.DataType = arrow.PrimitiveTypes.Int64
	u64     arrow.DataType = arrow.PrimitiveTypes.Uint64
	f32     arrow.DataType = arrow.PrimitiveTypes.Float32
	f64     arrow.DataType = arrow.PrimitiveTypes.Float64
)

// listOf is a list whose elements are never null: list columns hold
// sequences of values, and a null element is a bug upstream.
func listOf(elem arrow.DataType) arrow.DataType { return arrow.ListOfNonNullable(elem) }

// fixedList is a fixed-size list with non-null elements.
func fixedList(n int32, elem arrow.DataType) arrow.DataType {
	return arrow.FixedSizeListOfNonNullable(n, elem)
}

// field declares a non-nullable column (the default: most values always exist).
func field(name string, dt arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: dt}
}

// nullable declares a column that may hold nulls.
func nullable(name string, dt arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: dt, Nullable: true}
}

// declare builds a Table; it panics on a malformed declaration so that a
// mistake fails every test at package init rather than at run time.
func declare(name string, version int, fields ...arrow.Field) *Table {
	if name == "" || version < 1 {
		panic(fmt.Sprintf("schema: bad declaration %q@%d", name, version))
	}
	seen := make(map[string]bool, len(fields))
	for _, f := range fields {
		if f.Name == "" || seen[f.Name] {
			panic(fmt.Sprintf("schema: table %s: empty or duplicate column %q", name, f.Name))
		}
		seen[f.Name] = true
	}
	t := &Table{Name: name, Version: version, Schema: arrow.NewSchema(fields, nil)}
	for _, f := range fields {
		if isFloat(f.Type) || isFloat(listElem(f.Type)) {
			t.rules = append(t.rules, finite(f.Name))
		}
	}
	return t
}

// as declares a table of another name with t's columns and domains: rows of t kept for another
// purpose, in files that must not be taken for t's.
func (t *Table) as(name string, version int) *Table {
	c := declare(name, version, t.Schema.Fields()...)
	c.rules = slices.Clone(t.rules) // t's own finite rules included
	return c
}

// listElem is the element type of a list or fixed-size list type, nil for other types.
func listElem(dt arrow.DataType) arrow.DataType {
	if l, ok := dt.(arrow.ListLikeType); ok {
		return l.Elem()
	}
	return nil
}

// Conforms reports whether got has the same set of columns as want (order
// may differ) with the same types, ignoring nullability and the names and
// nullability of list elements (recursively through list, large_list,
// fixed_size_list and struct). This is the comparison to use for data coming
// from DuckDB, which marks every field nullable and names list elements "l";
// Schema.Equal would reject it. The error names the first offending column
// (in want's order, then extra columns in got's order) and both types.
// Metadata is ignored.
func Conforms(want, got *arrow.Schema) error {
	idx := make(map[string]int, got.NumFields())
	for i, f := range got.Fields() {
		if _, dup := idx[f.Name]; dup {
			return fmt.Errorf("column %q: appears more than once", f.Name)
		}
		idx[f.Name] = i
	}
	for _, w := range want.Fields() {
		i, ok := idx[w.Name]
		if !ok {
			return fmt.Errorf("column %q: missing", w.Name)
		}
		if g := got.Field(i); !typesConform(w.Type, g.Type) {
			return fmt.Errorf("column %q: type %s, want %s", w.Name, g.Type, w.Type)
		}
	}
	for _, g := range got.Fields() {
		if !want.HasField(g.Name) {
			return fmt.Errorf("column %q: not declared (type %s)", g.Name, g.Type)
		}
	}
	return nil
}

// typesConform compares types structurally, ignoring nullability and list
// element names. Struct member names matter (they are data, not
// decoration); list element names do not.
func typesConform(want, got arrow.DataType) bool {
	if want.ID() != got.ID() {
		return false
	}
	switch w := want.(type) {
	case *arrow.ListType:
		return typesConform(w.Elem(), got.(*arrow.ListType).Elem())
	case *arrow.LargeListType:
		return typesConform(w.Elem(), got.(*arrow.LargeListType).Elem())
	case *arrow.FixedSizeListType:
		g := got.(*arrow.FixedSizeListType)
		return w.Len() == g.Len() && typesConform(w.Elem(), g.Elem())
	case *arrow.StructType:
		g := got.(*arrow.StructType)
		if w.NumFields() != g.NumFields() {
			return false
		}
		for i := range w.NumFields() {
			wf, gf := w.Field(i), g.Field(i)
			if wf.Name != gf.Name || !typesConform(wf.Type, gf.Type) {
				return false
			}
		}
		return true
	default:
		return arrow.TypeEqual(want, got)
	}
}
