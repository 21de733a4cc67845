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

// TestEscapeWritesControlCharactersAsEscapes: every C0 and C1 control character, DEL and every
// byte that is not UTF-8 is written as a Go escape; other text (θ, −, …) passes unchanged, and
// escaping twice changes nothing more.
func TestEscapeWritesControlCharactersAsEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"HTTP 400: \x1b[2J\x1b[31mboom": `HTTP 400: \x1b[2J\x1b[31mboom`,
		"a\rb\ac\x00d\x7fe":             `a\rb\ac\x00d\x7fe`,
		"tab\tnew\nline":                `tab\tnew\nline`,
		"csi \u009b2J next \u0085":      `csi \u009b2J next \u0085`,
		"bad \xff\xfe utf-8":            `bad \xff\xfe utf-8`,
		`θ − ρ … C:\path`:               `θ − ρ … C:\path`,
	} {
		got := Escape(in)
		if got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
		if again := Escape(got); again != got {
			t.Errorf("Escape twice: %q, then %q", got, again)
		}
	}
	if got, want := EscapeLines("first \x1b[31m\nsecond\r\n"), "first \\x1b[31m\nsecond\\r\n"; got != want {
		t.Errorf("EscapeLines = %q, want %q (line breaks kept, the rest escaped)", got, want)
	}
}

// TestTableEscapesControlCharacters: the table format prints no control character but its own
// line breaks, in cells and in column names; the cell is the exact text in the batch.
func TestTableEscapesControlCharacters(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "task_id\x1b[2J", Type: arrow.BinaryTypes.String},
		{Name: "output", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append("hotpotqa/\x00f1")
	b.Field(1).(*array.StringBuilder).Append("\x1b]0;pwned\a\x1b[31mred\rover")
	rec := b.NewRecordBatch()
	defer rec.Release()
	if got := Cell(rec.Column(1), 0); got != "\x1b]0;pwned\a\x1b[31mred\rover" {
		t.Fatalf("Cell changed the text: %q", got)
	}
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, rr, Options{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if i := strings.IndexFunc(out, func(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f }); i >= 0 {
		t.Fatalf("control character %q at %d in\n%q", out[i], i, out)
	}
	for _, want := range []string{`task_id\x1b[2J`, `hotpotqa/\x00f1`, `\x1b]0;pwned\a\x1b[31mred\rover`} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %s:\n%s", want, out)
		}
	}
}

// TestCSVEscapesControlCharactersOnTheTerminal: csv for a terminal writes cells and column names
// through Escape, like the table; csv for a file keeps every byte.
func TestCSVEscapesControlCharactersOnTheTerminal(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "output\x1b[2J", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append("\x1b[2J\x1b[31mred\r\a")
	rec := b.NewRecordBatch()
	defer rec.Release()
	for terminal, want := range map[bool]string{
		true:  "output\\x1b[2J\n\\x1b[2J\\x1b[31mred\\r\\a\n",
		false: "output\x1b[2J\n\"\x1b[2J\x1b[31mred\r\a\"\n",
	} {
		rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Write(&buf, rr, Options{Format: "csv", Terminal: terminal}); err != nil {
			t.Fatal(err)
		}
		rr.Release()
		if buf.String() != want {
			t.Errorf("terminal %v: %q, want %q", terminal, buf.String(), want)
		}
	}
}

// TestJSONEscapesControlCharactersOnTheTerminal: json for a terminal writes DEL and the C1
// controls (U+009B is CSI on terminals that read them) as \u escapes, which encoding/json leaves
// as they are, and still parses back to the same text; json for a file keeps every byte.
func TestJSONEscapesControlCharactersOnTheTerminal(t *testing.T) {
	text := "a\x7fb\u009b2Jc\x1b[31m\u00e9"
	schema := arrow.NewSchema([]arrow.Field{{Name: "k\u009b", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append(text)
	rec := b.NewRecordBatch()
	defer rec.Release()
	for _, terminal := range []bool{true, false} {
		rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Write(&buf, rr, Options{Format: "json", Terminal: terminal}); err != nil {
			t.Fatal(err)
		}
		rr.Release()
		out := buf.String()
		raw := strings.ContainsFunc(out, func(r rune) bool { return r == 0x7f || r >= 0x80 && r <= 0x9f })
		if raw == terminal {
			t.Errorf("terminal %v: raw DEL or C1 control present = %v in %q", terminal, raw, out)
		}
		if terminal && !strings.Contains(out, `a\u007fb\u009b2Jc\u001b[31m`+"\u00e9") {
			t.Errorf("terminal: %q lacks the escapes", out)
		}
		var rows []map[string]string
		if err := json.Unmarshal(buf.Bytes(), &rows); err != nil || len(rows) != 1 || rows[0]["k\u009b"] != text {
			t.Errorf("terminal %v: %q does not parse back to the text: %v %v", terminal, out, rows, err)
		}
	}
}
