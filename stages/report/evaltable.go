package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/evosteer/evosteer-go/schema"
)

// EvalTable is the evaluation in the shape of the paper's Table 1: benchmarks in an IID then an
// OOD block, each block closed by an Avg row; one column per policy. Scores are shown ×100.
type EvalTable struct {
	Policies []string // in order of first appearance in the results
	Blocks   []EvalBlock
}

// EvalBlock is one block of benchmarks and its Avg row.
type EvalBlock struct {
	Name string // "IID" or "OOD"
	Rows []EvalTableRow
	Avg  EvalTableRow
}

// EvalTableRow is one benchmark (or an Avg row), one cell per policy.
type EvalTableRow struct {
	Benchmark string
	Cells     []EvalCell
}

// EvalCell is a mean ± std. For a benchmark, the mean and the sample standard deviation of the
// per-run scores; for an Avg row, the mean of the benchmark means and sqrt(Σ_b σ_b²)/n (paper
// appendix D). Std is NaN with a single run; Present is false when the policy lacks a benchmark
// (for an Avg row: any benchmark of the block). Why, for an absent cell, says why the policy
// cannot be evaluated there (for an Avg row: which benchmarks it cannot be evaluated on).
type EvalCell struct {
	Mean, Std float64
	Runs      int
	Present   bool
	Why       string
}

// String renders the cell ×100 with two decimals: "45.00 ± 1.23", "45.00" without a spread,
// "n/a: why" when absent with a reason, "–" when merely absent.
func (c EvalCell) String() string {
	switch {
	case !c.Present && c.Why != "":
		return "n/a: " + c.Why
	case !c.Present:
		return "–"
	case math.IsNaN(c.Std):
		return fmt.Sprintf("%.2f", 100*c.Mean)
	}
	return fmt.Sprintf("%.2f ± %.2f", 100*c.Mean, 100*c.Std)
}

var evalBlocks = []struct{ key, name string }{{"iid", "IID"}, {"ood", "OOD"}}

// BuildEvalTable shapes eval_results rows into the table. Benchmarks follow order (e.g. the
// configuration's families, then its OOD families), then any others by name. A block other than
// iid or ood, a benchmark in both blocks and a repeated (policy, benchmark, run) are errors. na
// says why a policy cannot be evaluated on a benchmark (policy → benchmark → why; may be nil):
// such a cell, and its block's Avg, say so.
func BuildEvalTable(rows []schema.EvalRow, order []string, na map[string]map[string]string) (*EvalTable, error) {
	type key struct{ policy, bench string }
	scores := map[key][]float64{}
	seenRun := map[key]map[int32]bool{}
	blockOf := map[string]string{}
	t := &EvalTable{}
	for i, r := range rows {
		if r.Block != "iid" && r.Block != "ood" {
			return nil, fmt.Errorf("eval results row %d: column block is %q, want iid or ood", i, r.Block)
		}
		if b, ok := blockOf[r.Benchmark]; ok && b != r.Block {
			return nil, fmt.Errorf("eval results row %d: benchmark %q is in both blocks %s and %s", i, r.Benchmark, b, r.Block)
		}
		blockOf[r.Benchmark] = r.Block
		k := key{r.Policy, r.Benchmark}
		if seenRun[k] == nil {
			seenRun[k] = map[int32]bool{}
		}
		if seenRun[k][r.Run] {
			return nil, fmt.Errorf("eval results row %d: policy %q, benchmark %q, run %d appears twice", i, r.Policy, r.Benchmark, r.Run)
		}
		seenRun[k][r.Run] = true
		scores[k] = append(scores[k], r.Score)
		if !slices.Contains(t.Policies, r.Policy) {
			t.Policies = append(t.Policies, r.Policy)
		}
	}
	var benches []string
	for _, b := range order {
		if _, ok := blockOf[b]; ok && !slices.Contains(benches, b) {
			benches = append(benches, b)
		}
	}
	var rest []string
	for b := range blockOf {
		if !slices.Contains(benches, b) {
			rest = append(rest, b)
		}
	}
	slices.Sort(rest)
	benches = append(benches, rest...)

	for _, blk := range evalBlocks {
		block := EvalBlock{Name: blk.name, Avg: EvalTableRow{Benchmark: "Avg"}}
		for _, b := range benches {
			if blockOf[b] != blk.key {
				continue
			}
			row := EvalTableRow{Benchmark: b}
			for _, p := range t.Policies {
				c := benchmarkCell(scores[key{p, b}])
				if !c.Present {
					c.Why = na[p][b]
				}
				row.Cells = append(row.Cells, c)
			}
			block.Rows = append(block.Rows, row)
		}
		if len(block.Rows) == 0 {
			continue
		}
		for i := range t.Policies {
			block.Avg.Cells = append(block.Avg.Cells, avgCell(block.Rows, i))
		}
		t.Blocks = append(t.Blocks, block)
	}
	return t, nil
}

func benchmarkCell(s []float64) EvalCell {
	if len(s) == 0 {
		return EvalCell{}
	}
	c := EvalCell{Mean: stat.Mean(s, nil), Std: math.NaN(), Runs: len(s), Present: true}
	if len(s) > 1 {
		c.Std = stat.StdDev(s, nil) // sample standard deviation (n − 1)
	}
	return c
}

// avgCell is column i's Avg over the rows of a block: present only when every row is; when a
// row cannot be evaluated (Why), the Avg names it.
func avgCell(rows []EvalTableRow, i int) EvalCell {
	var sum, sumVar float64
	runs := math.MaxInt
	var unavailable []string
	for _, r := range rows {
		if c := r.Cells[i]; !c.Present && c.Why != "" {
			unavailable = append(unavailable, r.Benchmark)
		}
	}
	if len(unavailable) > 0 {
		return EvalCell{Why: "no " + strings.Join(unavailable, ", ") + " score"}
	}
	for _, r := range rows {
		c := r.Cells[i]
		if !c.Present {
			return EvalCell{}
		}
		sum += c.Mean
		sumVar += c.Std * c.Std // NaN when any benchmark has a single run
		runs = min(runs, c.Runs)
	}
	n := float64(len(rows))
	return EvalCell{Mean: sum / n, Std: math.Sqrt(sumVar) / n, Runs: runs, Present: true}
}

// Table lays the evaluation out as a report table: a bold header row per block, the block's
// benchmarks, then its Avg row in bold.
func (t *EvalTable) Table() *Table {
	out := &Table{Header: append([]string{"Benchmark"}, t.Policies...)}
	for _, blk := range t.Blocks {
		out.Rows = append(out.Rows, Row{Cells: append([]string{blk.Name}, make([]string, len(t.Policies))...), Bold: true})
		for _, r := range blk.Rows {
			out.Rows = append(out.Rows, Row{Cells: r.strings()})
		}
		out.Rows = append(out.Rows, Row{Cells: blk.Avg.strings(), Bold: true})
	}
	return out
}

func (r EvalTableRow) strings() []string {
	out := []string{r.Benchmark}
	for _, c := range r.Cells {
		out = append(out, c.String())
	}
	return out
}

// Markdown renders the table as GitHub-flavoured Markdown (what `evosteer eval` prints).
func (t *EvalTable) Markdown() string { return t.Table().Markdown() }
