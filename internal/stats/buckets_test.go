package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func findBucket(bs []Bucket, kind, key string) *Bucket {
	for i := range bs {
		if bs[i].Kind == kind && bs[i].Key == key {
			return &bs[i]
		}
	}
	return nil
}

func TestBucketCorrectionEmpty(t *testing.T) {
	if c := BucketCorrection(paperBuckets, BucketLogPooledRatio(paperBuckets, 0, 0)); c != 0 {
		t.Errorf("empty bucket: c = %v, want 0 (Lemma B.6)", c)
	}
	got := Buckets(paperBuckets, []Bucket{{Kind: KindExact, Key: "e", Correction: 0.2}}, nil, nil)
	if len(got) != 1 || got[0].Correction != 0 || got[0].Visits != 0 {
		t.Errorf("previous empty bucket: %+v, want correction recomputed to 0", got)
	}
	if got := Buckets(paperBuckets, nil, nil, nil); len(got) != 0 {
		t.Errorf("no visits: %v", got)
	}
}

// One natural episode, reward 1, anchor A = ln(1 + a/2): two decisions in structure K and a
// terminal in structure S.
func TestBucketsHandComputed(t *testing.T) {
	a := math.Exp(2) - 1
	anchor := math.Log(1 + a/2)
	e := withStates(ep("x", "q", "f", sourceNatural, 1), "S", "K", "K")
	got := Buckets(paperBuckets, nil, []Episode{e}, map[string]float64{"x": anchor})

	z := math.Exp(2) / (1 + a/2) // R_β(x)/B_x
	excess := z - 1
	near(t, "Excess", Excess(2, 1, anchor), excess, 1e-13)
	wantK := math.Log(1 + 2*excess/(2+8))
	wantS := math.Log(1 + excess/(1+8))
	if wantK > 0.25 || wantS > 0.25 {
		t.Fatal("example should not clip")
	}
	if len(got) != 4 {
		t.Fatalf("got %d buckets: %+v", len(got), got)
	}
	// Sorted by (Kind, Key): coarse before exact.
	wantOrder := [][2]string{{KindCoarse, "c:K"}, {KindCoarse, "c:S"}, {KindExact, "K"}, {KindExact, "S"}}
	for i, w := range wantOrder {
		if got[i].Kind != w[0] || got[i].Key != w[1] {
			t.Fatalf("row %d is (%s, %s), want %v", i, got[i].Kind, got[i].Key, w)
		}
	}
	for _, b := range got {
		switch b.Key {
		case "K", "c:K":
			if b.Visits != 2 || b.Stopped || b.Nodes != 1 {
				t.Errorf("%+v", b)
			}
			near(t, b.Kind+" K excess", b.ExcessSum, 2*excess, 1e-13)
			near(t, b.Kind+" K correction", b.Correction, wantK, 1e-13)
		case "S", "c:S":
			if b.Visits != 1 || !b.Stopped || b.Nodes != 1 || b.Edges != 7 {
				t.Errorf("%+v", b)
			}
			near(t, b.Kind+" S correction", b.Correction, wantS, 1e-13)
		}
	}
	// Exact numbers of this example: z = e²/(1 + (e²−1)/2) = 2e²/(e²+1).
	near(t, "z", z, 2*math.Exp(2)/(math.Exp(2)+1), 1e-13)
}

func TestBucketsClipAtBound(t *testing.T) {
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = "K"
	}
	up := withStates(ep("up", "q", "f", sourceNatural, 1), "S", keys...)
	down := withStates(ep("down", "q", "f", sourceNatural, 0), "S2", slices.Repeat([]string{"D"}, 100)...)
	got := Buckets(paperBuckets, nil, []Episode{up, down}, map[string]float64{"up": 0, "down": 2})
	if b := findBucket(got, KindExact, "K"); b == nil || b.Correction != 0.25 {
		t.Errorf("upper clip: %+v", b)
	}
	if b := findBucket(got, KindExact, "D"); b == nil || b.Correction != -0.25 {
		t.Errorf("lower clip: %+v", b)
	}
	// The bound is the parameter.
	p := paperBuckets
	p.CorrectionBound = 10
	b := findBucket(Buckets(p, nil, []Episode{up}, map[string]float64{"up": 0}), KindExact, "K")
	near(t, "unclipped", b.Correction, math.Log(1+100*(math.Exp(2)-1)/(100+8)), 1e-13)
}

