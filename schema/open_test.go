package schema

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// writeGood writes a multi-batch episodes file and returns its path and bytes.
func writeGood(t *testing.T, rows int) (string, []byte) {
	t.Helper()
	rec := randomBatch(Episodes.Schema, rows, 77, nil)
	defer rec.Release()
	p := filepath.Join(t.TempDir(), "step-000001", "rollout", "episodes.arrow")
	if err := Episodes.WriteBatches(p, testLineage, rec); err != nil {
		t.Fatal(err)
	}
	return p, readBytes(t, p)
}

// openErr opens path and checks the error starts with "open <path>: " and
// contains want.
func openErr(t *testing.T, open func(string) (*File, error), path, want string) {
	t.Helper()
	f, err := open(path)
	if err == nil {
		f.Close()
		t.Fatalf("open %s succeeded, want error %q", path, want)
	}
	if !strings.HasPrefix(err.Error(), "open "+path+": ") || !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want prefix %q and %q", err, "open "+path+": ", want)
	}
}

func TestOpenTruncated(t *testing.T) {
	_, data := writeGood(t, 70_000)
	dir := t.TempDir()
	for _, n := range []int{0, 3, 6, 8, 100, len(data) / 3, len(data) / 2, len(data) - 11, len(data) - 6, len(data) - 1} {
		p := writeFile(t, filepath.Join(dir, fmt.Sprintf("cut-%d.arrow", n)), data[:n])
		openErr(t, Open, p, "truncated or corrupt Arrow file")
	}
}

func TestOpenNotArrow(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, filepath.Join(dir, "notes.arrow"), []byte("episode_id,reward\nx,1\n"))
	openErr(t, Open, p, "not an Arrow IPC file (bad magic)")
	// An Arrow *stream* is not a file either.
	rec := randomBatch(Scores.Schema, 5, 1, nil)
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.Close()
	p = writeFile(t, filepath.Join(dir, "stream.arrow"), buf.Bytes())
	openErr(t, Open, p, "not an Arrow IPC file (bad magic)")
	openErr(t, Open, filepath.Join(dir, "missing.arrow"), "no such file")
}

func TestOpenWrongTable(t *testing.T) {
	p, _ := writeGood(t, 10)
	openErr(t, Scores.Open, p, `table "episodes", want "scores"`)
	f, err := Episodes.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// writeRaw writes rec with the given schema metadata through ipc directly,
// bypassing Write's checks, to make files Write would refuse to make.
func writeRaw(t *testing.T, path string, rec arrow.RecordBatch, md map[string]string) string {
	t.Helper()
	m := arrow.MetadataFrom(md)
	s := arrow.NewSchema(rec.Schema().Fields(), &m)
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(s), ipc.WithZstd())
	if err != nil {
		t.Fatal(err)
	}
	r := array.NewRecordBatch(s, rec.Columns(), rec.NumRows())
	defer r.Release()
	if err := w.Write(r); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, path, buf.Bytes())
}

func lineageMD(t *testing.T, id string) map[string]string {
	md, err := testLineage.metadata(Episodes)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for i, k := range md.Keys() {
		m[k] = md.Values()[i]
	}
	m[keySchema] = id
	return m
}

func TestOpenBadMetadata(t *testing.T) {
	rec := randomBatch(Episodes.Schema, 10, 1, nil)
	defer rec.Release()
	dir := t.TempDir()

	p := writeRaw(t, filepath.Join(dir, "v99.arrow"), rec, lineageMD(t, "episodes@99"))
	openErr(t, Open, p, "unknown version 99 of table episodes (this build knows 2)")
	openErr(t, Episodes.Open, p, "unknown version 99 of table episodes (this build knows 2)")

	p = writeRaw(t, filepath.Join(dir, "v0.arrow"), rec, lineageMD(t, "episodes@0"))
	openErr(t, Open, p, "unknown version 0 of table episodes")

	p = writeRaw(t, filepath.Join(dir, "unknown.arrow"), rec, lineageMD(t, "no_such_table@1"))
	openErr(t, Open, p, `unknown table "no_such_table"`)

	p = writeRaw(t, filepath.Join(dir, "garbled.arrow"), rec, lineageMD(t, "episodes"))
	openErr(t, Open, p, "want name@version")

	p = writeRaw(t, filepath.Join(dir, "plain.arrow"), rec, map[string]string{"other": "x"})
	openErr(t, Open, p, "metadata key evosteer.schema missing")

	md := lineageMD(t, "episodes@2")
	delete(md, keyStep)
	p = writeRaw(t, filepath.Join(dir, "nostep.arrow"), rec, md)
	openErr(t, Open, p, "evosteer.step")

	md = lineageMD(t, "episodes@2")
	md[keyInputs] = "[1,2]"
	p = writeRaw(t, filepath.Join(dir, "badinputs.arrow"), rec, md)
	openErr(t, Open, p, "evosteer.inputs")
}

