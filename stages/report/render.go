package report

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/evosteer/evosteer-go/internal/atomicfile"
)

// The files Write puts into the report folder, besides one PNG per figure (<id>.png).
const (
	HTMLFile     = "index.html"
	MarkdownFile = "report.md"
)

// Files renders the report: index.html (self-contained: figures as data URIs, inline CSS, no
// external resource), report.md (the same content, figures linked) and the PNGs, by file name.
func (rep *Report) Files() (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, f := range rep.Sections {
		if f.PNG != nil {
			files[f.ID+".png"] = f.PNG
		}
	}
	var h bytes.Buffer
	if err := htmlPage.Execute(&h, rep); err != nil {
		return nil, fmt.Errorf("render %s: %w", HTMLFile, err)
	}
	files[HTMLFile] = h.Bytes()
	files[MarkdownFile] = []byte(rep.Markdown())
	return files, nil
}

// Write renders the report into the folder out atomically: the files go into a temporary
// folder beside it (hidden, so `evosteer sql` never loads it), which then replaces out whole.
// So that a mistyped --out never wipes a user's files, out must be new, empty, or an earlier
// report and nothing else (checkOut), and neither the run folder nor a folder above it.
func (rep *Report) Write(out string) error {
	if err := checkOut(out, rep.RunDir); err != nil {
		return fmt.Errorf("write report %s: %w", out, err)
	}
	files, err := rep.Files()
	if err != nil {
		return err
	}
	parent := filepath.Dir(filepath.Clean(out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("write report %s: %w", out, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(filepath.Clean(out))+".tmp-")
	if err != nil {
		return fmt.Errorf("write report %s: %w", out, err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed into place
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("write report %s: %w", out, err)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := atomicfile.WriteBytes(filepath.Join(tmp, name), files[name], 0o644); err != nil {
			return fmt.Errorf("write report %s: %w", out, err)
		}
	}
	if err := atomicfile.ReplaceDir(tmp, out); err != nil {
		return fmt.Errorf("write report %s: %w", out, err)
	}
	return nil
}

// signature is in the footer of every index.html Write makes: a folder whose index.html lacks
// it is not an earlier report.
const signature = "Written by <code>evosteer report</code>"

// checkOut refuses to replace out unless it is new, empty, or holds only an earlier report's
// files (index.html with the signature, report.md, PNGs: plain files, no folder), and refuses
// the run folder and every folder above it.
func checkOut(out, runDir string) error {
	if runDir != "" {
		o, r := resolved(out), resolved(runDir)
		if rel, err := filepath.Rel(o, r); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("it is the run folder %s or holds it; choose another --out (the default is %s)", runDir, filepath.Join(runDir, "report"))
		}
	}
	entries, err := os.ReadDir(out)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) == 0) {
		return nil
	}
	if err != nil {
		return err
	}
	report := false
	for _, e := range entries {
		name := e.Name()
		switch {
		case !e.Type().IsRegular():
			return fmt.Errorf("it holds %s, which no report writes; refusing to replace the folder (choose another --out)", name)
		case name == HTMLFile:
			page, err := os.ReadFile(filepath.Join(out, name))
			if err != nil {
				return err
			}
			report = bytes.Contains(page, []byte(signature))
		case name == MarkdownFile || strings.HasSuffix(name, ".png"):
		default:
			return fmt.Errorf("it holds %s, which no report writes; refusing to replace the folder (choose another --out)", name)
		}
	}
	if !report {
		return fmt.Errorf("it is not empty and holds no earlier report (an %s written by evosteer report); refusing to replace it (choose another --out)", HTMLFile)
	}
	return nil
}

// resolved is p made absolute with its symbolic links followed, as far as it exists.
func resolved(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	for dir, rest := abs, ""; ; {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs
		}
		dir, rest = parent, filepath.Join(filepath.Base(dir), rest)
	}
}

