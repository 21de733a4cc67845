package author

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/schema"
)

func TestWindowFamilies(t *testing.T) {
	cfg, _ := config.Default() // start 9, 6 families, interval 1
	for step, want := range map[int]int{1: 0, 8: 0, 9: 6, 10: 1, 100: 1} {
		if got := WindowFamilies(cfg, step); got != want {
			t.Errorf("step %d: %d windows, want %d", step, got, want)
		}
	}
	cfg.Author.Interval = 3
	for step, want := range map[int]int{10: 0, 11: 0, 12: 1, 15: 1} {
		if got := WindowFamilies(cfg, step); got != want {
			t.Errorf("interval 3, step %d: %d windows, want %d", step, got, want)
		}
	}
	cfg.Ablations = []string{"skill-evolution"}
	if WindowFamilies(cfg, 9) != 0 {
		t.Error("windows under the skill-evolution ablation")
	}
}

// The simulated author through the stage: no windows in the warm-up; at the start step the
// three highest-priority families get candidates, whose hidden effects go to sim_truth; later
// steps open one window for a family without skills; the ledger segment holds the proposals
// and the library matches its replay; a rerun is byte-identical.
func TestStageSimAuthor(t *testing.T) {
	r := newRun(t, nil)
	stepThrough(t, r, 3, newSimAuthor(r.Config))
	if rows := proposals(t, r, 1); len(rows) != 0 {
		t.Errorf("warm-up step wrote %d proposals", len(rows))
	}
	rows := proposals(t, r, 2)
	if len(rows) != 3 {
		t.Fatalf("start step: %d windows", len(rows))
	}
	// Priority at equal skill counts: most mixed tasks first. reward() makes family index 0
	// all-mixed and the others sparser; check the order is the sorted one.
	ev := evidenceAt(t, r, 2, false)
	st := map[string]FamilyStats{}
	for _, f := range r.Config.Families {
		st[f] = familyStats(ev.byFamily[f].naturals(), 0.5)
	}
	want := priority(r.Config.Families, map[string]int{}, map[string]int{}, st)[:3]
	world := sim.New(r.Config.Sim, r.Config.Seed)
	truth, err := schema.ReadFile[schema.SimTruthRow](schema.SimTruth, filepath.Join(r.StageDir(2, layout.Author), layout.SimTruthFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range rows {
		if p.Family != want[i] || p.Status != StatusProposed || p.Backend != "sim" || len(p.Evidence) != r.Config.Author.MaxTrajectories || p.Window != int32(i) {
			t.Errorf("window %d: %+v (want family %s)", i, p, want[i])
		}
		e, c := world.SkillEffect(*p.SkillID)
		found := false
		for _, tr := range truth {
			if tr.ID == *p.SkillID {
				found = *tr.Effect == e && *tr.EffectClass == c && *tr.Family == p.Family && tr.Kind == "skill"
			}
		}
		if !found {
			t.Errorf("sim_truth lacks the effect of %s", *p.SkillID)
		}
	}
	later := proposals(t, r, 3)
	if len(later) != 1 || later[0].Family == rows[0].Family || later[0].Family == rows[1].Family || later[0].Family == rows[2].Family {
		t.Errorf("step 3 window %+v: want one window for a family without skills", later)
	}
	seg, err := schema.ReadFile[schema.LedgerRow](schema.Ledger, filepath.Join(r.StageDir(2, layout.Author), layout.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(seg) != 3 || seg[0].Event != skills.EventProposal || seg[0].Seq != 1 || *seg[0].SkillID != *rows[0].SkillID {
		t.Errorf("ledger segment %+v", seg)
	}
	lib, err := skills.LoadLibrary(r, 4) // what the rollout of step 4 freezes
	if err != nil {
		t.Fatal(err)
	}
	if len(lib.Skills()) != 4 || len(lib.Menu(rows[0].Family).Skills) != 1 || lib.Menu(rows[0].Family).Skills[0].Status != skills.Candidate {
		t.Errorf("library for step 4: %+v", lib.Skills())
	}
	if _, err := skills.LoadLedger(r, 4, layout.Validate); err != nil {
		t.Errorf("replay through author 3: %v", err)
	}
	before, _ := os.ReadFile(filepath.Join(r.StageDir(3, layout.Author), layout.ProposalsFile))
	if _, err := r.RunStage(context.Background(), 3, Stage{Author: newSimAuthor(r.Config)}, true); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(r.StageDir(3, layout.Author), layout.ProposalsFile))
	if !bytes.Equal(before, after) {
		t.Error("rerun is not byte-identical")
	}
	sum, err := Summarize(context.Background(), r, 2)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := sum.Write(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "window 2 ") || !strings.Contains(out.String(), "library: 3 skills (3 candidate") {
		t.Errorf("summary:\n%s", out.String())
	}
}

// The author of step k sees the evidence pool accumulated over steps 1..k−1 (METHOD.md §5.3),
// not the previous step's episodes only: with equal rewards every step, ties keep the earliest
// episodes, so step 1's are still in the pool at step 4 (carried by the authors of the warm-up
// steps), with the actions and executions a model author is shown.
func TestEvidencePoolAccumulates(t *testing.T) {
	r := newRun(t, func(c *config.Config) { c.Author.StartStep = 4 })
	stepThrough(t, r, 3, newSimAuthor(r.Config))
	writeRollout(t, r, 4)
	ev := evidenceAt(t, r, 4, true)
	early := 0
	for _, f := range r.Config.Families {
		fe := ev.byFamily[f]
		if fe == nil || len(fe.pool) == 0 || len(fe.pool) > r.Config.Author.EvidencePool {
			t.Fatalf("%s: pool %+v", f, fe)
		}
		for _, e := range fe.pool {
			if strings.HasPrefix(e.EpisodeID, "4/") {
				t.Fatalf("%s: the pool holds an episode of the step itself: %s", f, e.EpisodeID)
			}
			if strings.HasPrefix(e.EpisodeID, "1/") {
				early++
				if len(ev.actions[e.EpisodeID]) == 0 || len(ev.executions[e.EpisodeID]) == 0 {
					t.Fatalf("%s: no details for pool episode %s", f, e.EpisodeID)
				}
			}
		}
	}
	if early == 0 {
		t.Fatal("the pool at step 4 holds no episode of step 1")
	}
}

// A family whose candidate slot is taken gets no window; the author is told to run validate
// first when its output is missing.
func TestStageNeedsValidate(t *testing.T) {
	r := newRun(t, nil)
	writeRollout(t, r, 1)
	_, err := r.RunStage(context.Background(), 1, Stage{Author: newSimAuthor(r.Config)}, false)
	if err == nil || !strings.Contains(err.Error(), "evosteer validate") {
		t.Errorf("author before validate: %v", err)
	}
}

func TestStageAblated(t *testing.T) {
	r := newRun(t, func(c *config.Config) { c.Ablations = []string{"skill-evolution"} })
	if in, err := (Stage{}).Inputs(r, 9); err != nil || len(in.Paths()) != 0 {
		t.Errorf("inputs %v %v", in, err)
	}
	if _, err := r.RunStage(context.Background(), 9, Stage{Author: newSimAuthor(r.Config)}, false); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{layout.ProposalsFile, layout.LedgerFile, layout.SkillsFile, layout.EvidencePoolFile, layout.AuthorStateFile, layout.SimTruthFile} {
		f, err := schema.Open(filepath.Join(r.StageDir(9, layout.Author), f))
		if err != nil {
			t.Fatal(err)
		}
		if f.NumRows != 0 {
			t.Errorf("%s: %d rows", f.Path, f.NumRows)
		}
		f.Close()
	}
	if f, err := schema.Open(filepath.Join(r.StageDir(9, layout.Author), layout.LedgerStateFile)); err != nil || f.NumRows != 1 {
		t.Errorf("ledger state of the empty ledger: %v %v", f, err)
	} else {
		f.Close()
	}
}

// The simulated author is a function of the window seed, avoids the family's names, and its
// output passes the content rules.
func TestSimAuthor(t *testing.T) {
	cfg, _ := config.Default()
	a := newSimAuthor(cfg)
	var lib []skills.Skill
	for i := range 200 {
		w := Window{Family: "medqa", TaskType: cfg.Families[i%len(cfg.Families)], Seed: uint64(i), Library: lib}
		p, err := a.Propose(context.Background(), w)
		if err != nil || p.Record == nil {
			t.Fatalf("seed %d: %v %v", i, p, err)
		}
		q, _ := a.Propose(context.Background(), w)
		if q.Record.Body() != p.Record.Body() {
			t.Fatal("not deterministic")
		}
		if err := checkRecord(*p.Record, lib, nil); err != nil {
			t.Fatalf("seed %d: %v\n%+v", i, err, p.Record)
		}
		if i < 12 { // fill a family library with its names
			lib = append(lib, skills.Skill{ID: p.Record.ID(), Record: *p.Record})
		}
	}
}
