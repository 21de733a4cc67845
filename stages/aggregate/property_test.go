//go:build duckdb_arrow

package aggregate

import (
	"math"
	"os"
	"strconv"
	"testing"
)

// propertySeeds is the number of random worlds TestSQLAgreesWithOracle draws
// (AGGREGATE_SEEDS overrides it).
func propertySeeds(t *testing.T) int {
	if s := os.Getenv("AGGREGATE_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if testing.Short() {
		return 5
	}
	return 40
}

// The SQL and the plain-Go oracle agree to 1e-12 on all five tables, step after step, on random
// worlds: every step's outputs are compared with the oracle chained on its own earlier outputs
// (so the pool, the cumulative buckets and the lag are exercised), and with Check (the oracle on
// the inputs read back from the run folder).
func TestSQLAgreesWithOracle(t *testing.T) {
	n := propertySeeds(t)
	var rows [5]int
	cover := coverage{}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		opt := genOptions{steps: 1 + int(seed%3)}
		if seed%5 == 0 {
			opt.emptyPoolStep = 1 // cold start at step 1
		}
		w := genWorld(t, seed, opt)
		r := newRun(t, w)
		want := oracleChain(t, w)
		var prev *Tables
		for k := 1; k <= opt.steps; k++ {
			writeStep(t, r, k, w.steps[k-1], 1+int(seed%2)*(k%3))
			got := runAggregate(t, r, k)
			what := "seed " + strconv.FormatUint(seed, 10) + " step " + strconv.Itoa(k)
			failOnMismatch(t, what+" (oracle chain)", Compare(got, want[k-1]))
			checks, err := Check(r, k)
			if err != nil {
				t.Fatalf("%s: check: %v", what, err)
			}
			failOnMismatch(t, what+" (Check)", checks)
			for _, b := range got.Buckets { // Lemma B.6
				if bound := math.Min(w.cfg.AnchorTB.Beta, w.cfg.Buckets.CorrectionBound); math.Abs(b.Correction) > bound+1e-15 {
					t.Errorf("%s: bucket %s %s: |c| = %g > min(β, c_max) = %g", what, b.Kind, b.Key, math.Abs(b.Correction), bound)
				}
			}
			cover.add(got, prev, w.cfg.Buckets.CorrectionBound)
			prev = got
			for i, c := range []int{len(got.Anchors), len(got.Buckets), len(got.Corrections), len(got.ValueData), len(got.Pairs)} {
				rows[i] += c
			}
		}
		if t.Failed() {
			t.Fatalf("stopping after seed %d", seed)
		}
	}
	t.Logf("cases covered: %v", cover)
	if n >= 20 {
		for _, c := range []string{"loo", "no-loo", "prior-used", "cold-start", "single-observation", "correction-exact",
			"correction-coarse", "correction-none", "pair-eligible", "pair-unhealthy_arm", "pair-repeated_task",
			"win", "loss", "tie", "bucket-carried", "bucket-new", "clipped-correction"} {
			if cover[c] == 0 {
				t.Errorf("no seed exercised %q", c)
			}
		}
	}
	t.Logf("%d seeds: rows compared: anchors %d, buckets %d, corrections %d, value_data %d, pairs %d", n, rows[0], rows[1], rows[2], rows[3], rows[4])
}

// coverage counts the cases the random worlds exercised.
type coverage map[string]int

func (c coverage) add(got, prev *Tables, cMax float64) {
	for _, a := range got.Anchors {
		if a.LOO {
			c["loo"]++
		} else {
			c["no-loo"]++
		}
		if a.MPrior != a.MCategory && math.Abs(a.MPrior-a.MCategory) > 1e-15 {
			c["prior-used"]++
		}
		if a.MGlobal == a.MCategory && a.MCategory == a.MPrior && a.MPrior == a.PHat {
			c["cold-start"]++
		}
	}
	tasks := map[string]int{}
	for _, a := range got.Anchors {
		if a.LOO {
			tasks[a.TaskID]++
		}
	}
	for _, n := range tasks {
		if n == 1 {
			c["single-observation"]++
		}
	}
	for _, x := range got.Corrections {
		c["correction-"+x.Kind]++
	}
	for _, p := range got.Pairs {
		if p.Eligible {
			c["pair-eligible"]++
			c[p.Outcome]++
		} else {
			c["pair-"+p.SkipReason]++
		}
	}
	old := map[string]int64{}
	if prev != nil {
		for _, b := range prev.Buckets {
			old[b.Kind+b.Key] = b.Visits
		}
	}
	for _, b := range got.Buckets {
		switch v, ok := old[b.Kind+b.Key]; {
		case !ok:
			c["bucket-new"]++
		case v == b.Visits:
			c["bucket-carried"]++
		default:
			c["bucket-merged"]++
		}
		if math.Abs(b.Correction) == cMax {
			c["clipped-correction"]++
		}
	}
}
