package stats

import (
	"slices"
	"strings"
	"testing"
)

// The pool adds a step's healthy natural_reference episodes to the previous state per task,
// sorted by task, leaving the previous state as it was.
func TestAnchorPoolAddsAStep(t *testing.T) {
	prev := []PoolTask{{TaskID: "qb", Family: "F", RewardSum: 1.5, Episodes: 2}, {TaskID: "qz", Family: "G", RewardSum: 1, Episodes: 1}}
	keep := slices.Clone(prev)
	sick := ep("sick", "qb", "F", sourceNatural, 1)
	sick.Healthy = false
	eps := []Episode{
		ep("n1", "qb", "F", sourceNatural, 1),
		ep("n2", "qa", "G", sourceNatural, 0.25),
		ep("n3", "qa", "G", sourceNatural, 0.5),
		ep("cur", "qb", "F", sourceCurrent, 1),  // not pooled
		ep("pt", "qc", "F", sourceTreatment, 1), // not pooled
		ep("pc", "qc", "F", sourceControl, 1),   // not pooled
		sick,                                    // not pooled
	}
	got, err := AnchorPool(prev, eps)
	if err != nil {
		t.Fatal(err)
	}
	want := []PoolTask{
		{TaskID: "qa", Family: "G", RewardSum: 0.75, Episodes: 2},
		{TaskID: "qb", Family: "F", RewardSum: 2.5, Episodes: 3},
		{TaskID: "qz", Family: "G", RewardSum: 1, Episodes: 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("pool\n  %+v\nwant\n  %+v", got, want)
	}
	if !slices.Equal(prev, keep) {
		t.Errorf("the previous state changed: %+v", prev)
	}
	if empty, err := AnchorPool(nil, nil); err != nil || len(empty) != 0 {
		t.Errorf("empty pool: %v, %v", empty, err)
	}
}

// A step's sum is DuckDB's fsum (compensated) of that step's rewards, and the state adds the
// step sums in step order: ten rewards of 0.1 give exactly 1 (a plain running sum gives
// 0.9999999999999999), and two such steps exactly 2.
func TestAnchorPoolSumsEachStepThenAcrossSteps(t *testing.T) {
	var eps []Episode
	plain := 0.0
	for i := range 10 {
		eps = append(eps, ep("n"+string(rune('0'+i)), "q", "F", sourceNatural, 0.1))
		plain += 0.1
	}
	if plain == 1 {
		t.Fatal("the plain sum is exact: the test shows nothing")
	}
	one, err := AnchorPool(nil, eps)
	if err != nil || len(one) != 1 || one[0].RewardSum != 1 || one[0].Episodes != 10 {
		t.Fatalf("step 1: %+v, %v", one, err)
	}
	two, err := AnchorPool(one, eps)
	if err != nil || len(two) != 1 || two[0].RewardSum != 2 || two[0].Episodes != 20 {
		t.Fatalf("step 2: %+v, %v", two, err)
	}
}

// A task is one row, so its pooled episodes must agree on its family, within a step and across
// steps.
func TestAnchorPoolRefusesTwoFamilies(t *testing.T) {
	_, err := AnchorPool(nil, []Episode{ep("a", "q", "F", sourceNatural, 1), ep("b", "q", "G", sourceNatural, 0)})
	if err == nil || !strings.Contains(err.Error(), "task q has natural_reference episodes of families F and G (episode b)") {
		t.Errorf("two families in a step: %v", err)
	}
	_, err = AnchorPool([]PoolTask{{TaskID: "q", Family: "F", RewardSum: 1, Episodes: 1}}, []Episode{ep("b", "q", "G", sourceNatural, 0)})
	if err == nil || !strings.Contains(err.Error(), "of family G, but of family F in earlier steps") {
		t.Errorf("another family than earlier steps: %v", err)
	}
}

// The used keys grow by the eligible pairs of each step, keep the step of their first use, and
// feed Pairs' repeated-task rule at the next step.
func TestPairsUsed(t *testing.T) {
	prev := []UsedPair{{ComparisonID: "c", TaskID: "t1", FirstStep: 1}}
	pairs := []Pair{
		{PairID: "p1", ComparisonID: "c", TaskID: "t1", Eligible: true}, // used again (repeats allowed)
		{PairID: "p2", ComparisonID: "c", TaskID: "t2", Eligible: true},
		{PairID: "p3", ComparisonID: "c", TaskID: "t3", SkipReason: SkipUnhealthyArm},
		{PairID: "p4", ComparisonID: "b", TaskID: "t9", Eligible: true},
		{PairID: "p5", ComparisonID: "b", TaskID: "t9", Eligible: true},
	}
	got := PairsUsed(prev, pairs, 3)
	want := []UsedPair{{"b", "t9", 3}, {"c", "t1", 1}, {"c", "t2", 3}}
	if !slices.Equal(got, want) {
		t.Errorf("used\n  %+v\nwant\n  %+v", got, want)
	}
	if len(prev) != 1 {
		t.Errorf("the previous state changed: %+v", prev)
	}

	// Through the state, a key used at step 1 is a repeated task at step 2.
	step1 := Pairs(pair("1/t/c", "c", "t", 1, 0, true, true), 0.5, nil, false)
	used := PairsUsed(nil, step1, 1)
	step2 := Pairs(pair("2/t/c", "c", "t", 1, 0, true, true), 0.5, UsedKeys(used), false)
	if !step1[0].Eligible || step2[0].Eligible || step2[0].SkipReason != SkipRepeatedTask {
		t.Errorf("step 1 %+v, step 2 %+v: want eligible, then repeated_task", step1[0], step2[0])
	}
	if after := PairsUsed(used, step2, 2); !slices.Equal(after, []UsedPair{{"c", "t", 1}}) {
		t.Errorf("an ineligible repeat changed the state: %+v", after)
	}
}
