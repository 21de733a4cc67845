//go:build duckdb_arrow

package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/schema"
	"github.com/evosteer/evosteer-go/stages/validate"
)

// The README's two admission queries.
const (
	decisionsQuery = `SELECT step, event, skill_id, comparison_j AS j, look_l AS l, W, L, T0, p_plus, p_minus, level
FROM ledger WHERE event IN ('promote', 'retire') ORDER BY seq`
	alphaQuery = `SELECT max(alpha_spent) AS alpha_spent, sum(level) FILTER (WHERE event = 'look') AS sum_of_levels,
       count(*) FILTER (WHERE event = 'look') AS looks FROM ledger`
)

// validate and author after rollout and aggregate: warm-up, the start window, then a step
// whose pairs (written here: the rollout does not play pairs yet) promote a candidate, and the
// README's queries over the ledger.
func TestValidateAndAuthorCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	cfg := filepath.Join(t.TempDir(), "small.yaml")
	writeFile(t, cfg, "batch:\n  tasks: 6\ntasks:\n  train_per_family: 4\n  test_per_family: 2\nauthor:\n  start_step: 2\n  start_families: 2\n")
	if _, err := run(t, "", "init", "--run", dir, "--config", cfg); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"1", "2"} {
		for _, stage := range []string{"rollout", "rescore", "aggregate", "update"} {
			if out, err := run(t, "", stage, "--run", dir, "--step", s); err != nil {
				t.Fatalf("%s %s: %v\n%s", stage, s, err, out)
			}
		}
		out, err := run(t, "", "validate", "--run", dir, "--step", s)
		if err != nil || !strings.Contains(out, "validate step "+s+": done") || !strings.Contains(out, "alpha spent so far: 0 of 0.05") {
			t.Fatalf("validate %s: %v\n%s", s, err, out)
		}
		out, err = run(t, "", "author", "--run", dir, "--step", s)
		want := map[string]string{"1": "warm-up: the author starts at step 2", "2": "library: 2 skills (2 candidate"}[s]
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("author %s: %v\n%s", s, err, out)
		}
	}
	// Step 3: twelve wins for the first candidate.
	r, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := skills.LoadLibrary(r, 3)
	if err != nil {
		t.Fatal(err)
	}
	s := lib.Skills()[0]
	cid, _ := lib.Comparison(s.ID, 3)
	var pairs []schema.PairRow
	for i := range 12 {
		task := fmt.Sprintf("%s/%04d", s.Family, i)
		pairs = append(pairs, schema.PairRow{PairID: skills.PairID(3, task, cid), ComparisonID: cid, SkillID: s.ID, TaskID: task,
			Family: s.Family, BPlus: true, Outcome: "win", Eligible: true})
	}
	if err := schema.WriteRows(schema.Pairs, validate.PairsPath(r, 3), schema.Lineage{Run: r.Name, Step: 3, Stage: "aggregate", ConfigSHA256: r.Config.SHA256()}, pairs); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "", "validate", "--run", dir, "--step", "3")
	if err != nil || !strings.Contains(out, "promote "+s.ID+" (comparison j=1, look 1): W=12 L=0 T0=0") {
		t.Fatalf("validate 3: %v\n%s", err, out)
	}
	out, err = run(t, "", "sql", "--run", dir, "--format", "csv", decisionsQuery)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 2 || lines[0] != "step,event,skill_id,j,l,W,L,T0,p_plus,p_minus,level" {
		t.Fatalf("decisions query: %v\n%s", err, out)
	}
	f := strings.Split(lines[1], ",")
	pPlus, _ := strconv.ParseFloat(f[8], 64)
	if strings.Join(f[:8], ",") != "3,promote,"+s.ID+",1,1,12,0,0" || math.Abs(pPlus-math.Ldexp(1, -12)) > 1e-15 || f[10] != "0.0125" {
		t.Errorf("decisions query row %s", lines[1])
	}
	if out, err := run(t, "", "sql", "--run", dir, "--format", "csv", alphaQuery); err != nil || out != "alpha_spent,sum_of_levels,looks\n0.0125,0.0125,1\n" {
		t.Errorf("alpha query: %v\n%s", err, out)
	}

	// --check: the stored ledger states against the replay of the log.
	out, err = run(t, "", "validate", "--run", dir, "--step", "3", "--check")
	if err != nil || !strings.Contains(out, "validate step 3: up to date") ||
		!strings.Contains(out, "check against the replay of the ledger, steps 1..3:\n  validate  ok (17 events, 1 open comparisons)\n") ||
		!strings.Contains(out, "  author    not written yet (run `evosteer author --step 3 --run "+dir+"`)") {
		t.Fatalf("validate --check before author 3: %v\n%s", err, out)
	}
	out, err = run(t, "", "validate", "--run", dir, "--step", "2", "--check")
	if err != nil || !strings.Contains(out, "  validate  ok (0 events, 0 open comparisons)\n  author    ok (2 events, 0 open comparisons)\n") {
		t.Fatalf("validate --check of step 2: %v\n%s", err, out)
	}
	path := filepath.Join(r.StageDir(2, "author"), "ledger_state.arrow")
	state, err := schema.ReadFile[schema.LedgerStateRow](schema.LedgerState, path)
	if err != nil {
		t.Fatal(err)
	}
	*state[0].Events++
	if err := schema.WriteRows(schema.LedgerState, path, schema.Lineage{Run: r.Name, Step: 2, Stage: "author", ConfigSHA256: r.Config.SHA256()}, state); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "", "validate", "--run", dir, "--step", "2", "--check")
	if err == nil || err.Error() != "check: 1 of 2 ledger states differ from the replay" ||
		!strings.Contains(out, "  author    MISMATCH: step-000002/author/ledger_state.arrow: row 0: the file holds {kind=ledger events=3 alpha_spent=0 comparisons=0}, the replay {kind=ledger events=2 alpha_spent=0 comparisons=0}\n") {
		t.Errorf("validate --check of an edited state: %v\n%s", err, out)
	}
}
