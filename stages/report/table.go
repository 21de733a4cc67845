package report

import (
	"fmt"
	"strings"
)

// Table is a small table of the report, rendered in HTML and Markdown alike: the leading
// columns are labels (left-aligned), the others numbers (right-aligned).
type Table struct {
	Header []string
	Rows   []Row
	Labels int // leading label columns; at least the first column is one
}

// IsLabel reports whether column j holds labels.
func (t *Table) IsLabel(j int) bool { return j < max(t.Labels, 1) }

// Row is a table row; Bold marks block headers and Avg rows.
type Row struct {
	Cells []string
	Bold  bool
}

// Markdown renders the table as GitHub-flavoured Markdown.
func (t *Table) Markdown() string {
	var b strings.Builder
	line := func(cells []string, bold bool) {
		b.WriteString("|")
		for _, c := range cells {
			c = strings.ReplaceAll(c, "|", `\|`)
			if bold && c != "" {
				c = "**" + c + "**"
			}
			fmt.Fprintf(&b, " %s |", c)
		}
		b.WriteString("\n")
	}
	line(t.Header, false)
	b.WriteString("|")
	for j := range t.Header {
		if t.IsLabel(j) {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		line(r.Cells, r.Bold)
	}
	return b.String()
}
