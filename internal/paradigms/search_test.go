package paradigms

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

// The grammar's templates have distinct names and are all valid where every role is offered; in
// the interactive task type exactly those with a tool_user are not.
func TestGrammar(t *testing.T) {
	g := Grammar()
	if err := uniqueNames(g); err != nil {
		t.Fatal(err)
	}
	for _, tpl := range g {
		if err := tpl.Validate(orchestra.RolesFor("hotpotqa", "")); err != nil {
			t.Errorf("hotpotqa: %v", err)
		}
		uses := slices.ContainsFunc(tpl.Agents, func(a Agent) bool { return a.Role == "tool_user" })
		if err := tpl.Validate(orchestra.RolesFor("alfworld", "")); (err != nil) != uses {
			t.Errorf("alfworld %s: %v", tpl.Name, err)
		}
	}
	if len(g) != 33 {
		t.Errorf("%d templates, want 33", len(g))
	}
}

// The search plays every admissible template on the same seeded sample of each task type's
// training tasks, scores them, and freezes the cheapest within a standard error of the best; it
// is deterministic, and its result survives JSON and drives searched_workflow.
func TestSearchChoosesTheBestPerTaskType(t *testing.T) {
	cfg := defaultConfig(t)
	train := testTasks(cfg, "train", 10)
	var cands []Template
	for _, name := range []string{"solver", "tool_user", "solver>verifier", "3xsolver:majority", "planner>solver>verifier"} {
		k := slices.IndexFunc(Grammar(), func(t Template) bool { return t.Name == name })
		cands = append(cands, Grammar()[k])
	}
	o := SearchOptions{Templates: cands, PerFamily: 6, Seed: 7}
	res, err := Search(context.Background(), cfg, sim.New(cfg.Sim, cfg.Seed), train, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Workflows) != len(sim.IIDFamilies) {
		t.Fatalf("workflows for %d task types, want %d", len(res.Workflows), len(sim.IIDFamilies))
	}
	for _, tt := range sim.IIDFamilies {
		var typed []Score
		top := 0.0
		for _, s := range res.Scores {
			if s.TaskType != tt {
				continue
			}
			typed = append(typed, s)
			top = math.Max(top, s.Mean)
			if s.Episodes != 6 || s.Mean < 0 || s.Mean > 1 || !(s.Tokens > 0) {
				t.Fatalf("score %+v", s)
			}
		}
		n := len(typed)
		var best *Score // the cheapest within a standard error of the top mean
		for i, s := range typed {
			if s.Mean >= top-math.Sqrt(top*(1-top)/6) && (best == nil || s.Tokens < best.Tokens) {
				best = &typed[i]
			}
		}
		want := len(cands)
		if tt == "alfworld" {
			want-- // no tool_user
		}
		if n != want {
			t.Fatalf("%s: %d templates scored, want %d", tt, n, want)
		}
		if res.Workflows[tt].Name != best.Template {
			t.Fatalf("%s: chose %s, the best is %s (%+v)", tt, res.Workflows[tt].Name, best.Template, res.Scores)
		}
		t.Logf("%s: %s (mean %.3f, %.0f tokens)", tt, best.Template, best.Mean, best.Tokens)
	}
	var spread float64
	for _, s := range res.Scores {
		spread = math.Max(spread, math.Abs(s.Mean-res.Scores[0].Mean))
	}
	if spread == 0 {
		t.Fatal("every template scored the same: the search compares nothing")
	}
	again, err := Search(context.Background(), cfg, sim.New(cfg.Sim, cfg.Seed), train, o)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(res)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Fatal("two searches with the same seed differ")
	}
	var back SearchResult
	if err := json.Unmarshal(a, &back); err != nil || !reflect.DeepEqual(back.Workflows, res.Workflows) {
		t.Fatalf("JSON round trip: %v", err)
	}
	pol, err := New(SearchedWorkflow, back.Workflows)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range play(t, cfg, SearchedWorkflow, pol, testTasks(cfg, "test", 1)) {
		checkEpisode(t, SearchedWorkflow, p)
	}
}

