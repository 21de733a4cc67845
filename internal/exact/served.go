package exact

import (
	"context"
	"fmt"
	"strings"

	"github.com/evosteer/evosteer-go/internal/executor/scoring"
	"github.com/evosteer/evosteer-go/internal/orchestra"
)

// servedSystemPrompt is the served reference's fixed system message: what a controller model
// reads before the state of an exact-world decision. The wording is ours; its length matters to
// the test suite's fake model, whose logits depend on the position, and this one gives every
// legal action of the default world between 8% and 45% (see served_test.go).
const servedSystemPrompt = "You steer a team of agents on one task. The user message shows the task, the team so far and the legal actions. " +
	"Reply with exactly one action from legal_actions, copied as its JSON object, nothing else."

// WithServedReference returns a copy of w whose reference ρ is a served language model: in every
// state, log ρ(a|s) is the scorer's masked likelihood of action a's canonical JSON (actionTexts)
// after servedSystemPrompt and the state's user message (userMessage), as a served ρ enters a
// decision row (internal/episode's servedReference). The world's states are few, so every one is
// scored here, once: training then costs what it costs with the built-in prior, and P* is computed
// from the same ρ the rows carry.
func (w *World) WithServedReference(ctx context.Context, scorer *scoring.Scorer) (*World, error) {
	out := *w
	out.served = make([][][]float32, w.Tasks())
	for q := range w.Tasks() {
		states := w.states(q)
		out.served[q] = make([][]float32, len(states))
		for _, s := range states {
			actions := w.actionTexts(s)
			scored, err := scorer.Score(ctx, servedSystemPrompt, w.userMessage(s, actions), actions)
			if err != nil {
				return nil, fmt.Errorf("exact world: served reference: task %s, state %d: %w", w.TaskID(q), w.index(s), err)
			}
			logits := make([]float32, len(scored.LogProbs))
			for a, lp := range scored.LogProbs {
				logits[a] = float32(lp)
			}
			out.served[q][w.index(s)] = logits
		}
	}
	return &out, nil
}

// actionTexts renders the legal actions of s, in action-index order, as the product's canonical
// action JSON (orchestra.Action.JSON): the first agent is node n1 of its role, the verifier is
// node n2 of role verifier, a rerun reruns n1.
func (w *World) actionTexts(s state) []string {
	out := make([]string, w.legal(s))
	for a := range out {
		act := orchestra.Action{Kind: orchestra.KindStop}
		switch {
		case s.kind == atStart && a > 0:
			act = orchestra.Action{Kind: orchestra.KindAddAgent, NodeID: "n1", RoleID: roleID(a - 1)}
		case s.kind == afterAgent && a == secondVerify:
			act = orchestra.Action{Kind: orchestra.KindAddAgent, NodeID: "n2", RoleID: "verifier"}
		case s.kind == afterAgent && a == secondRerun:
			act = orchestra.Action{Kind: orchestra.KindRerunAgent, NodeID: "n1"}
		}
		out[a] = act.JSON()
	}
	return out
}

// roleID names role r in the served reference's texts.
func roleID(r int) string { return fmt.Sprintf("r%d", r) }

// userMessage renders state s as the JSON object a controller reads: the task, the team so far
// (the agent with its runs, and the verifier once added) and the legal actions.
func (w *World) userMessage(s state, actions []string) string {
	var team []string
	if s.kind != atStart {
		runs := 1
		if s.kind == afterSecond && s.second == secondRerun {
			runs = 2
		}
		team = append(team, fmt.Sprintf(`{"node_id":"n1","role_id":%q,"runs":%d}`, roleID(s.role), runs))
	}
	if s.kind == afterSecond && s.second == secondVerify {
		team = append(team, `{"node_id":"n2","role_id":"verifier","runs":1}`)
	}
	return fmt.Sprintf(`{"task_id":%q,"team":[%s],"legal_actions":[%s]}`, w.TaskID(s.task), strings.Join(team, ","), strings.Join(actions, ","))
}