func TestOpenBadColumns(t *testing.T) {
	rec := randomBatch(Episodes.Schema, 10, 1, nil)
	defer rec.Release()
	dir := t.TempDir()
	md := lineageMD(t, "episodes@2")

	r := dropColumn(rec, "reward")
	defer r.Release()
	p := writeRaw(t, filepath.Join(dir, "missing.arrow"), r, md)
	openErr(t, Open, p, `column "reward": missing`)

	r2 := withColumn(rec, arrow.Field{Name: "reward", Type: arrow.PrimitiveTypes.Int64}, rec.Column(17))
	defer r2.Release()
	p = writeRaw(t, filepath.Join(dir, "type.arrow"), r2, md)
	openErr(t, Open, p, `column "reward": type int64, want float64`)

	perm := make([]int, rec.NumCols())
	for i := range perm {
		perm[i] = i
	}
	perm[0], perm[1] = 1, 0
	r3 := shuffled(rec, perm)
	defer r3.Release()
	p = writeRaw(t, filepath.Join(dir, "order.arrow"), r3, md)
	openErr(t, Open, p, "out of declared order")
}

// TestReadNullInNonNullable: a file (not written by Write) holding a null
// in a non-nullable column opens, but reading names the file and batch.
func TestReadNullInNonNullable(t *testing.T) {
	rec := randomBatch(Episodes.Schema, 10, 1, map[string]bool{"reward": true})
	defer rec.Release()
	if rec.Column(11).NullN() == 0 {
		t.Fatal("test data has no null reward")
	}
	p := writeRaw(t, filepath.Join(t.TempDir(), "nulls.arrow"), rec, lineageMD(t, "episodes@2"))
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.ReadAll()
	if err == nil || !strings.Contains(err.Error(), "read "+p+": batch 0: column \"reward\"") {
		t.Errorf("ReadAll error = %v", err)
	}
}

// TestCorruptBytes flips bytes across a valid file: every outcome must be an
// error naming the file (from Open or from reading), never a panic, and a
// file that still reads must read the original data (no silent change).
func TestCorruptBytes(t *testing.T) {
	p0, data := writeGood(t, 3000)
	f0, err := Open(p0)
	if err != nil {
		t.Fatal(err)
	}
	defer f0.Close()
	orig, err := f0.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Release()
	dir := t.TempDir()
	var openErrs, readErrs, ok int
	for pos := 0; pos < len(data); pos += 1 + len(data)/400 {
		bad := bytes.Clone(data)
		bad[pos] ^= 0x5a
		p := writeFile(t, filepath.Join(dir, fmt.Sprintf("flip-%d.arrow", pos)), bad)
		f, err := Open(p)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "open "+p+": ") {
				t.Errorf("flip %d: error %q lacks the path", pos, err)
			}
			openErrs++
			continue
		}
		tab, err := f.ReadAll()
		switch {
		case err != nil:
			if !strings.HasPrefix(err.Error(), "read "+p+": batch ") {
				t.Errorf("flip %d: read error %q lacks path and batch", pos, err)
			}
			readErrs++
		case !array.TableEqual(tab, orig):
			t.Errorf("flip %d: file reads without error but with different data", pos)
		default:
			ok++
		}
		if tab != nil {
			tab.Release()
		}
		f.Close()
	}
	t.Logf("%d open errors, %d read errors, %d harmless flips", openErrs, readErrs, ok)
	if openErrs == 0 || readErrs == 0 {
		t.Error("expected both open and read errors from corruption")
	}
}

