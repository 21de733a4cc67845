//go:build duckdb_arrow

package aggregate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/runtest"
	"github.com/evosteer/evosteer-go/internal/stats"
	"github.com/evosteer/evosteer-go/internal/tasks"
	"github.com/evosteer/evosteer-go/schema"
)

// Worked examples through the SQL (the stage end to end on hand-made rollout files).

// epAt is an episode of step k ("{k}/{task}/{source}/{i}") in family "f".
func epAt(rng *rand.Rand, k int, task, source string, i int, reward float64, term structure, states ...structure) stats.Episode {
	e := stats.Episode{ID: fmt.Sprintf("%d/%s/%s/%d", k, task, source, i), Step: k, TaskID: task, Family: "f", TaskType: "tt",
		Source: source, Healthy: true, Reward: reward}
	return withStates(rng, e, term, states...)
}

func task(id string) tasks.Task {
	return tasks.Task{ID: id, Family: "f", TaskType: "tt", Split: "train", SourceID: id, Origin: "synthetic", Prompt: "?"}
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-15 {
		t.Errorf("%s = %.17g, want %.17g", what, got, want)
	}
}

var (
	shapeA    = structure{hash: strings.Repeat("a", 64), nodes: 1, edges: 0}
	shapeB    = structure{hash: strings.Repeat("b", 64), nodes: 1, edges: 0} // same coarse bucket as A
	shapeD    = structure{hash: strings.Repeat("d", 64), nodes: 2, edges: 1}
	shapeE    = structure{hash: strings.Repeat("e", 64), nodes: 3, edges: 2}
	shapeRoot = structure{hash: strings.Repeat("0", 64), nodes: 0, edges: 0}
	shapeTerm = structure{hash: strings.Repeat("f", 64), nodes: 5, edges: 4}
)

// Remark B.1: two same-task natural records with rewards 1 and 0 and m_0 = 1/2, κ_q = 0.5: the
// success gets p̂ = (0 + 1/4)/(1 + 1/2) = 1/6 and the failure (1 + 1/4)/(3/2) = 5/6 (each left out
// of its own task sum); a current episode of the same task keeps both: p̂ = (1 + 1/4)/(5/2) = 1/2.
func TestRemarkB1(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	w := &world{cfg: defaultConfig(t), tasks: []tasks.Task{task("f/q")}}
	w.steps = [][]stats.Episode{{
		epAt(rng, 1, "f/q", "natural_reference", 0, 1, shapeTerm, shapeRoot),
		epAt(rng, 1, "f/q", "natural_reference", 1, 0, shapeTerm, shapeRoot),
		epAt(rng, 1, "f/q", "current", 0, 1, shapeTerm, shapeRoot),
	}}
	r := newRun(t, w)
	writeStep(t, r, 1, w.steps[0], 1)
	got := runAggregate(t, r, 1)
	a := math.Exp(w.cfg.AnchorTB.Beta) - 1
	want := map[string]struct {
		pHat float64
		loo  bool
	}{
		"1/f/q/natural_reference/0": {1.0 / 6, true},
		"1/f/q/natural_reference/1": {5.0 / 6, true},
		"1/f/q/current/0":           {0.5, false},
	}
	if len(got.Anchors) != 3 {
		t.Fatalf("%d anchors", len(got.Anchors))
	}
	for _, g := range got.Anchors {
		w := want[g.EpisodeID]
		if g.MGlobal != 0.5 || g.MCategory != 0.5 || g.MPrior != 0.5 || g.LOO != w.loo {
			t.Errorf("%s: m levels %v %v %v loo %v, want 1/2 and loo %v", g.EpisodeID, g.MGlobal, g.MCategory, g.MPrior, g.LOO, w.loo)
		}
		near(t, g.EpisodeID+" p_hat", g.PHat, w.pHat)
		near(t, g.EpisodeID+" anchor", g.Anchor, math.Log(1+a*w.pHat))
	}
}

