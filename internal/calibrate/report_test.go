package calibrate

import (
	"math"
	"testing"
)

// TestSummaryCountsWhatTheAcceptanceAsks checks the report's arithmetic on hand-made cells: the
// row average's standard error comes from the spread of the per-run row averages (not of the
// cells), and a parameter the optimizer never moved is named apart from one at a bound.
func TestSummaryCountsWhatTheAcceptanceAsks(t *testing.T) {
	rows := []CellRow{
		{Benchmark: "a", Policy: "direct", Block: "iid", Target: 50, Test: 52, TestRuns: []float64{50, 52, 54}, Within: true, Refit: 53},
		{Benchmark: "b", Policy: "direct", Block: "iid", Target: 60, Test: 62, TestRuns: []float64{60, 60, 66}, Within: false, Refit: 58},
	}
	avgs := Averages(rows)
	if len(avgs) != 1 {
		t.Fatalf("%d averages, want 1 (one policy, one block): %+v", len(avgs), avgs)
	}
	a := avgs[0]
	// Per-run averages 55, 56, 60: std √7, over √3 runs.
	if a.Target != 55 || a.Test != 57 || a.Refit != 55.5 || math.Abs(a.TestSE-math.Sqrt(7)/math.Sqrt(3)) > 1e-12 {
		t.Errorf("average %+v, want target 55, test 57, refit 55.5, se %.4f", a, math.Sqrt(7)/math.Sqrt(3))
	}
	params := []Fitted{
		{Param: Param{Name: "x", Lo: 0, Hi: 10}, Start: 1, Value: 1},
		{Param: Param{Name: "y", Lo: 0, Hi: 10}, Start: 1, Value: 9.95},
		{Param: Param{Name: "z", Lo: 0, Hi: 10}, Start: 1, Value: 4},
	}
	s := Summarize(rows, params)
	if s.Cells != 2 || s.Within != 1 || s.WorstAverage != 2 || s.RefitMax != 4 || s.DegreesOfFree != -1 {
		t.Errorf("summary %+v: want 2 cells, 1 within, worst average 2, refit max 4, -1 degrees of freedom", s)
	}
	if len(s.AtBound) != 1 || s.AtBound[0] != "y" || len(s.Unmoved) != 1 || s.Unmoved[0] != "x" {
		t.Errorf("at bound %v, unmoved %v: want [y] and [x]", s.AtBound, s.Unmoved)
	}
	one := Averages(rows[:1])[0].TestSE
	single := Averages([]CellRow{{Policy: "direct", Block: "iid", TestRuns: []float64{3}}})[0].TestSE
	if !math.IsNaN(single) || one != 2/math.Sqrt(3) {
		t.Errorf("one check run must leave the se undefined (got %v); three runs 50, 52, 54 give 2/√3, got %v", single, one)
	}
}

// TestSampleNoiseComparesMovesWithSampling: with fit samples of 2 runs a cell whose runs spread by
// std s may move √2 · s/√2 = s between fits (s/√5 where the fit plays each task five times); a
// cell within twice that counts, one beyond does not. The chances are the hand products of
// P(|Z| ≤ tol/sd): refit noises 2, 1 and 4/√5 against 1 point; direct's average of three cells
// has fit noise √((2 + 0.5 + 1.6)/9) and a check se of 10/√2/3/√2 = 5/3, the single agent's one
// cell fit noise √4.5 and no se.
func TestSampleNoiseComparesMovesWithSampling(t *testing.T) {
	rows := []CellRow{
		{Benchmark: "a", Policy: "direct", Block: "iid", Test: 50, TestStd: 2, TestRuns: []float64{48, 52}, Refit: 53},    // noise 2, move 3 ≤ 4
		{Benchmark: "b", Policy: "direct", Block: "iid", Test: 60, TestStd: 1, TestRuns: []float64{59, 61}, Refit: 57.5},  // noise 1, move 2.5 > 2
		{Benchmark: "aime", Policy: "direct", Block: "iid", Test: 70, TestStd: 4, TestRuns: []float64{68, 72}, Refit: 71}, // noise 4/√5, move 1
		{Benchmark: "a", Policy: "single_agent", Block: "iid", Test: 80, TestStd: 3, Refit: math.NaN()},
	}
	n := sampleNoise(rows, 2, map[string]int{"aime": 5})
	if n.Within != 2 || n.MedianMove != 2.5 || math.Abs(n.MedianNoise-4/math.Sqrt(5)) > 1e-12 {
		t.Errorf("sampleNoise = %+v, want 2 within, median move 2.5, median noise 4/√5", n)
	}
	if math.Abs(n.PRefitWithin-0.11080233533777543) > 1e-12 || math.Abs(n.PAveragesWithin-0.31012798484044773) > 1e-12 {
		t.Errorf("chances %v and %v, want 0.110802 (refit) and 0.310128 (averages)", n.PRefitWithin, n.PAveragesWithin)
	}
}