// Markdown renders the report as Markdown, with the figures linked as <id>.png beside it.
func (rep *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", rep.Title)
	if rep.Sim {
		fmt.Fprintf(&b, "> **%s**\n\n", SimNotice)
	}
	info := &Table{Header: []string{"", ""}, Rows: rep.Info, Labels: 2}
	b.WriteString(info.Markdown())
	for i, f := range rep.Sections {
		fmt.Fprintf(&b, "\n## %d. %s\n\n", i+1, f.Title)
		if f.PNG != nil {
			fmt.Fprintf(&b, "![%s](%s.png)\n\n", f.Title, f.ID)
		}
		if f.Note != "" {
			fmt.Fprintf(&b, "*%s*\n\n", f.Note)
		}
		if f.Caption != "" {
			fmt.Fprintf(&b, "%s\n\n", f.Caption)
		}
		if f.Table != nil {
			b.WriteString(f.Table.Markdown())
		}
	}
	fmt.Fprintf(&b, "\n---\nWritten by `evosteer report` from the run folder's Arrow files.\n")
	return b.String()
}

var htmlPage = template.Must(template.New(HTMLFile).Funcs(template.FuncMap{
	// A data URI must be typed as a URL, or html/template would replace it as unsafe.
	"pngURI": func(png []byte) template.URL {
		return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(png))
	},
	"inc":       func(i int) int { return i + 1 },
	"simNotice": func() string { return SimNotice },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: "Helvetica Neue", Arial, "Liberation Sans", sans-serif; color: #222; margin: 0; background: #f4f4f2; }
main { max-width: 960px; margin: 0 auto; padding: 24px 32px 48px; background: #fff; }
h1 { font-size: 1.7em; margin: 0.2em 0 0.6em; }
h2 { font-size: 1.3em; margin: 1.8em 0 0.5em; padding-top: 0.6em; border-top: 1px solid #ddd; }
.sim { background: #fff4d6; border: 1px solid #e0b84a; border-radius: 4px; padding: 10px 14px; font-weight: 600; }
.note { background: #eef3f8; border-left: 4px solid #7a9cc6; padding: 10px 14px; font-style: italic; }
figure { margin: 0; }
figure img { width: 100%; height: auto; border: 1px solid #e4e4e4; }
.caption { font-size: 0.93em; line-height: 1.45; color: #333; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #d0d0d0; padding: 4px 10px; text-align: right; }
th.l, td.l { text-align: left; }
th { background: #f0f0f0; }
tr.bold td { font-weight: 700; background: #fafafa; }
table.info td { text-align: left; }
table.info td:first-child { color: #555; white-space: nowrap; }
nav ol { columns: 2; }
footer { margin-top: 2.5em; font-size: 0.85em; color: #666; }
</style>
</head>
<body>
<main>
<h1>{{.Title}}</h1>
{{if .Sim}}<p class="sim">{{simNotice}}</p>
{{end}}<table class="info">
{{range .Info}}<tr>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
<nav><ol>
{{range .Sections}}<li><a href="#{{.ID}}">{{.Title}}</a></li>
{{end}}</ol></nav>
{{range $i, $f := .Sections}}<section id="{{$f.ID}}">
<h2>{{inc $i}}. {{$f.Title}}</h2>
{{if $f.PNG}}<figure><img src="{{pngURI $f.PNG}}" alt="{{$f.Title}}"></figure>
{{end}}{{if $f.Note}}<p class="note">{{$f.Note}}</p>
{{end}}{{if $f.Caption}}<p class="caption">{{$f.Caption}}</p>
{{end}}{{with $t := $f.Table}}<table>
<tr>{{range $j, $h := .Header}}<th{{if $t.IsLabel $j}} class="l"{{end}}>{{$h}}</th>{{end}}</tr>
{{range .Rows}}<tr{{if .Bold}} class="bold"{{end}}>{{range $j, $c := .Cells}}<td{{if $t.IsLabel $j}} class="l"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</table>
{{end}}</section>
{{end}}<footer>Written by <code>evosteer report</code> from the run folder's Arrow files.</footer>
</main>
</body>
</html>
`))