func TestReaderAfterClose(t *testing.T) {
	p, _ := writeGood(t, 10)
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := f.Reader(); err == nil {
		t.Error("Reader after Close succeeded")
	}
}

func TestConforms(t *testing.T) {
	s := func(fs ...arrow.Field) *arrow.Schema { return arrow.NewSchema(fs, nil) }
	want := s(
		arrow.Field{Name: "id", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "xs", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Float32)},
		arrow.Field{Name: "f", Type: arrow.FixedSizeListOfNonNullable(3, arrow.PrimitiveTypes.Float32)},
		arrow.Field{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)})},
	)
	duck := s(
		arrow.Field{Name: "st", Nullable: true, Type: arrow.StructOf(arrow.Field{Name: "a", Nullable: true,
			Type: arrow.ListOfField(arrow.Field{Name: "l", Type: arrow.PrimitiveTypes.Int64})})},
		arrow.Field{Name: "f", Type: arrow.FixedSizeListOfField(3, arrow.Field{Name: "l", Type: arrow.PrimitiveTypes.Float32, Nullable: true}), Nullable: true},
		arrow.Field{Name: "id", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "xs", Type: arrow.ListOfField(arrow.Field{Name: "l", Type: arrow.PrimitiveTypes.Float32, Nullable: true}), Nullable: true},
	)
	if err := Conforms(want, duck); err != nil {
		t.Errorf("nullability, element names and order should be ignored: %v", err)
	}
	cases := []struct {
		got  *arrow.Schema
		want string
	}{
		{s(want.Field(0), want.Field(1), want.Field(2)), `column "st": missing`},
		{s(append(want.Fields(), arrow.Field{Name: "z", Type: arrow.PrimitiveTypes.Int8})...), `column "z": not declared`},
		{s(append(want.Fields(), want.Field(0))...), `column "id": appears more than once`},
		{s(want.Field(0), arrow.Field{Name: "xs", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64)}, want.Field(2), want.Field(3)),
			`column "xs": type list<item: float64, nullable>, want list<item: float32>`},
		{s(want.Field(0), arrow.Field{Name: "xs", Type: arrow.LargeListOf(arrow.PrimitiveTypes.Float32)}, want.Field(2), want.Field(3)),
			`column "xs": type large_list`},
		{s(want.Field(0), want.Field(1), arrow.Field{Name: "f", Type: arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float32)}, want.Field(3)),
			`column "f": type fixed_size_list<item: float32, nullable>[4]`},
		{s(arrow.Field{Name: "id", Type: arrow.BinaryTypes.LargeString}, want.Field(1), want.Field(2), want.Field(3)),
			`column "id": type large_utf8, want utf8`},
		{s(want.Field(0), want.Field(1), want.Field(2), arrow.Field{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "b", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)})}),
			`column "st": type struct<b:`},
	}
	for _, c := range cases {
		err := Conforms(want, c.got)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Conforms(%v) = %v, want %q", c.got, err, c.want)
		}
	}
	// Every declared table conforms to itself and to its DuckDB form.
	for _, tbl := range All() {
		if err := Conforms(tbl.Schema, duckSchema(tbl.Schema)); err != nil {
			t.Errorf("%s: %v", tbl.Name, err)
		}
	}
}

// TestMetadataCanonical: the inputs are stored as sorted JSON and the keys
// in a fixed order.
func TestMetadataCanonical(t *testing.T) {
	md, err := testLineage.metadata(Episodes)
	if err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{"evosteer.schema", "evosteer.run", "evosteer.step", "evosteer.stage", "evosteer.config_sha256", "evosteer.inputs"}
	if fmt.Sprint(md.Keys()) != fmt.Sprint(wantKeys) {
		t.Errorf("keys %v", md.Keys())
	}
	want := `{"step-000006/aggregate/buckets.arrow":"bb","step-000006/update/checkpoint/policy.bin":"aa","tasks/train.arrow":"cc"}`
	if got := md.Values()[5]; got != want {
		t.Errorf("inputs %s, want %s", got, want)
	}
	empty, _ := Lineage{}.metadata(Episodes)
	if got := empty.Values()[5]; got != "{}" {
		t.Errorf("empty inputs %q", got)
	}
}
