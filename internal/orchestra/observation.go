package orchestra

import (
	"fmt"
	"slices"
	"strings"

	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/textrules"
)

// Observations and the diagnosis describe the team and never prescribe an action: they
// say what executed, what the outputs state and where they agree, and leave the choice to
// the policy (METHOD.md §2.7).

// observe is the feedback text of an applied action: what happened, then the team.
func (r *Runtime) observe(ev Event) string {
	a := ev.Action
	var what string
	switch a.Kind {
	case KindAddAgent:
		what = "Added " + r.label(a.NodeID)
		if !r.opt.Interleaved {
			what += "; it executes at STOP."
		} else {
			what += " and executed it" + describeExecution(ev.Executions[0])
		}
	case KindAddEdge:
		what = fmt.Sprintf("Added %s edge %s->%s", a.Protocol, a.SourceID, a.TargetID)
		switch {
		case !r.opt.Interleaved:
			what += "; it takes effect at STOP, where the nodes execute in id order."
		case a.Protocol == ProtocolRevise:
			what += " and re-executed " + a.TargetID + describeExecution(ev.Executions[0])
		default:
			what += fmt.Sprintf("; %s receives %s's output (version %d) at its next execution.",
				a.TargetID, a.SourceID, ev.Message.SourceOutputVersion)
		}
	case KindRerunAgent:
		what = "Re-executed " + a.NodeID + describeExecution(ev.Executions[0])
	case KindBindSkill:
		what = "Bound skill " + a.SkillID + " to " + a.NodeID
		if r.opt.Interleaved {
			what += " and re-executed it" + describeExecution(ev.Executions[0])
		} else {
			what += "; it executes at STOP."
		}
	case KindSetOutput:
		what = "Set the output node to " + r.label(a.NodeID) + "."
	case KindDropAgent:
		what = "Dropped " + a.NodeID + " and every edge into or out of it."
	case KindStop:
		var runs []string
		for _, rec := range ev.Executions {
			runs = append(runs, "Executed "+rec.NodeID+describeExecution(rec))
		}
		if len(ev.skipped) > 0 {
			runs = append(runs, "Not executed, for lack of budget: "+strings.Join(ev.skipped, ", ")+".")
		}
		what = strings.Join(append(runs, "Stopped: the output of "+r.output+" was submitted for grading."), " ")
	}
	return what + " " + r.teamSummary()
}

// label is "n0 (solver)", "n0 (solver, skill a)" or "n0 (solver, skills a, b)".
func (r *Runtime) label(id string) string {
	n := r.nodes[id]
	if len(n.Skills) == 0 {
		return fmt.Sprintf("%s (%s)", id, n.Role)
	}
	noun := "skills"
	if len(n.Skills) == 1 {
		noun = "skill"
	}
	return fmt.Sprintf("%s (%s, %s %s)", id, n.Role, noun, strings.Join(n.Skills, ", "))
}

// describeExecution is " with 2 inputs and its previous output: its output states an answer; ...".
func describeExecution(rec ExecutionRecord) string {
	var with []string
	if k := len(rec.Messages); k > 0 {
		with = append(with, plural(k, "input"))
	}
	if rec.PrevOutput != nil {
		with = append(with, "its previous output")
	}
	s := ""
	if len(with) > 0 {
		s = " with " + strings.Join(with, " and ")
	}
	res := rec.Result
	var facts []string
	if nodeFailed(&res) {
		failure := "its execution failed"
		if res.FailureKind != "" {
			failure += " (" + res.FailureKind + ")"
		}
		facts = append(facts, failure)
	}
	if res.AnswerPresent && textrules.AnswerPresent(res.Output) {
		facts = append(facts, "its output states an answer")
	} else {
		facts = append(facts, "its output states no answer")
	}
	if rec.PrevOutput != nil {
		if *rec.PrevOutput != res.Output {
			facts = append(facts, "its output changed")
		} else {
			facts = append(facts, "its output is unchanged")
		}
	}
	if len(res.Tools) > 0 {
		facts = append(facts, describeToolCalls(res.Tools))
	}
	return s + ": " + strings.Join(facts, "; ") + "."
}

// describeToolCalls counts calls per tool and status: "2 python calls (1 success, 1 failed)".
func describeToolCalls(calls []executor.ToolCall) string {
	var tools []string
	statuses := map[string][]string{}
	counts := map[[2]string]int{}
	for _, c := range calls {
		if _, ok := statuses[c.Tool]; !ok {
			tools = append(tools, c.Tool)
		}
		if counts[[2]string{c.Tool, c.Status}] == 0 {
			statuses[c.Tool] = append(statuses[c.Tool], c.Status)
		}
		counts[[2]string{c.Tool, c.Status}]++
	}
	var parts []string
	for _, tool := range tools {
		var byStatus []string
		total := 0
		for _, st := range statuses[tool] {
			k := counts[[2]string{tool, st}]
			total += k
			byStatus = append(byStatus, fmt.Sprintf("%d %s", k, st))
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", plural(total, tool+" call"), strings.Join(byStatus, ", ")))
	}
	return "tool calls: " + strings.Join(parts, ", ")
}

// teamSummary is "Team: 3 nodes; 2 of 3 state an answer; answer groups: n0, n2 (2) | n1 (1);
// output node n0; pending feedback edges: n0->n1."
func (r *Runtime) teamSummary() string {
	if len(r.nodes) == 0 {
		return "Team: no nodes."
	}
	answers := r.answerNodes()
	facts := []string{plural(len(r.nodes), "node"), fmt.Sprintf("%d of %d state an answer", len(answers), len(r.nodes))}
	if len(answers) > 0 {
		var groups []string
		for _, ids := range answerGroups(answers) {
			groups = append(groups, fmt.Sprintf("%s (%d)", strings.Join(ids, ", "), len(ids)))
		}
		facts = append(facts, "answer groups: "+strings.Join(groups, " | "))
	}
	if r.output != "" {
		facts = append(facts, "output node "+r.output)
	} else {
		facts = append(facts, "no output node")
	}
	if pending := r.pendingFeedback(); len(pending) > 0 {
		var edges []string
		for _, e := range pending {
			edges = append(edges, e.Source+"->"+e.Target)
		}
		facts = append(facts, "pending feedback edges: "+strings.Join(edges, ", "))
	}
	return "Team: " + strings.Join(facts, "; ") + "."
}

// answerGroups groups answering nodes by normalised answer, groups in first-seen order.
func answerGroups(nodes []*Node) [][]string {
	var keys []string
	groups := map[string][]string{}
	for _, n := range nodes {
		k := n.AnswerKey()
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], n.ID)
	}
	out := make([][]string, len(keys))
	for i, k := range keys {
		out[i] = groups[k]
	}
	return out
}

// pendingFeedback are the feedback edges whose target has not executed since the edge was
// added, so the target has not yet seen the source's output.
func (r *Runtime) pendingFeedback() []Edge {
	var pending []Edge
	for _, e := range r.Edges() {
		if e.Protocol != ProtocolFeedback {
			continue
		}
		added := -1
		for i, ev := range r.history {
			a := ev.Action
			if a.Kind == KindAddEdge && a.Protocol == ProtocolFeedback && a.SourceID == e.Source && a.TargetID == e.Target {
				added = i
			}
		}
		if added < 0 {
			continue
		}
		executed := slices.ContainsFunc(r.history[added+1:], func(ev Event) bool {
			return slices.ContainsFunc(ev.Executions, func(rec ExecutionRecord) bool { return rec.NodeID == e.Target })
		})
		if !executed {
			pending = append(pending, e)
		}
	}
	return pending
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