// An empty bucket (n_g = 0 < n_0) has A_g = 1 and c = 0 (Lemma B.6): a zero-visit bucket carried
// from the previous step gets correction exactly 0, and a decision in it falls through to 'none'.
func TestEmptyBucketHasZeroCorrection(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	w := &world{cfg: defaultConfig(t), tasks: []tasks.Task{task("f/q")}}
	w.steps = [][]stats.Episode{
		{epAt(rng, 1, "f/q", "natural_reference", 0, 1, shapeTerm, shapeRoot)},
		{epAt(rng, 2, "f/q", "current", 0, 1, shapeTerm, shapeE)},
	}
	r := newRun(t, w)
	writeStep(t, r, 1, w.steps[0], 1)
	runAggregate(t, r, 1)
	// Add an empty exact bucket for shape E to step 1's buckets, with a stale correction.
	path := filepath.Join(r.StageDir(1, layout.Aggregate), layout.BucketsFile)
	rows, err := schema.ReadFile[schema.BucketRow](schema.Buckets, path)
	if err != nil {
		t.Fatal(err)
	}
	empty := schema.BucketRow{Kind: "exact", Key: exactKey(shapeE.hash, 3, 2, false), NNodes: 3, NEdges: 2, Correction: 0.125}
	rows = append([]schema.BucketRow{empty}, rows...)
	runtest.Rewrite(t, r, 1, layout.Aggregate, Stage{}.Outputs(r, 1), layout.BucketsFile, func(path string, lin schema.Lineage) error {
		return schema.WriteRows(schema.Buckets, path, lin, rows)
	})

	writeStep(t, r, 2, w.steps[1], 1)
	got := runAggregate(t, r, 2)
	found := false
	for _, b := range got.Buckets {
		if b.Kind == "exact" && b.Key == empty.Key {
			found = true
			if b.Visits != 0 || b.ExcessSum != 0 || b.Correction != 0 {
				t.Errorf("empty bucket carried as %+v, want 0 visits and c = 0", b)
			}
		}
	}
	if !found {
		t.Fatal("the empty bucket was not carried to step 2")
	}
	for _, c := range got.Corrections {
		if c.T == 0 && (c.Kind != "none" || c.Correction != 0) {
			t.Errorf("decision in an empty bucket: %+v, want none and 0", c)
		}
	}
}

// |c(g)| ≤ min(β, c_max) (Lemma B.6), on extreme data: successes whose left-out anchors are low
// (their task's other records failed), so the ratio z = R_β/B is large.
func TestCorrectionBound(t *testing.T) {
	for _, tc := range []struct{ beta, cMax float64 }{{2, 0.25}, {0.1, 5}, {1, 1}} {
		rng := rand.New(rand.NewPCG(3, 3))
		w := &world{cfg: defaultConfig(t)}
		w.cfg.AnchorTB.Beta, w.cfg.Buckets.CorrectionBound = tc.beta, tc.cMax
		var eps []stats.Episode
		for q := 0; q < 20; q++ {
			id := fmt.Sprintf("f/q%02d", q)
			w.tasks = append(w.tasks, task(id))
			eps = append(eps, epAt(rng, 1, id, "natural_reference", 0, 1, shapeTerm, shapeRoot, shapeA))
			for i := 1; i < 6; i++ {
				eps = append(eps, epAt(rng, 1, id, "natural_reference", i, 0, shapeTerm, shapeRoot, shapeB))
			}
		}
		w.steps = [][]stats.Episode{eps}
		r := newRun(t, w)
		writeStep(t, r, 1, eps, 1)
		got := runAggregate(t, r, 1)
		bound := math.Min(tc.beta, tc.cMax)
		clipped := false
		for _, b := range got.Buckets {
			if math.Abs(b.Correction) > bound {
				t.Errorf("β %g c_max %g: %s %s: |c| = %.17g > %g", tc.beta, tc.cMax, b.Kind, b.Key, b.Correction, bound)
			}
			if b.Key == exactKey(shapeA.hash, 1, 0, false) {
				raw := math.Log(1 + b.ExcessSum/(float64(b.Visits)+w.cfg.Buckets.Pseudocount))
				clipped = raw > tc.cMax && b.Correction == tc.cMax
				if b.LogPooledRatio != raw {
					t.Errorf("β %g c_max %g: log_pooled_ratio %.17g, want ln A = %.17g", tc.beta, tc.cMax, b.LogPooledRatio, raw)
				}
				if raw <= tc.cMax && b.Correction != raw {
					t.Errorf("β %g c_max %g: unclipped correction %.17g, want ln A = %.17g", tc.beta, tc.cMax, b.Correction, raw)
				}
			}
		}
		if tc.cMax < tc.beta && !clipped {
			t.Errorf("β %g c_max %g: the successes' bucket should be clipped at c_max", tc.beta, tc.cMax)
		}
		failOnMismatch(t, fmt.Sprintf("β %g c_max %g", tc.beta, tc.cMax), Compare(got, oracleChain(t, w)[0]))
	}
}

