package calibrate

import (
	"github.com/evosteer/evosteer-go/internal/paradigms"

	"os"
	"path/filepath"
	"strings"
	"testing"
)

// paperTargets is the repository's copy of the paper's Table 2 baseline rows.
const paperTargets = "../../configs/paper-table2-baselines.csv"

func TestReadTheRepositoryTargets(t *testing.T) {
	tg, err := ReadTargets(paperTargets)
	if err != nil {
		t.Fatal(err)
	}
	if len(tg.Cells) != 72 || len(tg.Benchmarks()) != 12 || len(tg.SHA256) != 64 {
		t.Fatalf("%d cells, %d benchmarks, sha256 %q", len(tg.Cells), len(tg.Benchmarks()), tg.SHA256)
	}
	c, ok := tg.Score(Key{"nq_open", paradigms.Direct})
	if !ok || c.Score != 23.59 || c.Line != 3 {
		t.Fatalf("nq_open direct: %+v %v", c, ok)
	}
	for _, p := range Policies {
		n := 0
		for _, c := range tg.Cells {
			if c.Policy == p {
				n++
			}
		}
		if n != 12 {
			t.Errorf("policy %s has %d cells, want 12", p, n)
		}
	}
}

// TestTargetsAreOnlyTheBaselines: calibrate reads the six baseline policies and refuses any
// other row, the method's own rows above all, naming file, line and column.
func TestTargetsAreOnlyTheBaselines(t *testing.T) {
	if len(Policies) != 6 {
		t.Fatalf("policies %v", Policies)
	}
	for _, method := range []string{"evosteer", "full", "anchortb", "tb", "ppo", "grpo", "no-value-head", "learnable-repair"} {
		_, err := parseTargets("t.csv", []byte("benchmark,policy,score\nhotpotqa,direct,50\nhotpotqa,"+method+",88\n"))
		if err == nil || !strings.Contains(err.Error(), "t.csv:3:10") || !strings.Contains(err.Error(), "never targets") {
			t.Errorf("policy %s: %v", method, err)
		}
	}
}

func TestBadTargets(t *testing.T) {
	for _, c := range []struct{ name, csv, want string }{
		{"empty", "", "empty file"},
		{"no score column", "benchmark,policy\nhotpotqa,direct\n", `t.csv:1: the header has no column "score"`},
		{"no rows", "benchmark,policy,score\n", "no target rows"},
		{"unknown benchmark", "benchmark,policy,score\nhotpot,direct,50\n", `t.csv:2:1: column "benchmark": unknown benchmark "hotpot"`},
		{"score above 100", "benchmark,policy,score\nhotpotqa,direct,100.5\n", `t.csv:2:17: column "score": "100.5" is not a score in [0, 100]`},
		{"negative score", "benchmark,policy,score\nhotpotqa,direct,-1\n", `column "score": "-1"`},
		{"not a number", "benchmark,policy,score\nhotpotqa,direct,high\n", `column "score": "high"`},
		{"NaN", "benchmark,policy,score\nhotpotqa,direct,NaN\n", `column "score": "NaN"`},
		{"repeated cell", "benchmark,policy,score\nhotpotqa,direct,50\nnq_open,direct,20\nhotpotqa,direct,51\n", `t.csv:4:10: column "policy": cell (hotpotqa, direct) repeats line 2`},
		{"negative std", "benchmark,policy,score,std\nhotpotqa,direct,50,-2\n", `t.csv:2:20: column "std"`},
		{"zero n", "benchmark,policy,score,n\nhotpotqa,direct,50,0\n", `column "n": "0" is not a positive task count`},
		{"ragged quote", "benchmark,policy,score\n\"hotpotqa,direct,50\n", "t.csv"},
	} {
		_, err := parseTargets("t.csv", []byte(c.csv))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if _, err := ReadTargets(filepath.Join(t.TempDir(), "missing.csv")); err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("missing file: %v", err)
	}
}

func TestOptionalColumns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.csv")
	data := "Benchmark, Policy ,score,std,n,paper_row\nmedqa,reference,82.97,1.5,128,EvoSteer arch.\ntriviaqa,single_agent,86.25,,,\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	tg, err := ReadTargets(path)
	if err != nil {
		t.Fatal(err)
	}
	if c := tg.Cells[0]; c.Std != 1.5 || c.N != 128 || c.Score != 82.97 || sigma(c) != sigma(Cell{Std: 1.5}) {
		t.Fatalf("%+v", c)
	}
	if c := tg.Cells[1]; c.Std != 0 || c.N != 0 {
		t.Fatalf("%+v", c)
	}
	if got := tg.Benchmarks(); len(got) != 2 || got[0] != "medqa" || got[1] != "triviaqa" {
		t.Fatalf("benchmarks %v", got)
	}
}
