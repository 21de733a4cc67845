package author

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/runtest"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/schema"
	"github.com/evosteer/evosteer-go/stages/validate"
)

// stateSteps is the length of the runs of TestStatesEqualTheirRecomputation.
const stateSteps = 12

// The running states against their definitions, over runs long enough for candidates to be
// proposed, promoted, retired, superseded, re-evaluated and (under
// admission.undecided_when_exhausted) ended undecided: after every step, the ledger states that
// validate and author stored equal the replay of every segment from step 1 (skills.CheckStates,
// field for field, with the library), the evidence pool and the counts of windows without a
// candidate that the author carries equal their recomputation from every earlier step (updatePool
// folded over the episodes of steps 1..k; the proposals of steps 1..k), and neither stage's inputs
// hold a file of a step before k−1 (with the simulated author; a model author also reads the
// decisions and executions of its pool's episodes, at most evidence_pool steps per family).
func TestStatesEqualTheirRecomputation(t *testing.T) {
	base := []string{skills.EventProposal, skills.EventRegister, skills.EventPair, skills.EventPromote, skills.EventClose}
	for _, c := range []struct {
		name string
		edit func(*config.Config)
		want []string // events the run must hold, so that the states carry what they are for
	}{
		{"sign test", func(c *config.Config) { c.Admission.AllowRepeatedTasks = true },
			append(base, skills.EventLook, skills.EventRetire, skills.EventRetain, skills.EventSupersede)},
		{"fixed count, undecided when exhausted, no evidence pool", func(c *config.Config) {
			c.Admission.UndecidedWhenExhausted, c.Admission.ValidationInterval = true, 2
			c.Author.EvidencePool, c.Author.StartStep = 0, 4
			if err := c.Ablate("sequential-validation"); err != nil {
				t.Fatal(err)
			}
		}, append(base, skills.EventUndecided)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRun(t, func(cfg *config.Config) {
				cfg.Admission.RetirementInterval = 3
				c.edit(cfg)
			})
			a := &sometimesSilent{newSimAuthor(r.Config)}
			used := map[string]bool{} // (comparison, task) of the eligible pairs so far
			events := map[string]int{}
			for step := 1; step <= stateSteps; step++ {
				writeRollout(t, r, step)
				varyRewards(t, r, step)
				writePlannedPairs(t, r, step, used)
				checkInputs(t, r, step)
				for _, st := range []rundir.Stage{validate.Stage{}, Stage{Author: a}} {
					if _, err := r.RunStage(context.Background(), step, st, false); err != nil {
						t.Fatalf("step %d %s: %v", step, st.Name(), err)
					}
				}
				res, err := skills.CheckStates(r, step)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				for _, c := range res {
					if c.Absent || c.Mismatch != "" {
						t.Fatalf("step %d: %+v", step, c)
					}
				}
				carried, err := readState(r, step+1)
				if err != nil {
					t.Fatal(err)
				}
				if pool := recomputedPool(t, r, step); !reflect.DeepEqual(carried.pool, pool) {
					t.Fatalf("step %d: the carried pool\n%v\nthe recomputed one\n%v", step, ids(carried.pool), ids(pool))
				}
				if failed := recomputedFailed(t, r, step); !reflect.DeepEqual(carried.failed, failed) {
					t.Fatalf("step %d: carried failed windows %v, recomputed %v", step, carried.failed, failed)
				}
				for _, e := range readSegment(t, r, step) {
					events[e.Event]++
				}
			}
			for _, e := range c.want {
				if events[e] == 0 {
					t.Errorf("no %s event in %d steps: %v", e, stateSteps, events)
				}
			}
			if len(recomputedFailed(t, r, stateSteps)) == 0 {
				t.Error("no window ended without a candidate")
			}
			if pool := recomputedPool(t, r, stateSteps); carriesPool(r.Config) == (len(pool) == 0) {
				t.Errorf("evidence_pool %d, a pool of %d families", r.Config.Author.EvidencePool, len(pool))
			}
		})
	}
}

// sometimesSilent is the simulated author that returns no proposal in about one window in
// four and fails in another, so that windows without a candidate are counted.
type sometimesSilent struct{ Author }

