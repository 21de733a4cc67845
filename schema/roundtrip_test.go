package schema

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var update = flag.Bool("update", false, "rewrite testdata/*.schema.golden")

// readColumns opens path as table tbl and returns each column concatenated
// into one array (caller releases), after checking the file's header fields.
func readColumns(t *testing.T, tbl *Table, path string, wantRows int64) []arrow.Array {
	t.Helper()
	f, err := tbl.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Table != tbl || f.Version != tbl.Version || f.Path != path {
		t.Errorf("header: table %v version %d path %q", f.Table.Name, f.Version, f.Path)
	}
	if f.NumRows != wantRows {
		t.Errorf("NumRows = %d, want %d", f.NumRows, wantRows)
	}
	if !reflect.DeepEqual(f.Lineage, testLineage) {
		t.Errorf("Lineage = %+v, want %+v", f.Lineage, testLineage)
	}
	// The file's fields are exactly the declaration (types, nullability,
	// element names), whatever the input looked like.
	if got := arrow.NewSchema(f.Schema.Fields(), nil); !got.Equal(tbl.Schema) {
		t.Errorf("stored schema\n%s\nwant\n%s", got, tbl.Schema)
	}
	tab, err := f.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Release()
	if tab.NumRows() != wantRows {
		t.Errorf("ReadAll rows = %d, want %d", tab.NumRows(), wantRows)
	}
	var cols []arrow.Array
	for i := range int(tab.NumCols()) {
		ch := tab.Column(i).Data().Chunks()
		if len(ch) == 0 {
			cols = append(cols, array.MakeArrayOfNull(memory.DefaultAllocator, tbl.Schema.Field(i).Type, 0))
			continue
		}
		c, err := array.Concatenate(ch, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	return cols
}

func compareColumns(t *testing.T, tbl *Table, got []arrow.Array, want arrow.RecordBatch) {
	t.Helper()
	for i, f := range tbl.Schema.Fields() {
		w := want.Column(want.Schema().FieldIndices(f.Name)[0])
		// compare values, not types: the input may be typed the DuckDB way
		wd := retype(w.Data(), f.Type)
		wa := array.MakeFromData(wd)
		if !array.Equal(got[i], wa) {
			t.Errorf("column %q differs after round trip", f.Name)
		}
		wa.Release()
		wd.Release()
	}
}

func TestRoundTrip(t *testing.T) {
	for i, tbl := range All() {
		for _, rows := range []int{0, 1, 1000} {
			t.Run(fmt.Sprintf("%s/%d", tbl.Name, rows), func(t *testing.T) {
				rec := randomBatch(tbl.Schema, rows, uint64(100*i+rows), nil)
				defer rec.Release()
				path := filepath.Join(t.TempDir(), "step-000007", tbl.Name+".arrow")
				if err := tbl.WriteBatches(path, testLineage, rec); err != nil {
					t.Fatal(err)
				}
				cols := readColumns(t, tbl, path, int64(rows))
				compareColumns(t, tbl, cols, rec)
				for _, c := range cols {
					c.Release()
				}
				// The generic Open finds the table by itself.
				f, err := Open(path)
				if err != nil {
					t.Fatal(err)
				}
				if f.Table != tbl {
					t.Errorf("Open: table %s, want %s", f.Table.Name, tbl.Name)
				}
				f.Close()
			})
		}
	}
}

// TestNullableColumnsHoldNulls makes sure the random data did exercise nulls
// in nullable columns, so the round trip tests validity bitmaps.
func TestNullableColumnsHoldNulls(t *testing.T) {
	rec := randomBatch(Ledger.Schema, 100, 1, nil)
	defer rec.Release()
	for i, f := range Ledger.Schema.Fields() {
		if f.Nullable && rec.Column(i).NullN() == 0 {
			t.Errorf("column %s has no nulls", f.Name)
		}
	}
}

func TestAllAndLookup(t *testing.T) {
	want := []string{"episodes", "decisions", "prompts", "executions", "scores", "rho_drift", "anchors", "buckets",
		"corrections", "value_data", "pairs", "anchor_pool", "pairs_used", "losses", "coefficients", "ledger", "skills", "ledger_state", "proposals", "evidence_pool", "author_state", "tasks", "sim_truth", "checkpoint", "update_metrics", "eval_results", "probe", "exact_curve", "calibration_fit", "pilot"}
	var got []string
	for _, tbl := range All() {
		got = append(got, tbl.Name)
		if l, ok := Lookup(tbl.Name); !ok || l != tbl {
			t.Errorf("Lookup(%q) = %v, %v", tbl.Name, l, ok)
		}
		if tbl.Schema.Metadata().Len() != 0 {
			t.Errorf("%s: declared schema has metadata", tbl.Name)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("All() = %v, want %v", got, want)
	}
	if _, ok := Lookup("no_such_table"); ok {
		t.Error("Lookup of an undeclared table succeeded")
	}
	if id := Episodes.ID(); id != "episodes@2" {
		t.Errorf("ID = %q", id)
	}
}

// renderSchema is the golden-file text of a table declaration.
func renderSchema(tbl *Table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "table %s version %d\n", tbl.Name, tbl.Version)
	for _, f := range tbl.Schema.Fields() {
		fmt.Fprintf(&b, "%s: %s", f.Name, f.Type)
		if f.Nullable {
			b.WriteString(" nullable")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestGoldenSchemas pins every declaration: changing a table must show up in
// review as a golden diff (and, if incompatible, a version bump).
// Regenerate with: go test ./schema -run TestGoldenSchemas -update
func TestGoldenSchemas(t *testing.T) {
	for _, tbl := range All() {
		path := filepath.Join("testdata", tbl.Name+".schema.golden")
		got := renderSchema(tbl)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create)", err)
		}
		if got != string(want) {
			t.Errorf("%s: declaration differs from %s (run with -update if intended)\ngot:\n%s\nwant:\n%s", tbl.Name, path, got, want)
		}
	}
}

func TestSHA256File(t *testing.T) {
	p := writeFile(t, filepath.Join(t.TempDir(), "x"), []byte("abc"))
	got, err := SHA256File(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Errorf("SHA256File = %s, want %s", got, want)
	}
	if _, err := SHA256File(p + ".missing"); err == nil {
		t.Error("no error for a missing file")
	}
}

// TestDataSHA256IgnoresTheLineage: two files of the same rows under different lineages have the
// same data hash (and different bytes); a changed value changes it.
func TestDataSHA256IgnoresTheLineage(t *testing.T) {
	dir := t.TempDir()
	rows := []PairRow{{PairID: "p", ComparisonID: "c", SkillID: "s", TaskID: "t", Family: "f", BPlus: true, Outcome: "win", Eligible: true}}
	write := func(name, run string, rows []PairRow) string {
		p := filepath.Join(dir, name)
		if err := WriteRows(Pairs, p, Lineage{Run: run, Stage: "aggregate", Step: 1, ConfigSHA256: run}, rows); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := write("a.arrow", "one", rows), write("b.arrow", "two", rows)
	changed := append([]PairRow(nil), rows...)
	changed[0].TaskID = "u"
	c := write("c.arrow", "one", changed)
	ha, _ := DataSHA256(a)
	hb, _ := DataSHA256(b)
	hc, err := DataSHA256(c)
	if err != nil || ha != hb || ha == hc {
		t.Fatalf("data hashes %s %s %s: %v", ha, hb, hc, err)
	}
	ba, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if string(ba) == string(bb) {
		t.Fatal("the two lineages wrote the same bytes: the test shows nothing")
	}
}
