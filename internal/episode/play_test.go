package episode

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/sim"
)

// A Job's First forces the episode's first action as a paired arm's is forced (marked forced,
// behaviour log-prob 0, then the network decides); an illegal one ends the episode unhealthy.
func TestPlayForcesTheFirstAction(t *testing.T) {
	cfg, l, eng := untrained(t)
	train := sim.Tasks(cfg.Sim, cfg.Seed, cfg.Families[0], cfg.Families[0], "train", 1)
	planner := orchestra.Action{Kind: orchestra.KindAddAgent, NodeID: "n0", RoleID: "planner"}
	nobody := orchestra.Action{Kind: orchestra.KindAddAgent, NodeID: "n0", RoleID: "nobody"}
	jobs := []Job{
		{Task: train[0], ID: "forced", Seed: 7, First: &planner},
		{Task: train[0], ID: "illegal", Seed: 7, First: &nobody},
		{Task: train[0], ID: "free", Seed: 7},
	}
	exec, err := NewExecutor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	played, err := Play(context.Background(), cfg, exec, l, eng, jobs, nil)
	if err != nil {
		t.Fatal(err)
	}
	forced, illegal, free := played[0], played[1], played[2]
	if d := forced.Decisions[0]; !d.Forced || d.ActionJSON != planner.JSON() || d.LogpBehavior != 0 || len(forced.Decisions) < 2 || forced.Decisions[1].Forced {
		t.Fatalf("forced episode: first decision %+v of %d", d, len(forced.Decisions))
	}
	if illegal.Episode.Healthy || len(illegal.Decisions) != 0 || !strings.Contains(*illegal.Episode.UnhealthyReason, "forced first action") {
		t.Fatalf("illegal first action: healthy %v, %d decisions", illegal.Episode.Healthy, len(illegal.Decisions))
	}
	if d := free.Decisions[0]; d.Forced || strings.Join(d.LegalActions, " ") != strings.Join(forced.Decisions[0].LegalActions, " ") {
		t.Fatalf("the free episode's first decision %+v", d)
	}
}

// A paired arm's forced first action is not charged to the budget (METHOD.md §2.6: forced
// decisions are not); a sampled one is, and so is a forced one with ChargeFirst. At t = 1 the
// settled tokens (feature 26 × the cap) are exactly the first execution's after a forced first
// action, and more after a charged one.
func TestForcedFirstActionIsNotCharged(t *testing.T) {
	cfg, l, eng := untrained(t)
	train := sim.Tasks(cfg.Sim, cfg.Seed, cfg.Families[0], cfg.Families[0], "train", 1)
	exec, err := NewExecutor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	solver := orchestra.Action{Kind: orchestra.KindAddAgent, NodeID: "n0", RoleID: "solver"}
	jobs := []Job{{Task: train[0], ID: "forced", Seed: 7, First: &solver}, {Task: train[0], ID: "free", Seed: 7},
		{Task: train[0], ID: "charged", Seed: 7, First: &solver, ChargeFirst: true}}
	played, err := Play(context.Background(), cfg, exec, l, eng, jobs, nil)
	if err != nil {
		t.Fatal(err)
	}
	settledAt1 := func(p Played) (settled, executed float64) {
		if len(p.Decisions) < 2 || len(p.Decisions[0].LegalActions) < 2 {
			t.Fatalf("episode %s: %d decisions", p.Episode.EpisodeID, len(p.Decisions))
		}
		for _, x := range p.Executions {
			if x.T == 0 {
				executed += float64(x.TokensIn + x.TokensOut)
			}
		}
		return float64(p.Decisions[1].Features[26]) * float64(cfg.Budget.Tokens), executed
	}
	if settled, executed := settledAt1(played[0]); math.Abs(settled-executed) > 0.5 {
		t.Fatalf("forced first action: %.1f tokens settled before t = 1, the first execution used %.0f", settled, executed)
	}
	for _, p := range played[1:] { // sampled, and forced with ChargeFirst (the probe's)
		if settled, executed := settledAt1(p); settled < executed+1 {
			t.Fatalf("episode %s: %.1f tokens settled before t = 1, the first execution used %.0f: the first decision was not charged", p.Episode.EpisodeID, settled, executed)
		}
	}
}

// Episodes must not depend on how the worker pool interleaves them.
func TestEpisodesIndependentOfWorkerCount(t *testing.T) {
	jobs, e := testBatch(t, func(c *config.Config) executor.Executor { return sim.New(c.Sim, c.Seed) })
	one, err := runAll(context.Background(), e, jobs, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	many, err := runAll(context.Background(), e, jobs, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(one, many) {
		t.Fatal("episodes differ between 1 and 8 workers")
	}
}