func TestBucketsExactAndCoarseAndRepeats(t *testing.T) {
	e1 := withStates(ep("e1", "q", "f", sourceNatural, 1), "T", "A", "B", "A", "A")
	e2 := withStates(ep("e2", "q", "f", sourceNatural, 0), "T", "A")
	// e2's decision shares the coarse bucket of B but has its own exact key.
	e2.Decisions[0].Key, e2.Decisions[0].CoarseKey = "B2", "c:B"
	an := map[string]float64{"e1": 0.3, "e2": 1.1}
	got := Buckets(paperBuckets, nil, []Episode{e1, e2}, an)
	x1, x2 := Excess(2, 1, 0.3), Excess(2, 0, 1.1)
	for _, w := range []struct {
		kind, key string
		visits    int64
		excess    float64
	}{
		{KindExact, "A", 3, 3 * x1},
		{KindExact, "B", 1, x1},
		{KindExact, "B2", 1, x2},
		{KindExact, "T", 2, x1 + x2},
		{KindCoarse, "c:A", 3, 3 * x1},
		{KindCoarse, "c:B", 2, x1 + x2},
		{KindCoarse, "c:T", 2, x1 + x2},
	} {
		b := findBucket(got, w.kind, w.key)
		if b == nil || b.Visits != w.visits {
			t.Errorf("%s %s: %+v, want %d visits", w.kind, w.key, b, w.visits)
			continue
		}
		near(t, w.kind+" "+w.key+" excess", b.ExcessSum, w.excess, 1e-13)
		logA := math.Log(1 + w.excess/(float64(w.visits)+paperBuckets.Pseudocount))
		near(t, w.kind+" "+w.key+" log A", b.LogPooledRatio, logA, 1e-13)
		near(t, w.kind+" "+w.key+" correction", b.Correction, math.Max(-paperBuckets.CorrectionBound, math.Min(paperBuckets.CorrectionBound, b.LogPooledRatio)), 0)
	}
	if len(got) != 7 {
		t.Errorf("%d buckets, want 7", len(got))
	}
}

func TestBucketsSources(t *testing.T) {
	nat := withStates(ep("n", "q", "f", sourceNatural, 1), "Tn", "N")
	pt := withStates(ep("pt", "q", "f", sourceTreatment, 1), "Tp", "P0", "P1")
	pc := withStates(ep("pc", "q", "f", sourceControl, 0), "Tc", "C0")
	cur := withStates(ep("cur", "q", "f", sourceCurrent, 1), "Tx", "X")
	sick := withStates(ep("sick", "q", "f", sourceNatural, 1), "Ts", "Y")
	sick.Healthy = false
	sickPaired := withStates(ep("sp", "q", "f", sourceTreatment, 1), "Tsp", "Z")
	sickPaired.Healthy = false
	eps := []Episode{nat, pt, pc, cur, sick, sickPaired}
	an := map[string]float64{"n": 1, "pt": 1, "pc": 1, "cur": 1, "sick": 1, "sp": 1}

	keys := func(bs []Bucket) []string {
		var out []string
		for _, b := range bs {
			if b.Kind == KindExact {
				out = append(out, b.Key)
			}
		}
		return out
	}
	with := keys(Buckets(paperBuckets, nil, eps, an))
	if want := []string{"C0", "N", "P0", "P1", "Tc", "Tn", "Tp"}; !slices.Equal(with, want) {
		t.Errorf("reference_with_paired: exact keys %v, want %v (paired root P0/C0 included)", with, want)
	}
	p := paperBuckets
	p.SourceMode = "natural_only"
	if got, want := keys(Buckets(p, nil, eps, an)), []string{"N", "Tn"}; !slices.Equal(got, want) {
		t.Errorf("natural_only: exact keys %v, want %v", got, want)
	}
	// Episodes that do not visit need no anchor.
	_ = Buckets(p, nil, eps, map[string]float64{"n": 1})
}

func TestBucketsMissingAnchorPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a visiting episode without an anchor")
		}
	}()
	Buckets(paperBuckets, nil, []Episode{withStates(ep("n", "q", "f", sourceNatural, 1), "T", "A")}, nil)
}

func randomEpisodes(rng *rand.Rand, n int, prefix string) ([]Episode, map[string]float64) {
	sources := []string{sourceNatural, sourceNatural, sourceTreatment, sourceControl, sourceCurrent}
	var eps []Episode
	an := map[string]float64{}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%s%d", prefix, i)
		keys := make([]string, rng.IntN(6))
		for j := range keys {
			keys[j] = fmt.Sprintf("k%d", rng.IntN(5))
		}
		r := float64(rng.IntN(2))
		if rng.IntN(3) == 0 {
			r = rng.Float64()
		}
		e := withStates(ep(id, "q", "f", sources[rng.IntN(len(sources))], r), fmt.Sprintf("t%d", rng.IntN(3)), keys...)
		for j := range e.Decisions {
			e.Decisions[j].CoarseKey = fmt.Sprintf("c%d", rng.IntN(3))
		}
		e.Healthy = rng.IntN(6) != 0
		eps = append(eps, e)
		an[id] = rng.Float64() * 2
	}
	return eps, an
}

// Lemma B.6: with anchors and rewards in range, |c(g)| ≤ min(β, c_max).
func TestBucketsLemmaB5Bound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 300; trial++ {
		p := BucketParams{
			Beta:            rng.Float64() * 3,
			Minimum:         8,
			Pseudocount:     rng.Float64() * 10,
			CorrectionBound: rng.Float64(),
			SourceMode:      SourceModeReferenceWithPaired,
		}
		if trial%2 == 0 {
			p.Pseudocount = float64(rng.IntN(3)) // 0 included
		}
		eps, an := randomEpisodes(rng, 1+rng.IntN(30), "e")
		for id := range an {
			an[id] = rng.Float64() * p.Beta
		}
		bound := math.Min(p.Beta, p.CorrectionBound)
		for _, b := range Buckets(p, nil, eps, an) {
			if math.IsNaN(b.Correction) || math.Abs(b.Correction) > bound+1e-12 {
				t.Fatalf("trial %d: bucket %+v, |c| > min(β=%v, c_max=%v)", trial, b, p.Beta, p.CorrectionBound)
			}
		}
	}
}

func TestBucketsCumulative(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 50; trial++ {
		s1, an1 := randomEpisodes(rng, 1+rng.IntN(20), "a")
		s2, an2 := randomEpisodes(rng, 1+rng.IntN(20), "b")
		an := map[string]float64{}
		for k, v := range an1 {
			an[k] = v
		}
		for k, v := range an2 {
			an[k] = v
		}
		after1 := Buckets(paperBuckets, nil, s1, an1)
		snapshot := slices.Clone(after1)
		twoSteps := Buckets(paperBuckets, after1, s2, an2)
		if !slices.Equal(after1, snapshot) {
			t.Fatal("Buckets modified prev")
		}
		oneStep := Buckets(paperBuckets, nil, append(slices.Clone(s1), s2...), an)
		if len(twoSteps) != len(oneStep) {
			t.Fatalf("trial %d: %d vs %d buckets", trial, len(twoSteps), len(oneStep))
		}
		for i := range oneStep {
			a, b := twoSteps[i], oneStep[i]
			if a.Kind != b.Kind || a.Key != b.Key || a.Visits != b.Visits || a.Nodes != b.Nodes || a.Edges != b.Edges || a.Stopped != b.Stopped {
				t.Fatalf("trial %d row %d: %+v vs %+v", trial, i, a, b)
			}
			near(t, "excess", a.ExcessSum, b.ExcessSum, 1e-12)
			near(t, "correction", a.Correction, b.Correction, 1e-12)
		}
	}
}
