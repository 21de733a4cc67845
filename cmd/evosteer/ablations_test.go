//go:build duckdb_arrow

package main

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/paradigms"
)

// makeVar is the default (?=) of a variable in the repository's Makefile, with $(NAME)
// references to other variables resolved.
func makeVar(t *testing.T, name string) string {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s*\?=\s*(\S+)\s*$`).FindSubmatch(mk)
	if m == nil {
		t.Fatalf("Makefile sets no %s ?= ...", name)
	}
	return regexp.MustCompile(`\$\((\w+)\)`).ReplaceAllStringFunc(string(m[1]), func(ref string) string {
		return makeVar(t, ref[2:len(ref)-1])
	})
}

// tableRows are a Markdown table's rows as cells keyed by the header, in order.
func tableRows(t *testing.T, md, firstHeader string) []map[string]string {
	t.Helper()
	var header []string
	var rows []map[string]string
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		switch {
		case header == nil && cells[0] == firstHeader:
			header = cells
		case header != nil && !strings.HasPrefix(cells[0], "*") && len(cells) == len(header):
			row := map[string]string{}
			for i, h := range header {
				row[h] = cells[i]
			}
			rows = append(rows, row)
		}
	}
	if header == nil {
		t.Fatalf("no table with a %q column:\n%s", firstHeader, md)
	}
	return rows
}

// TestMakeAblationsOnThePaperRun runs `make ablations`' command (the Makefile's ABL_CONFIG,
// configs/paper-run.yaml, whose pilot leaves ALFWorld out of the training pool) with every
// variant and paradigm at the smallest scale the flags allow: 1 seed, 1 step, 1 task record per
// step, 1 test task per benchmark, 1 evaluation run, 1 search task per task type. The study must
// finish; Table 2's searched-workflow row says why it has no alfworld and webshop (task type
// alfworld) cells and block averages, and every other cell of it and of every other row is a
// number; the full method's eval/table.md and its report say the same. Its cost is the 15 runs'
// pilots (8 single-agent episodes on each of 1,280 training tasks): about 45 CPU seconds.
func TestMakeAblationsOnThePaperRun(t *testing.T) {
	cfgPath := makeVar(t, "ABL_CONFIG")
	dir := t.TempDir()
	out, err := run(t, "", "ablations", "--config", filepath.Join("..", "..", cfgPath), "--dir", dir, "--seeds", "1", "--steps", "1",
		"--tasks", "1", "--test-tasks", "1", "--eval-runs", "1", "--search-tasks", "1", "--jobs", "2")
	if err != nil {
		t.Fatalf("ablations on %s: %v\n%s", cfgPath, err, out)
	}
	cfg, err := loadConfig(filepath.Join("..", "..", cfgPath))
	if err != nil {
		t.Fatal(err)
	}
	// The benchmarks of the task types the configuration's pilot leaves out.
	unsearched := map[string]bool{}
	if cfg.Tasks.Pilot != nil {
		for _, f := range cfg.Tasks.Pilot.ExcludeFamilies {
			for _, b := range append(slices.Clone(cfg.Families), slices.Collect(maps.Keys(cfg.OODFamilies))...) {
				if tt, _ := cfg.TaskType(b); tt == f {
					unsearched[b] = true
				}
			}
		}
	}
	if !unsearched["alfworld"] || !unsearched["webshop"] {
		t.Fatalf("%s no longer leaves alfworld (and webshop, mapped to it) without training tasks: %v", cfgPath, unsearched)
	}
	table2, err := os.ReadFile(filepath.Join(dir, "table2.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := tableRows(t, string(table2), "Variant")
	if want := 2 + len(paradigms.Names) + len(config.Ablations) + 1; len(rows) != want {
		t.Fatalf("table 2 has %d rows, want %d (direct, ρ, the paradigms, the ablations, full):\n%s", len(rows), want, table2)
	}
	number := func(cell string) bool {
		first, _, _ := strings.Cut(cell, " ") // "48.00 ± 2.43", "+0.15 ± 0.25", "0"
		_, err := strconv.ParseFloat(first, 64)
		return err == nil
	}
	for _, row := range rows {
		searched := row["Variant"] == "Searched workflow"
		for col, cell := range row {
			if col == "Variant" || strings.HasPrefix(col, "paper") {
				continue
			}
			var want string
			switch {
			case !searched:
			case unsearched[col]:
				tt, _ := cfg.TaskType(col)
				want = "n/a: no training task of type " + tt + " to search a workflow on"
			case strings.Contains(col, " avg") || strings.HasPrefix(col, "Δ "):
				want = "n/a: no alfworld score"
				if strings.Contains(col, "OOD") {
					want = "n/a: no webshop score"
				}
			}
			if want != "" && cell != want {
				t.Errorf("%s, %s: %q, want %q", row["Variant"], col, cell, want)
			}
			if want == "" && !number(cell) {
				t.Errorf("%s, %s: %q, want a number", row["Variant"], col, cell)
			}
		}
	}
	for _, f := range []struct {
		name, first string
		rows        int
	}{{"objectives.md", "Objective", 6}, {"beta.md", "β", 3}} {
		text, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			t.Fatal(err)
		}
		if got := len(tableRows(t, string(text), f.first)); got != f.rows || strings.Contains(string(text), "n/a") {
			t.Errorf("%s: %d rows, want %d, none n/a:\n%s", f.name, got, f.rows, text)
		}
	}
	why := "n/a: no training task of type alfworld to search a workflow on"
	evalTable, err := os.ReadFile(filepath.Join(dir, "full-s1", "eval", "table.md"))
	if err != nil || strings.Count(string(evalTable), why) != 2 || !strings.Contains(string(evalTable), "n/a: no alfworld score") {
		t.Errorf("full-s1/eval/table.md (%v) does not say why searched_workflow has no alfworld and webshop cells:\n%s", err, evalTable)
	}
	if out, err := run(t, "", "report", "--run", filepath.Join(dir, "full-s1")); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if md, err := os.ReadFile(filepath.Join(dir, "full-s1", "report", "report.md")); err != nil || strings.Count(string(md), why) != 2 {
		t.Errorf("the report (%v) does not say why searched_workflow has no alfworld and webshop cells", err)
	}
}
