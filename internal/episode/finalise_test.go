package episode

import (
	"context"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/sim"
)

// Two roles, and a budget that holds one agent's envelope but not the envelope and the
// controller's decision together: the first decision has two legal actions, the controller
// cannot pay for it, and with no agent there is no forced action to finalise with. The episode ends unhealthy with that reason
// (the stage's unhealthy share then decides) instead of asking the policy to choose among none.
func TestFinalisingWithoutAgentsEndsTheEpisode(t *testing.T) {
	jobs, e := testBatch(t, func(c *config.Config) executor.Executor { return sim.New(c.Sim, c.Seed) })
	envelope := executor.Envelope{InputTokens: 4000, OutputTokens: 1000, ModelCalls: 1, WallMS: 1000}
	e.options.Roles = []executor.Role{{ID: "solver", Instruction: "Solve.", Envelope: envelope},
		{ID: "verifier", Instruction: "Check.", Envelope: envelope}}
	e.options.Budget.Tokens = 5000 + 64
	eps, err := runAll(context.Background(), e, jobs, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range eps {
		if ep.Episode.Healthy || !strings.Contains(*ep.Episode.UnhealthyReason, "cannot pay the controller and no agent exists") || len(ep.Decisions) != 0 {
			t.Errorf("episode %s: healthy %v, reason %v, %d decisions", ep.Episode.EpisodeID, ep.Episode.Healthy, ep.Episode.UnhealthyReason, len(ep.Decisions))
		}
	}
}
