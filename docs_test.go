package evosteer_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/schema"
)

// The documents the product cites live in docs/; these tests keep every citation pointing into
// the repository (docs/ARCHITECTURE.md and docs/METHOD.md say how they are cited).

// sourceFile reports whether a file holds text the tests read: code, SQL, documentation,
// configuration and scripts.
func sourceFile(name string) bool {
	switch filepath.Ext(name) {
	case ".go", ".md", ".sql", ".yaml", ".yml", ".py", ".sh":
		return true
	}
	return name == "Makefile"
}

// joined is a file's text with its lines joined by single spaces and the comment markers at line
// starts removed, so that a citation broken across two comment lines is still one phrase.
var lineBreak = regexp.MustCompile(`[ \t]*\n[ \t]*(?:(?://|--|#)[ \t]*)?`)

// sources returns every source file of the repository (relative path → joined text), skipping
// hidden folders and the folders of build and run outputs.
func sources(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || p == "runs" || p == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !sourceFile(d.Name()) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(p)] = lineBreak.ReplaceAllString(string(b), " ")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("found only %d source files; is the test running at the repository root?", len(out))
	}
	return out
}

// around is the text around match m of s, for error messages.
func around(s string, m []int) string {
	lo, hi := max(0, m[0]-40), min(len(s), m[1]+40)
	for lo > 0 && !utf8Start(s[lo]) {
		lo--
	}
	for hi < len(s) && !utf8Start(s[hi]) {
		hi++
	}
	return s[lo:hi]
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// TestNoDocumentOutsideTheRepository fails when a file cites a document a clone does not
// contain: the folder beside the checkout, the original design page, or sections of the design
// or of the reference release's specification instead of docs/.
func TestNoDocumentOutsideTheRepository(t *testing.T) {
	forbidden := []struct {
		re   *regexp.Regexp
		why  string
		hint string
	}{
		{regexp.MustCompile(`\.\./shared`), "names the folder beside the checkout", "point into docs/ or the repository"},
		{regexp.MustCompile(`DESIGN\.md`), "names the original design page", "cite docs/ARCHITECTURE.md"},
		{regexp.MustCompile(`(?i)\b(?:reference|design)\s*§`), "cites a section of a document outside the repository", "cite METHOD.md §N or ARCHITECTURE.md §N"},
		{regexp.MustCompile(`\bDESIGN\s+§?\d`), "cites a section of the original design", "cite ARCHITECTURE.md §N"},
		{regexp.MustCompile(`(?i)\breference\s+\d+\.\d+`), "cites a section of the reference release's specification", "cite METHOD.md §N.M"},
	}
	for path, text := range sources(t) {
		for _, f := range forbidden {
			for _, m := range f.re.FindAllStringIndex(text, -1) {
				t.Errorf("%s %s (%q): %s", path, f.why, around(text, m), f.hint)
			}
		}
	}
}

// headings returns the numbers of a document's numbered headings ("## 4 Tables" → "4",
// "### 4.2 Every table" → "4.2").
func headings(t *testing.T, doc string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("docs", doc))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#{2,3} (\d+(?:\.\d+)?) \S`).FindAllStringSubmatch(string(b), -1) {
		if out[m[1]] {
			t.Errorf("docs/%s has two headings numbered %s", doc, m[1])
		}
		out[m[1]] = true
	}
	if len(out) < 5 {
		t.Fatalf("docs/%s has only %d numbered headings", doc, len(out))
	}
	return out
}

// docCitation matches "METHOD.md §5.3", "METHOD.md §4.2–§4.4, §5.5" and
// "METHOD.md §5.3–5.4": the document, the first section and any further ones.
var (
	docCitation = regexp.MustCompile(`\b(METHOD|ARCHITECTURE)\.md §(\d+(?:\.\d+)?)((?:(?:\s*,\s*|\s+and\s+|\s+or\s+)§\d+(?:\.\d+)?|–§?\d+(?:\.\d+)?)*)`)
	sectionNum  = regexp.MustCompile(`\d+(?:\.\d+)?`)
)

// TestDocCitationsNameHeadings checks that every "METHOD.md §N[.M]" and "ARCHITECTURE.md §N[.M]"
// in the repository names a numbered heading of that document.
func TestDocCitationsNameHeadings(t *testing.T) {
	docs := map[string]map[string]bool{"METHOD": headings(t, "METHOD.md"), "ARCHITECTURE": headings(t, "ARCHITECTURE.md")}
	cited := 0
	for path, text := range sources(t) {
		for _, m := range docCitation.FindAllStringSubmatchIndex(text, -1) {
			doc := text[m[2]:m[3]]
			nums := append([]string{text[m[4]:m[5]]}, sectionNum.FindAllString(text[m[6]:m[7]], -1)...)
			for _, n := range nums {
				cited++
				if !docs[doc][n] {
					t.Errorf("%s cites %s.md §%s (%q), which has no such heading", path, doc, n, around(text, m[:2]))
				}
			}
		}
	}
	if cited < 90 {
		t.Errorf("found only %d citations of docs/; the pattern no longer reads them", cited)
	}
}

