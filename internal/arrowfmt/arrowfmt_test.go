package arrowfmt

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func sample(t *testing.T) array.RecordReader {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 20}, nil)
	b.Field(1).(*array.StringBuilder).Append("two\nlines")
	b.Field(1).AppendNull()
	b.Field(2).(*array.Float64Builder).AppendValues([]float64{0.5, 12.25}, nil)
	lb := b.Field(3).(*array.ListBuilder)
	vb := lb.ValueBuilder().(*array.StringBuilder)
	lb.Append(true)
	vb.AppendValues([]string{"a", "b"}, nil)
	lb.Append(true)
	rec := b.NewRecordBatch()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	return rr
}

func TestTableIsAligned(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sample(t), Options{MaxWidth: 40}); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"id  name        score  tags\n" +
		"--  ----------  -----  ---------\n" +
		" 1  two\\nlines    0.5  [\"a\",\"b\"]\n" +
		"20  NULL        12.25  []\n" +
		"(2 rows)\n"
	if buf.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestClipAndMaxRows(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sample(t), Options{MaxWidth: 4, MaxRows: 1}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "two…") || !strings.Contains(buf.String(), "(1 row)") {
		t.Fatalf("got\n%s", buf.String())
	}
}

func TestCSVAndJSON(t *testing.T) {
	var c bytes.Buffer
	if err := Write(&c, sample(t), Options{Format: "csv"}); err != nil {
		t.Fatal(err)
	}
	if want := "id,name,score,tags\n1,\"two\nlines\",0.5,\"[\"\"a\"\",\"\"b\"\"]\"\n20,NULL,12.25,[]\n"; c.String() != want {
		t.Fatalf("csv:\n%q\nwant\n%q", c.String(), want)
	}
	var j bytes.Buffer
	if err := Write(&j, sample(t), Options{Format: "json"}); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(j.Bytes(), &got); err != nil {
		t.Fatalf("json output does not parse: %v\n%s", err, j.String())
	}
	if len(got) != 2 || got[0]["name"] != "two\nlines" || got[1]["name"] != nil || got[1]["score"] != 12.25 {
		t.Fatalf("json: %v", got)
	}
	if err := Write(&j, sample(t), Options{Format: "xml"}); err == nil {
		t.Fatal("unknown format accepted")
	}
}