// The lookup falls back from the exact bucket to the coarse one below the minimum (8 visits), and
// reads the buckets of the previous step only (one-batch lag).
func TestCoarseFallbackAndOneBatchLag(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	w := &world{cfg: defaultConfig(t), tasks: []tasks.Task{task("f/q"), task("f/r")}}
	var step1 []stats.Episode
	// Step 1: A visited 10 times, B 3 times (coarse bucket of A and B: 13), D 2 times.
	for i := 0; i < 10; i++ {
		step1 = append(step1, epAt(rng, 1, "f/q", "natural_reference", i, float64(i%2), shapeTerm, shapeA))
	}
	for i := 0; i < 3; i++ {
		step1 = append(step1, epAt(rng, 1, "f/r", "natural_reference", i, 1, shapeTerm, shapeB))
	}
	step1 = append(step1, epAt(rng, 1, "f/r", "natural_reference", 3, 0, shapeTerm, shapeD, shapeD))
	// Step 2: one episode through A, B, D and the unseen E, plus natural visits that move A's bucket.
	step2 := []stats.Episode{epAt(rng, 2, "f/q", "current", 0, 1, shapeTerm, shapeA, shapeB, shapeD, shapeE)}
	for i := 0; i < 8; i++ {
		step2 = append(step2, epAt(rng, 2, "f/r", "natural_reference", i, 1, shapeTerm, shapeA))
	}
	w.steps = [][]stats.Episode{step1, step2}
	r := newRun(t, w)
	writeStep(t, r, 1, step1, 1)
	got1 := runAggregate(t, r, 1)
	writeStep(t, r, 2, step2, 2)
	got2 := runAggregate(t, r, 2)
	want := oracleChain(t, w)
	failOnMismatch(t, "step 1", Compare(got1, want[0]))
	failOnMismatch(t, "step 2", Compare(got2, want[1]))

	for _, c := range got1.Corrections {
		if c.Kind != "none" || c.Correction != 0 {
			t.Errorf("step 1 reads no buckets (none before it), got %+v", c)
		}
	}
	bucket := func(tb *Tables, kind, key string) stats.Bucket {
		for _, b := range tb.Buckets {
			if b.Kind == kind && b.Key == key {
				return b
			}
		}
		t.Fatalf("no %s bucket %s", kind, key)
		return stats.Bucket{}
	}
	a1 := bucket(got1, "exact", exactKey(shapeA.hash, 1, 0, false))
	b1 := bucket(got1, "exact", exactKey(shapeB.hash, 1, 0, false))
	c1 := bucket(got1, "coarse", coarseKey(1, 0, false))
	d1 := bucket(got1, "coarse", coarseKey(2, 1, false))
	if a1.Visits != 10 || b1.Visits != 3 || c1.Visits != 13 || d1.Visits != 2 {
		t.Fatalf("step 1 visits A %d B %d coarse(1,0) %d coarse(2,1) %d, want 10 3 13 2", a1.Visits, b1.Visits, c1.Visits, d1.Visits)
	}
	a2 := bucket(got2, "exact", exactKey(shapeA.hash, 1, 0, false))
	if a2.Visits != 18 || a2.Correction == a1.Correction {
		t.Fatalf("step 2 should move A's bucket: %+v vs %+v", a2, a1)
	}
	wantKinds := []struct {
		kind string
		c    float64
	}{{"exact", a1.Correction}, {"coarse", c1.Correction}, {"none", 0}, {"none", 0}}
	n := 0
	for _, c := range got2.Corrections {
		if c.EpisodeID != "2/f/q/current/0" {
			if c.Kind != "exact" || c.Correction != a1.Correction {
				t.Errorf("step 2 natural decision in A: %+v, want step 1's exact correction %v", c, a1.Correction)
			}
			continue
		}
		n++
		if w := wantKinds[c.T]; c.Kind != w.kind || c.Correction != w.c {
			t.Errorf("t=%d: %s %.17g, want %s %.17g (the lagged bucket)", c.T, c.Kind, c.Correction, w.kind, w.c)
		}
	}
	if n != 4 {
		t.Fatalf("%d corrections of the current episode, want 4", n)
	}
}