// TestChooseTakesTheCheapestWithinOneStandardError: among scores within √(p(1−p)/n) of the best
// mean the fewest tokens win; a cheaper template outside that band, or the best itself when it
// is the cheapest in the band, are not passed over.
func TestChooseTakesTheCheapestWithinOneStandardError(t *testing.T) {
	// best 0.86 over 192 episodes: se 0.025, so the band starts at 0.835.
	scores := []Score{
		{Template: "a", Mean: 0.86, Episodes: 192, Tokens: 300},
		{Template: "b", Mean: 0.85, Episodes: 192, Tokens: 120},
		{Template: "c", Mean: 0.80, Episodes: 192, Tokens: 50},
		{Template: "d", Mean: 0.84, Episodes: 192, Tokens: 100},
	}
	if got := scores[choose(scores)].Template; got != "d" {
		t.Errorf("chose %s, want d (the cheapest within the band; c is cheaper but outside it)", got)
	}
	scores[3].Mean = 0.83 // now outside the band
	if got := scores[choose(scores)].Template; got != "b" {
		t.Errorf("chose %s, want b", got)
	}
	scores[0].Tokens = 10
	if got := scores[choose(scores)].Template; got != "a" {
		t.Errorf("chose %s, want a (the best and the cheapest)", got)
	}
	one := []Score{{Template: "x", Mean: 1, Episodes: 4, Tokens: 9}, {Template: "y", Mean: 0.75, Episodes: 4, Tokens: 1}}
	if got := one[choose(one)].Template; got != "x" {
		t.Errorf("a perfect best has no standard error: chose %s, want x", got)
	}
}

func TestSearchRejects(t *testing.T) {
	cfg := defaultConfig(t)
	train := testTasks(cfg, "train", 2)
	exec := sim.New(cfg.Sim, cfg.Seed)
	twice := []Template{Grammar()[0], Grammar()[0]}
	for _, c := range []struct {
		o    SearchOptions
		want string
	}{
		{SearchOptions{PerFamily: 0}, "tasks per family"},
		{SearchOptions{PerFamily: 2, Templates: twice}, "repeated name"},
		{SearchOptions{PerFamily: 2, Templates: []Template{{Name: "plan", Agents: []Agent{{Role: "planner"}}, Output: OutputLast}}}, "no template is playable"},
	} {
		if _, err := Search(context.Background(), cfg, exec, train, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}

// A wanted task type without training tasks (a pilot pool that leaves ALFWorld out) gets no
// workflow but a reason, which Unavailable puts on every benchmark of that task type: alfworld
// and webshop, which maps to it.
func TestSearchNamesTaskTypesWithoutTrainingTasks(t *testing.T) {
	cfg := defaultConfig(t)
	train := slices.DeleteFunc(testTasks(cfg, "train", 1), func(t tasks.Task) bool { return t.Family == "alfworld" })
	res, err := Search(context.Background(), cfg, sim.New(cfg.Sim, cfg.Seed), train,
		SearchOptions{Templates: Grammar()[:1], PerFamily: 1, Seed: 7, TaskTypes: append(slices.Clone(sim.IIDFamilies), "alfworld")})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Workflows["alfworld"]; ok || len(res.Workflows) != len(sim.IIDFamilies)-1 {
		t.Fatalf("workflows %v", slices.Sorted(maps.Keys(res.Workflows)))
	}
	want := map[string]string{"alfworld": NoTrainingTasks("alfworld")}
	if !reflect.DeepEqual(res.Unsearched, want) {
		t.Fatalf("unsearched %v, want %v", res.Unsearched, want)
	}
	why := "no training task of type alfworld to search a workflow on"
	if got := res.Unavailable(cfg); !reflect.DeepEqual(got, map[string]string{"alfworld": why, "webshop": why}) {
		t.Fatalf("unavailable %v", got)
	}
	if full, err := Search(context.Background(), cfg, sim.New(cfg.Sim, cfg.Seed), testTasks(cfg, "train", 1),
		SearchOptions{Templates: Grammar()[:1], PerFamily: 1, Seed: 7, TaskTypes: sim.IIDFamilies}); err != nil || full.Unsearched != nil || full.Unavailable(cfg) != nil {
		t.Fatalf("every task type trained: %v, unsearched %v", err, full)
	}
}
