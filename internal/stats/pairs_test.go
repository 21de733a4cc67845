package stats

import (
	"slices"
	"testing"
)

func arm(pair, cmp, task, source string, reward float64, healthy bool) Episode {
	e := ep(pair+"/"+source, task, "fam-"+task, source, reward)
	e.PairID, e.ComparisonID, e.SkillID, e.Healthy = pair, cmp, "skill-"+cmp, healthy
	return e
}

func pair(id, cmp, task string, rPlus, rMinus float64, healthyPlus, healthyMinus bool) []Episode {
	return []Episode{arm(id, cmp, task, sourceTreatment, rPlus, healthyPlus), arm(id, cmp, task, sourceControl, rMinus, healthyMinus)}
}

func TestPairsOutcomes(t *testing.T) {
	var eps []Episode
	eps = append(eps, pair("p4", "c", "t4", 0.4999, 0.4999, true, true)...) // tie (both fail)
	eps = append(eps, pair("p1", "c", "t1", 1, 0, true, true)...)           // win
	eps = append(eps, pair("p2", "c", "t2", 0, 1, true, true)...)           // loss
	eps = append(eps, pair("p3", "c", "t3", 0.5, 0.5, true, true)...)       // tie (both succeed at 0.5)
	eps = append(eps, pair("p5", "c", "t5", 0.5, 0.49, true, true)...)      // win at the threshold
	eps = append(eps, ep("cur", "t1", "f", sourceCurrent, 1))
	got := Pairs(eps, 0.5, nil, false)
	want := []Pair{
		{"p1", "c", "skill-c", "t1", "fam-t1", true, false, OutcomeWin, true, ""},
		{"p2", "c", "skill-c", "t2", "fam-t2", false, true, OutcomeLoss, true, ""},
		{"p3", "c", "skill-c", "t3", "fam-t3", true, true, OutcomeTie, true, ""},
		{"p4", "c", "skill-c", "t4", "fam-t4", false, false, OutcomeTie, true, ""},
		{"p5", "c", "skill-c", "t5", "fam-t5", true, false, OutcomeWin, true, ""},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestPairsFieldsFromTreatment(t *testing.T) {
	eps := pair("p", "c", "t", 1, 0, true, true)
	eps[1].SkillID, eps[1].TaskID, eps[1].Family, eps[1].ComparisonID = "other", "other", "other", "other"
	eps[0], eps[1] = eps[1], eps[0] // control first in eps
	got := Pairs(eps, 0.5, nil, false)
	if len(got) != 1 || got[0].SkillID != "skill-c" || got[0].TaskID != "t" || got[0].Family != "fam-t" || got[0].ComparisonID != "c" || got[0].Outcome != OutcomeWin {
		t.Errorf("%+v", got)
	}
}

func TestPairsIncompleteDropped(t *testing.T) {
	eps := []Episode{
		arm("only-plus", "c", "t1", sourceTreatment, 1, true),
		arm("only-minus", "c", "t2", sourceControl, 0, true),
		ep("nopair", "t3", "f", sourceTreatment, 1), // empty PairID
	}
	eps = append(eps, pair("full", "c", "t4", 1, 1, true, true)...)
	got := Pairs(eps, 0.5, nil, false)
	if len(got) != 1 || got[0].PairID != "full" {
		t.Errorf("%+v", got)
	}
}

func TestPairsEligibility(t *testing.T) {
	var eps []Episode
	eps = append(eps, pair("a", "c1", "t", 1, 0, true, true)...)  // eligible, takes (c1, t)
	eps = append(eps, pair("b", "c1", "t", 0, 1, true, true)...)  // repeated within the step
	eps = append(eps, pair("c", "c2", "t", 1, 1, true, false)...) // unhealthy control
	eps = append(eps, pair("d", "c2", "t", 1, 0, true, true)...)  // first eligible (c2, t): c did not take it
	eps = append(eps, pair("e", "c3", "u", 1, 0, false, true)...) // unhealthy treatment, although (c3, u) is used
	eps = append(eps, pair("f", "c3", "u", 1, 0, true, true)...)  // used by an earlier step
	eps = append(eps, pair("g", "c1", "u", 0, 0, true, true)...)  // other task, same comparison: fine
	used := map[[2]string]bool{{"c3", "u"}: true}
	got := Pairs(eps, 0.5, used, false)
	type ew struct {
		eligible bool
		reason   string
	}
	want := map[string]ew{
		"a": {true, ""}, "b": {false, SkipRepeatedTask}, "c": {false, SkipUnhealthyArm},
		"d": {true, ""}, "e": {false, SkipUnhealthyArm}, "f": {false, SkipRepeatedTask}, "g": {true, ""},
	}
	if len(got) != len(want) {
		t.Fatalf("%d pairs", len(got))
	}
	for _, p := range got {
		if w := want[p.PairID]; p.Eligible != w.eligible || p.SkipReason != w.reason {
			t.Errorf("pair %s: eligible %v %q, want %v %q", p.PairID, p.Eligible, p.SkipReason, w.eligible, w.reason)
		}
	}
	if len(used) != 1 {
		t.Error("Pairs modified used")
	}
	// Outcomes are scored for ineligible pairs too.
	if got[1].Outcome != OutcomeLoss || got[2].Outcome != OutcomeTie {
		t.Errorf("ineligible outcomes: %+v %+v", got[1], got[2])
	}

	// allowRepeated: only health matters.
	for _, p := range Pairs(eps, 0.5, used, true) {
		unhealthy := p.PairID == "c" || p.PairID == "e"
		if p.Eligible == unhealthy || (unhealthy && p.SkipReason != SkipUnhealthyArm) || (!unhealthy && p.SkipReason != "") {
			t.Errorf("allowRepeated: %+v", p)
		}
	}
}
