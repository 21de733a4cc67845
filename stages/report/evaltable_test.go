package report

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/schema"
)

// A small hand-made results file, written and read back through schema, rendered as Table 1:
//
//	evosteer  mbpp_plus .80 .80 .86 → 82.00 ± 3.46 (sample std: sqrt(.0024/2))
//	          medqa     .50 .60 .70 → 60.00 ± 10.00
//	          IID Avg   (60 + 82)/2 = 71.00 ± sqrt(.01 + .0012)/2 = 5.29
//	          pubmedqa  .30 (one run: no spread), OOD Avg the same
//	reference medqa     .40 .50     → 45.00 ± 7.07; no mbpp_plus → "–", IID Avg "–"
//	          pubmedqa  .20 .30     → 25.00 ± 7.07, OOD Avg sqrt(σ²)/1 = the same
func TestEvalTableMarkdown(t *testing.T) {
	var rows []schema.EvalRow
	add := func(policy, bench, block string, scores ...float64) {
		for i, s := range scores {
			rows = append(rows, schema.EvalRow{Policy: policy, Benchmark: bench, Block: block, Run: int32(i), Seed: uint64(i), Tasks: 10, Score: s, ControllerCount: schema.ControllerCountEstimated})
		}
	}
	add("evosteer", "medqa", "iid", 0.50, 0.60, 0.70)
	add("evosteer", "pubmedqa", "ood", 0.30)
	add("evosteer", "mbpp_plus", "iid", 0.80, 0.80, 0.86)
	add("reference", "pubmedqa", "ood", 0.20, 0.30)
	add("reference", "medqa", "iid", 0.40, 0.50)
	path := filepath.Join(t.TempDir(), "results.arrow")
	if err := schema.WriteRows(schema.EvalResults, path, schema.Lineage{Run: "test", Stage: "eval"}, rows); err != nil {
		t.Fatal(err)
	}
	read, err := schema.ReadFile[schema.EvalRow](schema.EvalResults, path)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := BuildEvalTable(read, []string{"mbpp_plus", "medqa"}, nil) // pubmedqa: not in order, comes after
	if err != nil {
		t.Fatal(err)
	}
	want := `| Benchmark | evosteer | reference |
|---|---:|---:|
| **IID** |  |  |
| mbpp_plus | 82.00 ± 3.46 | – |
| medqa | 60.00 ± 10.00 | 45.00 ± 7.07 |
| **Avg** | **71.00 ± 5.29** | **–** |
| **OOD** |  |  |
| pubmedqa | 30.00 | 25.00 ± 7.07 |
| **Avg** | **30.00** | **25.00 ± 7.07** |
`
	if got := tab.Markdown(); got != want {
		t.Errorf("markdown:\n%s\nwant:\n%s", got, want)
	}
	avg := tab.Blocks[0].Avg.Cells[0]
	if d := avg.Mean - 0.71; d > 1e-12 || d < -1e-12 {
		t.Errorf("IID Avg mean %v", avg.Mean)
	}
	if d := avg.Std - 0.052915026221291815; d > 1e-12 || d < -1e-12 {
		t.Errorf("IID Avg std %v, want sqrt(0.0112)/2", avg.Std)
	}
}

func TestEvalTableRejectsBadRows(t *testing.T) {
	for _, c := range []struct {
		rows []schema.EvalRow
		want string
	}{
		{[]schema.EvalRow{{Policy: "p", Benchmark: "b", Block: "test"}}, `column block is "test"`},
		{[]schema.EvalRow{{Policy: "p", Benchmark: "b", Block: "iid"}, {Policy: "q", Benchmark: "b", Block: "ood"}}, "in both blocks"},
		{[]schema.EvalRow{{Policy: "p", Benchmark: "b", Block: "iid", Run: 1}, {Policy: "p", Benchmark: "b", Block: "iid", Run: 1}}, "run 1 appears twice"},
	} {
		if _, err := BuildEvalTable(c.rows, nil, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.rows, err, c.want)
		}
	}
}

// TestPaperFigure: the figure is drawn when an evaluated policy has a row of the paper's Table 2
// (evosteer is the full method), and left out when none has.
func TestPaperFigure(t *testing.T) {
	rows := []schema.EvalRow{
		{Policy: "evosteer", Benchmark: "medqa", Block: "iid", Run: 0, Score: 0.9},
		{Policy: "reference", Benchmark: "medqa", Block: "iid", Run: 0, Score: 0.8},
	}
	tbl, err := BuildEvalTable(rows, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	png, err := paperFigure("t", tbl)
	if err != nil || len(png) == 0 {
		t.Fatalf("a figure of evosteer and reference: %d bytes, %v", len(png), err)
	}
	none, err := BuildEvalTable([]schema.EvalRow{{Policy: "ppo-variant", Benchmark: "medqa", Block: "iid", Score: 0.5}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if png, err := paperFigure("t", none); err != nil || png != nil {
		t.Errorf("no policy with a paper row: %d bytes, %v", len(png), err)
	}
}

// A cell the evaluation could not fill says why, and its block's Avg names the benchmark; a
// cell merely not evaluated keeps its dash.
func TestEvalTableSaysWhyACellIsUnavailable(t *testing.T) {
	rows := []schema.EvalRow{
		{Policy: "evosteer", Benchmark: "alfworld", Block: "iid", Score: 0.5},
		{Policy: "evosteer", Benchmark: "medqa", Block: "iid", Score: 0.9},
		{Policy: "evosteer", Benchmark: "webshop", Block: "ood", Score: 0.2},
		{Policy: "searched_workflow", Benchmark: "medqa", Block: "iid", Score: 0.8},
	}
	why := "no training task of type alfworld to search a workflow on"
	tbl, err := BuildEvalTable(rows, []string{"medqa", "alfworld"}, map[string]map[string]string{"searched_workflow": {"alfworld": why}})
	if err != nil {
		t.Fatal(err)
	}
	md := tbl.Markdown()
	for _, want := range []string{"| medqa | 90.00 | 80.00 |", "| alfworld | 50.00 | n/a: " + why + " |", "| **Avg** | **70.00** | **n/a: no alfworld score** |", "| webshop | 20.00 | – |"} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
}
