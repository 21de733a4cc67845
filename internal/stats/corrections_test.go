package stats

import (
	"slices"
	"testing"
)

func TestCorrectionsLookup(t *testing.T) {
	buckets := []Bucket{
		{Kind: KindExact, Key: "E", Visits: 8, LogPooledRatio: 0.11, Correction: 0.11},      // exact at the minimum
		{Kind: KindCoarse, Key: "c:E", Visits: 50, LogPooledRatio: 0.22, Correction: 0.22},  // exact still preferred
		{Kind: KindExact, Key: "F", Visits: 7, LogPooledRatio: 0.13, Correction: 0.13},      // below: fall back
		{Kind: KindCoarse, Key: "c:F", Visits: 8, LogPooledRatio: -0.14, Correction: -0.14}, // coarse at the minimum
		{Kind: KindExact, Key: "G", Visits: 7, LogPooledRatio: 0.15, Correction: 0.15},      // both below
		{Kind: KindCoarse, Key: "c:G", Visits: 7, LogPooledRatio: 0.16, Correction: 0.16},
		{Kind: KindCoarse, Key: "c:H", Visits: 9, LogPooledRatio: 0.61, Correction: 0.25}, // exact bucket missing; clipped
		{Kind: KindExact, Key: "c:E", Visits: 99, LogPooledRatio: 0.9, Correction: 0.25},  // same string, other kind: ignored
		{Kind: KindExact, Key: "T", Visits: 99, LogPooledRatio: 0.3, Correction: 0.25},    // terminal structure
	}
	e := withStates(ep("x", "q", "f", sourceCurrent, 0), "T", "E", "F", "G", "H", "U")
	p := withStates(ep("p", "q", "f", sourceTreatment, 0), "T", "F")
	got := Corrections(paperBuckets, buckets, []Episode{e, p})
	want := []Correction{
		{"x", 0, KindExact, 0.11, 0.11},
		{"x", 1, KindCoarse, -0.14, -0.14},
		{"x", 2, KindNone, 0, 0},
		{"x", 3, KindCoarse, 0.61, 0.25},
		{"x", 4, KindNone, 0, 0},
		{"p", 0, KindCoarse, -0.14, -0.14},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	// The minimum is the parameter.
	q := paperBuckets
	q.Minimum = 7
	if got := Corrections(q, buckets, []Episode{e})[2]; got.Kind != KindExact || got.Correction != 0.15 {
		t.Errorf("minimum 7: %+v", got)
	}
	// The flow-corrections ablation: the same states, every one 'none' with 0.
	off := paperBuckets
	off.CorrectionsOff = true
	for i, c := range Corrections(off, buckets, []Episode{e, p}) {
		if c.Kind != KindNone || c.Correction != 0 || c.LogPooledRatio != 0 || c.EpisodeID != want[i].EpisodeID || c.T != want[i].T {
			t.Errorf("corrections off, row %d: %+v", i, c)
		}
	}
}

// The one-batch lag: a bucket built from this step's visits does not affect this step's
// lookups when the previous state is passed.
func TestCorrectionsLag(t *testing.T) {
	keys := slices.Repeat([]string{"K"}, 20)
	e := withStates(ep("x", "q", "f", sourceNatural, 1), "T", keys...)
	an := map[string]float64{"x": 0.5}
	var prev []Bucket
	next := Buckets(paperBuckets, prev, []Episode{e}, an)
	if b := findBucket(next, KindExact, "K"); b == nil || b.Visits != 20 || b.Correction == 0 {
		t.Fatalf("setup: %+v", b)
	}
	for _, c := range Corrections(paperBuckets, prev, []Episode{e}) {
		if c.Kind != KindNone || c.Correction != 0 {
			t.Errorf("lagged lookup used this step's bucket: %+v", c)
		}
	}
	// The next step sees it.
	for _, c := range Corrections(paperBuckets, next, []Episode{e}) {
		if c.Kind != KindExact || c.Correction != findBucket(next, KindExact, "K").Correction {
			t.Errorf("next step: %+v", c)
		}
	}
	if n := len(Corrections(paperBuckets, next, []Episode{e})); n != 20 {
		t.Errorf("%d corrections, want one per decision (terminal never looked up)", n)
	}
}