func (a *sometimesSilent) Propose(ctx context.Context, w Window) (Proposal, error) {
	switch w.Seed % 4 {
	case 0:
		return Proposal{}, nil
	case 1:
		return Proposal{}, errors.New("the author failed")
	}
	return a.Author.Propose(ctx, w)
}

// varyRewards rewrites step's episodes with rewards drawn per episode, so the evidence pool
// turns over from step to step.
func varyRewards(t *testing.T, r *rundir.Folder, step int) {
	t.Helper()
	path := filepath.Join(r.StageDir(step, layout.Rollout), layout.File(layout.Episodes))
	eps, err := schema.ReadFile[schema.EpisodeRow](schema.Episodes, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range eps {
		eps[i].Reward = float64(seed.Derive(1, eps[i].EpisodeID)%5) / 4
	}
	if err := schema.WriteRows(schema.Episodes, path, lineage(r.Config, step, "rollout"), eps); err != nil {
		t.Fatal(err)
	}
}

// writePlannedPairs writes the pairs the rollout of step plays on the library it freezes, for
// six training tasks of each family, as aggregate scores them: the outcome drawn from the
// skill's hidden effect (helpful or harmful by its id), and, unless tasks may repeat,
// a (comparison, task) already used ineligible.
func writePlannedPairs(t *testing.T, r *rundir.Folder, step int, used map[string]bool) {
	t.Helper()
	lib, err := skills.LoadLibrary(r, step)
	if err != nil {
		t.Fatal(err)
	}
	byFamily := trainByFamily(t, r)
	rows := []schema.PairRow{}
	for _, f := range r.Config.Families {
		ts := byFamily[f]
		for i := range 6 {
			tk := ts[(6*step+i)%len(ts)]
			for _, p := range lib.PlannedPairs(step, tk.ID, tk.TaskType) {
				effect := seed.Derive(2, p.SkillID) % 2
				win, loss := [2]float64{0.85, 0.05}[effect], [2]float64{0.05, 0.85}[effect]
				u := float64(seed.Derive(3, p.PairID)%1000) / 1000
				bPlus, bMinus := u < win, u >= win && u < win+loss
				if u >= win+loss {
					bPlus = seed.Derive(4, p.PairID)%2 == 0
					bMinus = bPlus
				}
				key := p.ComparisonID + " " + tk.ID
				eligible := r.Config.Admission.AllowRepeatedTasks || !used[key]
				used[key] = used[key] || eligible
				rows = append(rows, schema.PairRow{PairID: p.PairID, ComparisonID: p.ComparisonID, SkillID: p.SkillID, TaskID: tk.ID,
					Family: f, BPlus: bPlus, BMinus: bMinus, Outcome: outcomeOf(bPlus, bMinus), Eligible: eligible})
			}
		}
	}
	if err := schema.WriteRows(schema.Pairs, validate.PairsPath(r, step), lineage(r.Config, step, "aggregate"), rows); err != nil {
		t.Fatal(err)
	}
}

func outcomeOf(bPlus, bMinus bool) string {
	switch {
	case bPlus && !bMinus:
		return "win"
	case bMinus && !bPlus:
		return "loss"
	}
	return "tie"
}

// checkInputs fails when validate or author of step lists a file of a step before step − 1.
func checkInputs(t *testing.T, r *rundir.Folder, step int) {
	t.Helper()
	for _, st := range []rundir.Stage{validate.Stage{}, Stage{}} {
		in, err := st.Inputs(r, step)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range in.Paths() {
			first, _, _ := strings.Cut(r.Rel(p), string(os.PathSeparator))
			if k, ok := layout.ParseStepDir(first); ok && k < step-1 {
				t.Fatalf("step %d: %s reads %s", step, st.Name(), r.Rel(p))
			}
		}
	}
}

// recomputedPool is the evidence pool after step by its definition: updatePool over the
// episodes of every step from 1, starting empty (none carried when author.evidence_pool is 0).
func recomputedPool(t *testing.T, r *rundir.Folder, step int) map[string][]schema.EpisodeRow {
	t.Helper()
	pool := map[string][]schema.EpisodeRow{}
	for j := 1; j <= step && carriesPool(r.Config); j++ {
		eps, err := readEpisodes(r, j)
		if err != nil {
			t.Fatal(err)
		}
		pool = updatePool(pool, eps, r.Config.Author.EvidencePool, r.Config.Admission.SuccessThreshold)
	}
	return pool
}

// recomputedFailed counts, per family, the windows of steps 1..step that did not propose a
// candidate, from their proposals.
func recomputedFailed(t *testing.T, r *rundir.Folder, step int) map[string]int {
	t.Helper()
	out := map[string]int{}
	for j := 1; j <= step; j++ {
		for _, p := range proposals(t, r, j) {
			if p.Status != StatusProposed {
				out[p.Family]++
			}
		}
	}
	return out
}

func readSegment(t *testing.T, r *rundir.Folder, step int) []schema.LedgerRow {
	t.Helper()
	var out []schema.LedgerRow
	for _, st := range []string{layout.Validate, layout.Author} {
		rows, err := schema.ReadFile[schema.LedgerRow](schema.Ledger, filepath.Join(r.StageDir(step, st), layout.LedgerFile))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rows...)
	}
	return out
}