// A budget-terminated episode's terminal key says stopped = false; the bucket takes n_nodes,
// n_edges and stopped from the key, whichever visit comes first. (stats.Buckets hard-codes
// Stopped = true for terminal visits, so it disagrees when such a terminal visit is the first
// visit of its bucket; this case is kept out of the oracle comparison.)
func TestTerminalStateFieldsComeFromTheKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	w := &world{cfg: defaultConfig(t), tasks: []tasks.Task{task("f/q")}}
	budget := epAt(rng, 1, "f/q", "natural_reference", 0, 0, shapeD, shapeRoot)
	budget.TerminalKey, budget.TerminalCoarseKey = exactKey(shapeD.hash, 2, 1, false), coarseKey(2, 1, false)
	later := epAt(rng, 1, "f/q", "natural_reference", 1, 1, shapeTerm, shapeRoot, shapeD)
	w.steps = [][]stats.Episode{{budget, later}}
	r := newRun(t, w)
	writeStep(t, r, 1, w.steps[0], 1)
	got := runAggregate(t, r, 1)
	for _, b := range got.Buckets {
		if strings.Contains(b.Key, `,2,1,false]`) {
			if b.Stopped || b.Nodes != 2 || b.Edges != 1 || b.Visits != 2 {
				t.Errorf("bucket %s %s: %+v, want 2 visits of a 2-node 1-edge open state", b.Kind, b.Key, b)
			}
		}
	}
}

// A pair_id with two arms of one kind is an error of the rollout, not something to guess about.
func TestPairWithTwoTreatmentArmsFails(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	w := &world{cfg: defaultConfig(t), tasks: []tasks.Task{task("f/q")}}
	arm := func(source string, i int) stats.Episode {
		e := epAt(rng, 1, "f/q", source, i, 1, shapeTerm, shapeA)
		e.PairID, e.ComparisonID = "1/f/q/cmp", "cmp"
		if source == "paired_treatment" {
			e.SkillID = "evosteer-x"
		}
		return e
	}
	eps := []stats.Episode{arm("paired_treatment", 0), arm("paired_treatment", 1), arm("paired_control", 0)}
	r := newRun(t, w)
	writeStep(t, r, 1, eps, 1)
	_, err := r.RunStage(context.Background(), 1, Stage{}, false)
	if err == nil || !strings.Contains(err.Error(), "more than one treatment or control arm") {
		t.Fatalf("want a duplicate-arm error, got %v", err)
	}
}

// The anchor pool holds one row per task, so a task's pooled episodes must name one family, in
// a step and across steps; anything else is an error of the rollout, named.
func TestTaskOfTwoFamiliesFails(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	w := &world{cfg: defaultConfig(t), tasks: []tasks.Task{task("f/q")}}
	r := newRun(t, w)
	other := func(k, i int) stats.Episode {
		e := epAt(rng, k, "f/q", "natural_reference", i, 1, shapeTerm, shapeA)
		e.Family = "g"
		return e
	}
	writeStep(t, r, 1, []stats.Episode{epAt(rng, 1, "f/q", "natural_reference", 0, 1, shapeTerm, shapeA), other(1, 1)}, 1)
	_, err := r.RunStage(context.Background(), 1, Stage{}, false)
	if err == nil || !strings.Contains(err.Error(), "task f/q has natural_reference episodes of families f and g") {
		t.Fatalf("two families in a step: %v", err)
	}
	writeStep(t, r, 1, []stats.Episode{epAt(rng, 1, "f/q", "natural_reference", 0, 1, shapeTerm, shapeA)}, 1)
	runAggregate(t, r, 1)
	writeStep(t, r, 2, []stats.Episode{other(2, 0)}, 1)
	_, err = r.RunStage(context.Background(), 2, Stage{}, false)
	if err == nil || !strings.Contains(err.Error(), "task f/q has natural_reference episodes of family g, but of family f in earlier steps") {
		t.Fatalf("another family than earlier steps: %v", err)
	}
}

