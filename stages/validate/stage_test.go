package validate

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// author plays the author stage of step: it proposes recs (family f) on the ledger rebuilt
// through validate step and writes the segment and the library.
func author(t *testing.T, r *rundir.Folder, step int, recs ...skills.Record) {
	t.Helper()
	g, err := skills.LoadLedger(r, step, layout.Author)
	if err != nil {
		t.Fatal(err)
	}
	n := len(g.Events())
	for _, rec := range recs {
		if _, err := g.Propose(step, "medqa", rec); err != nil {
			t.Fatal(err)
		}
	}
	dir := r.StageDir(step, layout.Author)
	if err := skills.WriteSegment(dir, lineage(r, step, "author"), g.Events()[n:]); err != nil {
		t.Fatal(err)
	}
	if err := skills.WriteSnapshot(dir, lineage(r, step, "author"), g.Library()); err != nil {
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

// A library snapshot that the ledger does not reproduce, and missing inputs, stop the stage
// with a message naming the file.
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
	if _, err := runValidate(t, r, 2, false); err == nil || !strings.Contains(err.Error(), "evosteer author") {
		t.Errorf("missing author segment: %v", err)
	}
	author(t, r, 1, units)
	// Edit the snapshot: the candidate claims to be validated.
	path := filepath.Join(r.StageDir(1, layout.Author), layout.SkillsFile)
	rows, _ := schema.ReadFile[schema.SkillRow](schema.Skills, path)
	rows[0].Status = skills.Validated
	if err := schema.WriteRows(schema.Skills, path, lineage(r, 1, "author"), rows); err != nil {
		t.Fatal(err)
	}
	if _, err := runValidate(t, r, 2, false); err == nil || !strings.Contains(err.Error(), "disagrees") {
		t.Errorf("edited snapshot: %v", err)
	}
}

// skill-evolution ablated: nothing is read, both outputs are empty.
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
}
