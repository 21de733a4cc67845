package author

import (
	"fmt"
	"slices"
	"testing"

	"github.com/evosteer/evosteer-go/schema"
)

// Each priority key decides when the earlier ones tie (METHOD.md §5.3).
func TestPriority(t *testing.T) {
	fams := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	count := map[string]int{"h": 1}
	failed := map[string]int{"g": 1}
	st := map[string]FamilyStats{
		"a": {Rollouts: 10, Successes: 5, MixedTasks: 2, MeanScore: 0.5},
		"b": {Rollouts: 10, Successes: 5, MixedTasks: 3, MeanScore: 0.5}, // more mixed tasks
		"c": {Rollouts: 10, Successes: 4, MixedTasks: 2, MeanScore: 0.4}, // lower mean
		"d": {Rollouts: 12, Successes: 5, MixedTasks: 2, MeanScore: 0.5}, // more failures
		"e": {},                                                          // no rewards
		"f": {Rollouts: 10, Successes: 5, MixedTasks: 2, MeanScore: 0.5}, // ties a: config order
		"g": {Rollouts: 10, Successes: 0, MixedTasks: 9, MeanScore: 0},   // an earlier empty window
		"h": {Rollouts: 10, Successes: 0, MixedTasks: 9, MeanScore: 0},   // already has a skill
	}
	got := priority(fams, count, failed, st)
	want := []string{"b", "c", "d", "a", "f", "e", "g", "h"}
	if !slices.Equal(got, want) {
		t.Errorf("priority %v, want %v", got, want)
	}
}

func TestFamilyStats(t *testing.T) {
	eps := []schema.EpisodeRow{
		{TaskID: "t1", Reward: 1}, {TaskID: "t1", Reward: 0}, // mixed
		{TaskID: "t2", Reward: 1}, {TaskID: "t2", Reward: 0.5}, // both successes
		{TaskID: "t3", Reward: 0},
	}
	if got := familyStats(eps, 0.5); got != (FamilyStats{Rollouts: 5, DistinctTasks: 3, Successes: 3, MixedTasks: 1, MeanScore: 0.5}) {
		t.Errorf("%+v", got)
	}
}

func ep(task string, i int, reward float64, src string) schema.EpisodeRow {
	return schema.EpisodeRow{EpisodeID: fmt.Sprintf("%s/%s/%d", task, src, i), TaskID: task, Family: "f", Source: src, Reward: reward, Stopped: true, Healthy: true}
}

// Contrasts first (largest gap, then task id; worst failure, then best success), then the rest
// alternating failures and successes with unshown tasks first; unstopped or unhealthy
// episodes never; at most max.
func TestSelectEvidence(t *testing.T) {
	unhealthy := ep("t1", 9, 1, "current")
	unhealthy.Healthy = false
	unstopped := ep("t1", 8, 0, "current")
	unstopped.Stopped = false
	fe := &familyEpisodes{
		pool: []schema.EpisodeRow{ep("t4", 0, 0, "natural_reference"), ep("t5", 0, 1, "natural_reference")},
		current: []schema.EpisodeRow{
			ep("t1", 0, 0.6, "current"), ep("t1", 1, 0.2, "current"), ep("t1", 2, 0.9, "paired_treatment"), // gap 0.7
			ep("t2", 0, 1, "current"), ep("t2", 1, 0, "current"), // gap 1
			ep("t3", 0, 0, "current"), ep("t3", 1, 0.3, "current"), // failures only
			unhealthy, unstopped,
		},
	}
	var ids []string
	for _, e := range selectEvidence(fe, 0.5, 8) {
		ids = append(ids, e.EpisodeID)
	}
	want := []string{
		"t2/current/1", "t2/current/0", // gap 1
		"t1/current/1", "t1/paired_treatment/2", // gap 0.7: worst failure, best success
		"t3/current/0", "t5/natural_reference/0", // then alternating, unshown tasks first
		"t4/natural_reference/0", "t1/current/0",
	}
	if !slices.Equal(ids, want) {
		t.Errorf("selected\n%v\nwant\n%v", ids, want)
	}
	// With room for one contrast only, the next best task's failure comes third.
	if got := selectEvidence(fe, 0.5, 3); len(got) != 3 || got[2].EpisodeID != "t1/current/1" {
		t.Errorf("max 3: %v", got)
	}
	if selectEvidence(nil, 0.5, 3) != nil {
		t.Error("no episodes, some evidence")
	}
}

// The pool is carried from step to step (METHOD.md §5.3): each family's pool is re-ranked with
// the step's natural episodes by the selection rule, so a contrast found in an earlier step
// stays while a later step brings only failures; paired arms never enter it; at most capacity.
func TestUpdatePool(t *testing.T) {
	step1 := []schema.EpisodeRow{ep("t1", 0, 1, "current"), ep("t1", 1, 0, "natural_reference"), ep("t2", 0, 0, "current")}
	step2 := []schema.EpisodeRow{ep("t3", 0, 0, "current"), ep("t4", 0, 0, "natural_reference"), ep("t5", 0, 1, "paired_treatment")}
	pool := updatePool(nil, step1, 3, 0.5)
	pool = updatePool(pool, step2, 3, 0.5)
	var ids []string
	for _, e := range pool["f"] {
		ids = append(ids, e.EpisodeID)
	}
	want := []string{"t1/natural_reference/1", "t1/current/0", "t2/current/0"}
	if !slices.Equal(ids, want) {
		t.Errorf("pool %v, want %v", ids, want)
	}
	if got := updatePool(pool, step2, 0, 0.5); len(got) != 0 {
		t.Errorf("capacity 0 keeps %v", got)
	}
	g := groupEpisodes([]schema.EpisodeRow{ep("t9", 0, 1, "current")}, pool)["f"]
	if len(g.pool) != 3 || len(g.current) != 1 || len(g.naturals()) != 4 {
		t.Errorf("pool %+v current %+v", g.pool, g.current)
	}
}