// paperItem matches a citation of a numbered item of the paper's appendices: "Def. B.3",
// "Lemma A.12", "Prop. C.5", "Def. B.1, B.3".
var (
	paperItem = regexp.MustCompile(`\b(Def\.|Definition|Prop\.|Proposition|Lemma|Remark|Cor\.|Corollary|Assumption)\s+([A-D]\.\d+(?:(?:,\s*|\s+and\s+|\s+or\s+)[A-D]\.\d+)*)\b`)
	itemNum   = regexp.MustCompile(`[A-D]\.\d+`)
	paperEq   = regexp.MustCompile(`\bEqs?\.\s*\(?(\d+)\)?`)
	kinds     = map[string]string{"Def.": "Definition", "Prop.": "Proposition", "Cor.": "Corollary"}
)

// TestPaperCitationsAreNumberedItems checks that every numbered item of the paper the repository
// cites ("Lemma A.12", "Eq. (10)") is listed, with the same kind, in the numbering table of
// METHOD.md §1.2, which gives each item the number the paper's source assigns it.
func TestPaperCitationsAreNumberedItems(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("docs", "METHOD.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, found := strings.Cut(string(b), "### 1.2 ")
	table, _, next := strings.Cut(table, "\n### ")
	if !found || !next {
		t.Fatal("docs/METHOD.md has no section 1.2 followed by another section")
	}
	items, eqs := map[string]bool{}, map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\| (Definition|Proposition|Lemma|Remark|Corollary|Assumption) ([A-D]\.\d+) \|`).FindAllStringSubmatch(table, -1) {
		items[m[1]+" "+m[2]] = true
	}
	for _, m := range regexp.MustCompile(`(?m)^\| Eq\. \((\d+)\) \|`).FindAllStringSubmatch(table, -1) {
		eqs[m[1]] = true
	}
	if len(items) < 20 || len(eqs) != 12 {
		t.Fatalf("METHOD.md §1.2 lists %d appendix items and %d equations; the table's format changed", len(items), len(eqs))
	}
	for path, text := range sources(t) {
		for _, m := range paperItem.FindAllStringSubmatchIndex(text, -1) {
			kind := text[m[2]:m[3]]
			if k, ok := kinds[kind]; ok {
				kind = k
			}
			for _, n := range itemNum.FindAllString(text[m[4]:m[5]], -1) {
				if !items[kind+" "+n] {
					t.Errorf("%s cites %s %s (%q), which METHOD.md §1.2 does not list", path, kind, n, around(text, m[:2]))
				}
			}
		}
		for _, m := range paperEq.FindAllStringSubmatchIndex(text, -1) {
			if n := text[m[2]:m[3]]; !eqs[n] {
				t.Errorf("%s cites Eq. %s (%q), which METHOD.md §1.2 does not list", path, n, around(text, m[:2]))
			}
		}
	}
}

// TestArchitectureListsEveryTable checks that the table list of ARCHITECTURE.md §4.2 names every
// table schema declares, with its current version, and nothing else.
func TestArchitectureListsEveryTable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(b), "### 4.2 ")
	section, _, _ = strings.Cut(section, "\n## ")
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^\| ([a-z_]+@\d+) \|`).FindAllStringSubmatch(section, -1) {
		listed = append(listed, m[1])
	}
	var declared []string
	for _, tb := range schema.All() {
		declared = append(declared, tb.ID())
	}
	if !slices.Equal(listed, declared) {
		t.Errorf("ARCHITECTURE.md §4.2 lists the tables\n  %v\nschema.All declares, in this order,\n  %v", listed, declared)
	}
}

// ARCHITECTURE.md's layout table (§14) names every package of the module, as a `path` cell (a stage package
// is covered by `stages/<name>/`, a subpackage by a mention of its last two path elements), so
// a package added or moved without a line there fails.
func TestLayoutNamesEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "\n## 14 Layout")
	if start < 0 {
		t.Fatal("docs/ARCHITECTURE.md has no section \"14 Layout\"")
	}
	layout := text[start:]
	if end := strings.Index(layout[1:], "\n## "); end >= 0 {
		layout = layout[:end+1]
	}
	var dirs []string
	err = filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "runs" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") && filepath.Dir(p) != "." {
			if dir := filepath.ToSlash(filepath.Dir(p)); !slices.Contains(dirs, dir) {
				dirs = append(dirs, dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 20 {
		t.Fatalf("found only %d package folders", len(dirs))
	}
	for _, dir := range dirs {
		parts := strings.Split(dir, "/")
		switch {
		case parts[0] == "stages" && strings.Contains(layout, "`stages/<name>/`"):
		case strings.Contains(layout, "`"+dir+"`") || strings.Contains(layout, "`"+dir+"/`"):
		case len(parts) > 2 && strings.Contains(layout, "`"+strings.Join(parts[len(parts)-2:], "/")+"`"):
		default:
			t.Errorf("docs/ARCHITECTURE.md's layout table does not name package folder %s", dir)
		}
	}
}

// mdLink is a Markdown link or image target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestMarkdownLinksResolve: every relative link of the README and of docs/*.md names a file or
// folder of the repository (anchors after # are not checked).
func TestMarkdownLinksResolve(t *testing.T) {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(files, "README.md") {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(text), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(f), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", f, m[1])
			}
		}
	}
}