// A missing input is named with the command that writes it: step 2 needs step 1's aggregate
// (its three running states), and nothing of step 1's rollout.
func TestMissingInputsAreNamed(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	w := &world{cfg: defaultConfig(t), tasks: []tasks.Task{task("f/q")}}
	r := newRun(t, w)
	e := func(k int) []stats.Episode {
		return []stats.Episode{epAt(rng, k, "f/q", "natural_reference", 0, 1, shapeTerm, shapeA)}
	}
	writeStep(t, r, 2, e(2), 1)
	_, err := r.RunStage(context.Background(), 2, Stage{}, false)
	if err == nil {
		t.Fatal("step 2 ran without step 1")
	}
	for _, f := range []string{layout.BucketsFile, layout.AnchorPoolFile, layout.PairsUsedFile} {
		if want := "missing input step-000001/aggregate/" + f + ": run `evosteer aggregate --step 1 --run " + r.Dir + "` first"; !strings.Contains(err.Error(), want) {
			t.Errorf("missing step 1: %v\nwant it to say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "rollout") {
		t.Errorf("step 2 asks for step 1's rollout: %v", err)
	}
	writeStep(t, r, 1, e(1), 1)
	runAggregate(t, r, 1)
	runAggregate(t, r, 2)
	if _, err := r.RunStage(context.Background(), 3, Stage{}, false); err == nil || !strings.Contains(err.Error(), "evosteer rollout --step 3") {
		t.Fatalf("missing rollout of step 3: %v", err)
	}
}

// The previous step's state is verified before a step runs: a removed anchor pool is named
// with the command that writes it, and a used-keys file replaced by hand is refused, named;
// a state the runner records but that is wrong (a rewritten anchor pool) passes the runner,
// and Check, which recomputes the state from the whole history, names the row.
func TestPreviousStateIsVerified(t *testing.T) {
	w := genWorld(t, 12, genOptions{steps: 3})
	r := newRun(t, w)
	for k := 1; k <= 3; k++ {
		writeStep(t, r, k, w.steps[k-1], 1)
	}
	runAggregate(t, r, 1)
	runAggregate(t, r, 2)
	dir := r.StageDir(2, layout.Aggregate)
	ctx := context.Background()

	pool := filepath.Join(dir, layout.AnchorPoolFile)
	saved, err := os.ReadFile(pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(pool); err != nil {
		t.Fatal(err)
	}
	_, err = r.RunStage(ctx, 3, Stage{}, false)
	if want := "missing input step-000002/aggregate/anchor_pool.arrow: run `evosteer aggregate --step 2 --run " + r.Dir + "` first"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("removed anchor pool: %v\nwant %q", err, want)
	}
	if err := os.WriteFile(pool, saved, 0o644); err != nil {
		t.Fatal(err)
	}

	used := filepath.Join(dir, layout.PairsUsedFile)
	rows, err := schema.ReadFile[schema.PairsUsedRow](schema.PairsUsed, used)
	if err != nil || len(rows) == 0 {
		t.Fatalf("step 2's used keys: %d rows, %v", len(rows), err)
	}
	f, err := schema.PairsUsed.Open(used)
	if err != nil {
		t.Fatal(err)
	}
	lin := f.Lineage
	f.Close()
	writeRows(t, used, schema.PairsUsed, lin, rows[1:])
	_, err = r.RunStage(ctx, 3, Stage{}, false)
	if err == nil || !strings.Contains(err.Error(), "input step-000002/aggregate/pairs_used.arrow has sha256") || !strings.Contains(err.Error(), "replaced outside the pipeline") {
		t.Fatalf("used keys replaced by hand: %v", err)
	}
	runAggregate(t, r, 2) // the recorded pairs_used.arrow is missing its row: rerun puts it back

	poolRows, err := schema.ReadFile[schema.AnchorPoolRow](schema.AnchorPool, pool)
	if err != nil || len(poolRows) == 0 {
		t.Fatalf("step 2's anchor pool: %d rows, %v", len(poolRows), err)
	}
	poolRows[0].Episodes++
	runtest.Rewrite(t, r, 2, layout.Aggregate, Stage{}.Outputs(r, 2), layout.AnchorPoolFile, func(path string, lin schema.Lineage) error {
		return schema.WriteRows(schema.AnchorPool, path, lin, poolRows)
	})
	runAggregate(t, r, 3)
	checks, err := Check(r, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if c.Table == "anchor_pool" {
			if want := fmt.Sprintf("row %q: Episodes = ", poolRows[0].TaskID); !c.Exact || !strings.Contains(c.Mismatch, want) {
				t.Errorf("anchor_pool check: exact %v, mismatch %q, want one containing %q", c.Exact, c.Mismatch, want)
			}
		}
	}
}

// Check reports the first differing row: a p̂ off by 1e-9 and a dropped correction row.
func TestCheckReportsMismatch(t *testing.T) {
	w := genWorld(t, 11, genOptions{steps: 1})
	r := newRun(t, w)
	writeStep(t, r, 1, w.steps[0], 1)
	runAggregate(t, r, 1)
	lin := schema.Lineage{Run: r.Name, Step: 1, Stage: layout.Aggregate, ConfigSHA256: r.Config.SHA256()}
	dir := r.StageDir(1, layout.Aggregate)
	anchors, err := schema.ReadFile[schema.AnchorRow](schema.Anchors, filepath.Join(dir, layout.AnchorsFile))
	if err != nil || len(anchors) < 2 {
		t.Fatalf("%d anchors, %v", len(anchors), err)
	}
	anchors[1].PHat += 1e-9
	writeRows(t, filepath.Join(dir, layout.AnchorsFile), schema.Anchors, lin, anchors)
	corr, err := schema.ReadFile[schema.CorrectionRow](schema.Corrections, filepath.Join(dir, layout.CorrectionsFile))
	if err != nil || len(corr) < 2 {
		t.Fatalf("%d corrections, %v", len(corr), err)
	}
	writeRows(t, filepath.Join(dir, layout.CorrectionsFile), schema.Corrections, lin, corr[1:])
	checks, err := Check(r, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"anchors": "PHat = ", "corrections": "missing", "buckets": "", "value_data": "", "pairs": ""}
	for _, c := range checks {
		if w := want[c.Table]; (w == "") != (c.Mismatch == "") || !strings.Contains(c.Mismatch, w) {
			t.Errorf("%s: mismatch %q, want one containing %q", c.Table, c.Mismatch, w)
		}
	}
}

// An incomplete or mixed set of rollout shards is an error, not a silently smaller step.
func TestIncompleteShardsAreAnError(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	w := &world{cfg: defaultConfig(t), tasks: []tasks.Task{task("f/q")}}
	r := newRun(t, w)
	eps := []stats.Episode{epAt(rng, 1, "f/q", "natural_reference", 0, 1, shapeTerm, shapeA),
		epAt(rng, 1, "f/q", "natural_reference", 1, 0, shapeTerm, shapeA),
		epAt(rng, 1, "f/q", "natural_reference", 2, 0, shapeTerm, shapeA)}
	writeStep(t, r, 1, eps, 3)
	dir := r.StageDir(1, layout.Rollout)
	if err := os.Remove(filepath.Join(dir, "decisions-2-of-3.arrow")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RunStage(context.Background(), 1, Stage{}, false); err == nil || !strings.Contains(err.Error(), "lacks shard 2 of 3 of decisions") {
		t.Fatalf("missing shard: %v", err)
	}
	writeStep(t, r, 1, eps, 1) // now both decisions.arrow and decisions-*-of-3.arrow
	if _, err := r.RunStage(context.Background(), 1, Stage{}, false); err == nil || !strings.Contains(err.Error(), "both episodes.arrow and sharded episodes files") {
		t.Fatalf("mixed shards: %v", err)
	}
}