// ids are a pool's episode ids by family, for messages.
func ids(pool map[string][]schema.EpisodeRow) map[string][]string {
	out := map[string][]string{}
	for f, eps := range pool {
		for _, e := range eps {
			out[f] = append(out[f], e.EpisodeID)
		}
	}
	return out
}

// A contradicting or missing author state is refused with a message naming the file.
func TestStageRejectsABadAuthorState(t *testing.T) {
	r := newRun(t, nil)
	stepThrough(t, r, 2, newSimAuthor(r.Config))
	writeRollout(t, r, 3)
	if _, err := r.RunStage(context.Background(), 3, validate.Stage{}, false); err != nil {
		t.Fatal(err)
	}
	dir := r.StageDir(2, layout.Author)
	pool, err := schema.ReadFile[schema.EpisodeRow](schema.EvidencePool, filepath.Join(dir, layout.EvidencePoolFile))
	if err != nil || len(pool) == 0 {
		t.Fatalf("pool %d rows, %v", len(pool), err)
	}
	over := slices.Clone(pool)
	for range r.Config.Author.EvidencePool {
		e := pool[0]
		e.EpisodeID += "x"
		over = append(over, e)
	}
	outputs := Stage{}.Outputs(r, 2)
	author3 := func() error {
		_, err := r.RunStage(context.Background(), 3, Stage{Author: newSimAuthor(r.Config)}, false)
		return err
	}
	for name, c := range map[string]struct {
		file string
		rows func(path string, lin schema.Lineage) error
		want string
	}{
		"a pool over capacity": {layout.EvidencePoolFile, func(path string, lin schema.Lineage) error {
			return schema.WriteRows(schema.EvidencePool, path, lin, over)
		}, "step-000002/author/evidence_pool.arrow: row "},
		"a family counted twice": {layout.AuthorStateFile, func(path string, lin schema.Lineage) error {
			return schema.WriteRows(schema.AuthorState, path, lin, []schema.AuthorStateRow{{Family: "medqa", FailedWindows: 1}, {Family: "medqa", FailedWindows: 2}})
		}, "step-000002/author/author_state.arrow: row 1: family medqa appears twice"},
	} {
		runtest.Rewrite(t, r, 2, layout.Author, outputs, c.file, c.rows)
		if err := author3(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant it to contain %q", name, err, c.want)
		}
		if _, err := r.RunStage(context.Background(), 2, Stage{Author: newSimAuthor(r.Config)}, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{layout.EvidencePoolFile, layout.AuthorStateFile} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
		if err := author3(); err == nil || !strings.Contains(err.Error(), "missing input step-000002/author/"+f+": run `evosteer author --step 2") {
			t.Errorf("missing %s: %v", f, err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := author3(); err != nil {
		t.Fatalf("after restoring step 2: %v", err)
	}
}
