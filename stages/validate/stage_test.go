package validate

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/schema"
)

func newRun(t *testing.T, ablations ...string) *rundir.Folder {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Ablations = ablations
	t.Chdir(t.TempDir()) // a relative run folder, as on the command line
	r, err := rundir.Init("run", cfg, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func lineage(r *rundir.Folder, step int, stage string) schema.Lineage {
	return schema.Lineage{Run: r.Name, Step: step, Stage: stage, ConfigSHA256: r.Config.SHA256()}
}

// author plays the author stage of step: it proposes recs (family f) on the ledger continued
// from validate step and writes the segment, the library and the ledger state.
func author(t *testing.T, r *rundir.Folder, step int, recs ...skills.Record) {
	t.Helper()
	g, err := skills.LoadLedger(r, step, layout.Author)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if _, err := g.Propose(step, "medqa", rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := skills.WriteStage(r.StageDir(step, layout.Author), lineage(r, step, "author"), g); err != nil {
		t.Fatal(err)
	}
}

// writePairs writes step's pairs.arrow with pairs of skill id in its current comparison, one per
// outcome letter (w, l, t).
func writePairs(t *testing.T, r *rundir.Folder, step int, id, outcomes string) {
	t.Helper()
	var rows []schema.PairRow
	if id != "" {
		lib, err := skills.LoadLibrary(r, step)
		if err != nil {
			t.Fatal(err)
		}
		cid, _ := lib.Comparison(id, step)
		for i, o := range outcomes {
			task := fmt.Sprintf("medqa/%04d", 100*step+i)
			out := map[rune]string{'w': "win", 'l': "loss", 't': "tie"}[o]
			rows = append(rows, schema.PairRow{PairID: skills.PairID(step, task, cid), ComparisonID: cid, SkillID: id, TaskID: task,
				Family: "medqa", BPlus: o == 'w', BMinus: o == 'l', Outcome: out, Eligible: true})
		}
	}
	if err := schema.WriteRows(schema.Pairs, PairsPath(r, step), lineage(r, step, "aggregate"), rows); err != nil {
		t.Fatal(err)
	}
}

func runValidate(t *testing.T, r *rundir.Folder, step int, force bool) (rundir.Result, error) {
	t.Helper()
	return r.RunStage(context.Background(), step, Stage{}, force)
}

var units = skills.Record{Name: "Check units", Description: "Convert units first.", Trigger: "Use when units mix.",
	Plan: []string{"List units.", "Convert."}, Pitfalls: []string{"Factor 1000."}, Constraint: []string{"State the unit."}}

// Two steps: an empty first step, a candidate proposed by the author of step 1, ten wins at
// step 2 promote it (2^−10 ≤ α/8); the summary says so; a rerun is byte-identical and an
// unchanged stage is skipped.
func TestStagePromotes(t *testing.T) {
	r := newRun(t)
	writePairs(t, r, 1, "", "")
	if _, err := runValidate(t, r, 1, false); err != nil {
		t.Fatal(err)
	}
	author(t, r, 1, units)
	writePairs(t, r, 2, units.ID(), strings.Repeat("w", 10)+"tt")
	if _, err := runValidate(t, r, 2, false); err != nil {
		t.Fatal(err)
	}
	dir := r.StageDir(2, layout.Validate)
	seg, err := schema.ReadFile[schema.LedgerRow](schema.Ledger, filepath.Join(dir, layout.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range seg {
		kinds = append(kinds, e.Event)
	}
	want := append(append([]string{"register"}, strings.Split(strings.Repeat("pair ", 12), " ")[:12]...), "look", "promote")
	if strings.Join(kinds, " ") != strings.Join(want, " ") || seg[0].Seq != 2 {
		t.Fatalf("events %v (first seq %d)", kinds, seg[0].Seq)
	}
	lib, err := skills.ReadLibrary(r, filepath.Join(dir, layout.SkillsFile))
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := lib.Get(units.ID()); s.Status != skills.Validated || s.Pairs != 12 {
		t.Fatalf("skill after step 2: %+v", s)
	}
	sum, err := Summarize(context.Background(), r, 2)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := sum.Write(&out); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"pairs recorded: 12 (W 10, L 0, T0 2)", "promote " + units.ID(), "alpha spent so far: 0.0125 of 0.05", "1 validated"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("summary lacks %q:\n%s", w, out.String())
		}
	}
	before, _ := os.ReadFile(filepath.Join(dir, layout.LedgerFile))
	if res, err := runValidate(t, r, 2, false); err != nil || !res.Skipped {
		t.Errorf("unchanged stage not skipped: %v %v", res.Skipped, err)
	}
	if _, err := runValidate(t, r, 2, true); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, layout.LedgerFile))
	if !bytes.Equal(before, after) {
		t.Error("rerun is not byte-identical")
	}
}

// A ledger state that its library snapshot contradicts, a damaged or missing state and missing
// inputs stop the stage with a message naming the file. A snapshot edited where the state cannot
// tell (a status) is what skills.CheckStates (validate --check) finds against the replay, as it
// finds a state edited where the snapshot cannot tell.
func TestStageRejectsInconsistentInputs(t *testing.T) {
	r := newRun(t)
	if _, err := runValidate(t, r, 1, false); err == nil || !strings.Contains(err.Error(), "evosteer aggregate") {
		t.Errorf("missing pairs: %v", err)
	}
	writePairs(t, r, 1, "", "")
	if _, err := runValidate(t, r, 1, false); err != nil {
		t.Fatal(err)
	}
	writePairs(t, r, 2, "", "")
	if _, err := runValidate(t, r, 2, false); err == nil || !strings.Contains(err.Error(), "evosteer author --step 1") {
		t.Errorf("missing author state: %v", err)
	}
	author(t, r, 1, units)
	writePairs(t, r, 2, units.ID(), "wlt")
	if _, err := runValidate(t, r, 2, false); err != nil {
		t.Fatal(err)
	}
	author(t, r, 2) // the state holds the candidate's open comparison
	writePairs(t, r, 3, "", "")
	dir := r.StageDir(2, layout.Author)
	statePath, libPath := filepath.Join(dir, layout.LedgerStateFile), filepath.Join(dir, layout.SkillsFile)
	state, err := schema.ReadFile[schema.LedgerStateRow](schema.LedgerState, statePath)
	if err != nil {
		t.Fatal(err)
	}
	if len(state) != 3 || state[1].Kind != "comparison" || state[2].Kind != "skill" || *state[1].ComparisonID != units.ID()+"@2" {
		t.Fatalf("state after step 2: %+v", state)
	}
	writeState := func(rows []schema.LedgerStateRow) {
		t.Helper()
		if err := schema.WriteRows(schema.LedgerState, statePath, lineage(r, 2, "author"), rows); err != nil {
			t.Fatal(err)
		}
	}
	relState, relLib := "step-000002/author/ledger_state.arrow", "step-000002/author/skills.arrow"
	other := "evosteer-00000000000000000000"
	for name, c := range map[string]struct {
		edit func(rows []schema.LedgerStateRow) []schema.LedgerStateRow
		want []string
	}{
		"a comparison of a skill the snapshot lacks": {func(rows []schema.LedgerStateRow) []schema.LedgerStateRow {
			rows[1].SkillID = &other
			return rows
		}, []string{relState + ": row 1: comparison " + units.ID() + "@2 is of skill " + other + ", which " + relLib + " lacks"}},
		"the skill's comparison not open in the state": {func(rows []schema.LedgerStateRow) []schema.LedgerStateRow {
			return rows[:1]
		}, []string{relLib + ": skill " + units.ID() + " records comparison " + units.ID() + "@2, which " + relState + " does not hold open"}},
		"another menu": {func(rows []schema.LedgerStateRow) []schema.LedgerStateRow {
			menu := "sha256:00"
			rows[1].MenuID = &menu
			return rows
		}, []string{relState + ": row 1: comparison " + units.ID() + "@2 (menu sha256:00) is open, but " + relLib + " records"}},
		"no ledger row": {func(rows []schema.LedgerStateRow) []schema.LedgerStateRow {
			return rows[1:]
		}, []string{relState + ": 0 ledger rows, want 1"}},
		"a look beyond the pairs": {func(rows []schema.LedgerStateRow) []schema.LedgerStateRow {
			d := *rows[1].W + *rows[1].L + 1
			rows[1].LastTested = &d
			return rows
		}, []string{relState + ": row 1: comparison " + units.ID() + "@2 was last tested at D = 3, above its W+L = 2"}},
	} {
		rows, err := schema.ReadFile[schema.LedgerStateRow](schema.LedgerState, statePath)
		if err != nil {
			t.Fatal(err)
		}
		writeState(c.edit(rows))
		_, err = runValidate(t, r, 3, false)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant it to contain %q", name, err, w)
			}
		}
		writeState(state)
	}
	data, _ := os.ReadFile(statePath)
	if err := os.WriteFile(statePath, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runValidate(t, r, 3, false); err == nil || !strings.Contains(err.Error(), relState) {
		t.Errorf("truncated state: %v", err)
	}
	if err := os.Remove(statePath); err != nil {
		t.Fatal(err)
	}
	if _, err := runValidate(t, r, 3, false); err == nil || !strings.Contains(err.Error(), "missing input "+relState+": run `evosteer author --step 2") {
		t.Errorf("missing state: %v", err)
	}
	writeState(state)
	if _, err := runValidate(t, r, 3, false); err != nil {
		t.Fatal(err)
	}
	check := func() []skills.StateCheck {
		t.Helper()
		res, err := skills.CheckStates(r, 2)
		if err != nil || len(res) != 2 {
			t.Fatalf("check: %v %v", res, err)
		}
		return res
	}
	if res := check(); res[0].Mismatch != "" || res[1].Mismatch != "" || res[1].Absent || res[1].Open != 1 || res[1].Events != 7 {
		t.Errorf("check of the untouched states: %+v", res)
	}
	// The state and the snapshot agree with each other, not with the log.
	edited := slices.Clone(state)
	w := *edited[1].W + 1
	edited[1].W = &w
	writeState(edited)
	if res := check(); res[0].Mismatch != "" || !strings.HasPrefix(res[1].Mismatch, relState+": row 1: the file holds {kind=comparison") {
		t.Errorf("check of an edited W: %+v", res)
	}
	writeState(state)
	lib, err := schema.ReadFile[schema.SkillRow](schema.Skills, libPath)
	if err != nil {
		t.Fatal(err)
	}
	lib[0].Status = skills.Validated
	if err := schema.WriteRows(schema.Skills, libPath, lineage(r, 2, "author"), lib); err != nil {
		t.Fatal(err)
	}
	if _, err := skills.LoadLedger(r, 3, layout.Validate); err != nil {
		t.Fatalf("a status the state cannot tell: %v", err)
	}
	if res := check(); res[0].Mismatch != "" || !strings.HasPrefix(res[1].Mismatch, relLib+": skill "+units.ID()) {
		t.Errorf("check of an edited status: %+v", res)
	}
}

// skill-evolution ablated: nothing is read, the segment and the library are empty and the
// state is the empty ledger's.
func TestStageAblated(t *testing.T) {
	r := newRun(t, "skill-evolution")
	if in, err := (Stage{}).Inputs(r, 3); err != nil || len(in.Paths()) != 0 {
		t.Errorf("inputs %v %v", in, err)
	}
	if _, err := runValidate(t, r, 3, false); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{layout.LedgerFile, layout.SkillsFile} {
		f, err := schema.Open(filepath.Join(r.StageDir(3, layout.Validate), f))
		if err != nil {
			t.Fatal(err)
		}
		if f.NumRows != 0 {
			t.Errorf("%s: %d rows", f.Path, f.NumRows)
		}
		f.Close()
	}
	state, err := schema.ReadFile[schema.LedgerStateRow](schema.LedgerState, filepath.Join(r.StageDir(3, layout.Validate), layout.LedgerStateFile))
	if err != nil || len(state) != 1 || state[0].Kind != "ledger" || *state[0].Events != 0 || *state[0].AlphaSpent != 0 || *state[0].Comparisons != 0 {
		t.Errorf("state %+v %v", state, err)
	}
}
