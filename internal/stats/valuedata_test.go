package stats

import (
	"slices"
	"testing"
)

func TestValueData(t *testing.T) {
	nat := withStates(ep("n", "q", "f", sourceNatural, 1), "T", "A", "B")
	cur := withStates(ep("c", "q", "f", sourceCurrent, 1), "T", "A", "B")
	pt := withStates(ep("pt", "q", "g", sourceTreatment, 0.5), "T", "A", "B", "C")
	pc := withStates(ep("pc", "q", "g", sourceControl, 0), "T", "A")
	sick := withStates(ep("s", "q", "f", sourceNatural, 1), "T", "A")
	sick.Healthy = false
	sickP := withStates(ep("sp", "q", "f", sourceControl, 1), "T", "A", "B")
	sickP.Healthy = false
	got := ValueData([]Episode{nat, cur, pt, pc, sick, sickP})
	row := func(e Episode, t int) ValueRow {
		return ValueRow{EpisodeID: e.ID, T: t, Features: e.Decisions[t].Features, TaskType: e.TaskType, Label: e.Reward}
	}
	want := []ValueRow{row(nat, 0), row(nat, 1), row(pt, 1), row(pt, 2)}
	if !slices.Equal(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if got[2].Label != 0.5 || got[2].TaskType != "tt-g" || got[2].Features[1] != 2 {
		t.Errorf("paired row %+v", got[2])
	}
	if len(ValueData(nil)) != 0 {
		t.Error("no episodes")
	}
}
