package arrowfmt

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Formats accepted by Write.
var Formats = []string{"table", "csv", "json"}

// Options tune the rendering.
type Options struct {
	Format   string // table (default), csv or json
	MaxWidth int    // table only: cut longer cells to this many characters (0 = no limit)
	MaxRows  int    // stop after this many rows (0 = all)
	// Terminal says the output is read on a terminal (standard output), not stored: csv then
	// writes every cell and column name through Escape, as the table format always does, and
	// json writes DEL and the C1 controls as \u escapes too (encoding/json escapes only those
	// below U+0020), so text from outside prints no control character. False keeps the data
	// byte for byte.
	Terminal bool
}

// Write renders every batch of rr to w.
func Write(w io.Writer, rr array.RecordReader, opt Options) error {
	switch opt.Format {
	case "", "table":
		return writeTable(w, rr, opt)
	case "csv":
		return writeCSV(w, rr, opt)
	case "json":
		return writeJSON(w, rr, opt)
	default:
		return fmt.Errorf("unknown format %q (want one of %v)", opt.Format, Formats)
	}
}

// Cell renders one value as text: NULL for nulls, JSON for nested values. Strings are copied:
// arrow strings point into the batch's memory, which DuckDB frees when the batch is released.
func Cell(col arrow.Array, i int) string {
	if col.IsNull(i) {
		return "NULL"
	}
	switch col.(type) {
	case *array.String, *array.LargeString, *array.StringView:
		return strings.Clone(col.ValueStr(i))
	}
	switch col.DataType().ID() {
	case arrow.LIST, arrow.LARGE_LIST, arrow.FIXED_SIZE_LIST, arrow.STRUCT, arrow.MAP:
		b, err := json.Marshal(col.GetOneForMarshal(i))
		if err == nil {
			return string(b)
		}
	}
	return col.ValueStr(i)
}

// rows walks the batches of rr, calling fn with each row's cells, up to max rows (0 = all).
func rows(rr array.RecordReader, max int, fn func(cells []string) error) (int, error) {
	n := 0
	for rr.Next() {
		rec := rr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			if max > 0 && n >= max {
				return n, nil
			}
			cells := make([]string, rec.NumCols())
			for c := range cells {
				cells[c] = Cell(rec.Column(c), i)
			}
			if err := fn(cells); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, rr.Err()
}

func header(rr array.RecordReader) []string {
	fields := rr.Schema().Fields()
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	return names
}

// clip escapes a cell for the terminal (a tab printed as a space) and cuts it to max characters.
func clip(s string, max int) string {
	s = Escape(strings.ReplaceAll(s, "\t", " "))
	if max > 0 && utf8.RuneCountInString(s) > max {
		r := []rune(s)
		return string(r[:max-1]) + "…"
	}
	return s
}

// writeTable buffers the rows to size the columns; MaxRows bounds what it holds.
func writeTable(w io.Writer, rr array.RecordReader, opt Options) error {
	head := header(rr)
	for i := range head {
		head[i] = Escape(head[i])
	}
	table := [][]string{head}
	n, err := rows(rr, opt.MaxRows, func(cells []string) error {
		for i := range cells {
			cells[i] = clip(cells[i], opt.MaxWidth)
		}
		table = append(table, cells)
		return nil
	})
	if err != nil {
		return err
	}
	widths := make([]int, len(head))
	numeric := make([]bool, len(head))
	for i, f := range rr.Schema().Fields() {
		numeric[i] = arrow.IsInteger(f.Type.ID()) || arrow.IsFloating(f.Type.ID()) || arrow.IsDecimal(f.Type.ID())
	}
	for _, row := range table {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	bw := bufio.NewWriter(w)
	line := func(row []string) {
		for i, c := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i > 0 {
				bw.WriteString("  ")
			}
			if numeric[i] {
				bw.WriteString(pad + c)
			} else if i == len(row)-1 {
				bw.WriteString(c)
			} else {
				bw.WriteString(c + pad)
			}
		}
		bw.WriteByte('\n')
	}
	line(table[0])
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = strings.Repeat("-", widths[i])
	}
	line(sep)
	for _, row := range table[1:] {
		line(row)
	}
	fmt.Fprintf(bw, "(%d row%s)\n", n, plural(n))
	return bw.Flush()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func writeCSV(w io.Writer, rr array.RecordReader, opt Options) error {
	cw := csv.NewWriter(w)
	write := cw.Write
	if opt.Terminal {
		write = func(cells []string) error {
			for i := range cells {
				cells[i] = Escape(cells[i])
			}
			return cw.Write(cells)
		}
	}
	if err := write(header(rr)); err != nil {
		return err
	}
	if _, err := rows(rr, opt.MaxRows, write); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// writeJSON streams a JSON array of objects with the columns in schema order.
func writeJSON(w io.Writer, rr array.RecordReader, opt Options) error {
	bw := bufio.NewWriter(w)
	names := header(rr)
	keys := make([][]byte, len(names))
	for i, n := range names {
		keys[i], _ = json.Marshal(n)
		if opt.Terminal {
			keys[i] = escapeJSONControls(keys[i])
		}
	}
	bw.WriteString("[")
	n := 0
	for rr.Next() {
		rec := rr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			if opt.MaxRows > 0 && n >= opt.MaxRows {
				break
			}
			if n > 0 {
				bw.WriteString(",")
			}
			bw.WriteString("\n  {")
			for c := 0; c < int(rec.NumCols()); c++ {
				v, err := json.Marshal(rec.Column(c).GetOneForMarshal(i))
				if err != nil {
					return fmt.Errorf("column %q row %d: %w", names[c], n, err)
				}
				if opt.Terminal {
					v = escapeJSONControls(v)
				}
				if c > 0 {
					bw.WriteString(", ")
				}
				bw.Write(keys[c])
				bw.WriteString(": ")
				bw.Write(v)
			}
			bw.WriteString("}")
			n++
		}
	}
	if err := rr.Err(); err != nil {
		return err
	}
	if n > 0 {
		bw.WriteString("\n")
	}
	bw.WriteString("]\n")
	return bw.Flush()
}

// escapeJSONControls rewrites the control characters json.Marshal leaves as they are (DEL and
// U+0080–U+009F, which some terminals read as commands) as \u escapes. Outside its strings
// json.Marshal writes only ASCII punctuation, digits and letters, so every such rune is inside a
// string, where the escape stands for the same character.
func escapeJSONControls(b []byte) []byte {
	if !bytes.ContainsFunc(b, unicode.IsControl) {
		return b
	}
	var out bytes.Buffer
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if unicode.IsControl(r) && r >= 0x7f {
			fmt.Fprintf(&out, `\u%04x`, r)
		} else {
			out.Write(b[:n])
		}
		b = b[n:]
	}
	return out.Bytes()
}
