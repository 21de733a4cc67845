package exact

import (
	"fmt"
	"strings"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/orchestra"
)

// systemPrompt is the controller's fixed system message: what a language model reads before the
// state of an exact-world decision, whether it is a served reference (WithServedReference) or the
// policy itself (policy.kind causal_lm, where every row carries it). The wording is ours; its
// length matters to the test suite's fake served model, whose logits depend on the position, and
// this one gives every legal action of the default world between 8% and 45% under it (see
// served_test.go).
const systemPrompt = "You steer a team of agents on one task. The user message shows the task, the team so far and the legal actions. " +
	"Reply with exactly one action from legal_actions, copied as its JSON object, nothing else."

// text is decision s as a language-model policy reads it: systemPrompt, the state's user message
// and its legal actions' texts, in action-index order (the row's legal order).
func (w *World) text(s state) *gpu.PolicyText {
	actions := w.actionTexts(s)
	return &gpu.PolicyText{System: systemPrompt, User: w.userMessage(s, actions), Actions: actions}
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
