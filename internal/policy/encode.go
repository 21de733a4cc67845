package policy

import (
	"slices"

	"github.com/evosteer/evosteer-go/internal/orchestra"
)

// ActionWidth is the width of one legal action's descriptor:
//
//	[0,7)   kind one-hot (Kinds)
//	[7,13)  role one-hot (Roles): the new agent's role, or the target node's
//	[13,16) skill: present, candidate, validated
//	[16,18) protocol: feedback, revise
//	[18,23) target node: states an answer, failed, is the output, executions/(executions+1),
//	        answer in the largest agreeing group
//	[23,27) source node (edges): states an answer, failed, is the output, in the largest group
//	[27]    target is the newest node
const ActionWidth = 28

// StateWidth is the width of the state vector for a number of task types:
//
//	[0,30)      the 30 execution features f(s)
//	[30,30+T)   task-type one-hot
//	then        value, value change; budget available (tokens, tool calls, wall time);
//	            menu (size/(size+1), candidates/(n+1), validated/(n+1)); output states an
//	            answer; answers disagree; largest group share; finalising
//	then        the team: live nodes of each role (Roles), n/(n+1); the output node's role
//	            one-hot (all zero when no output is set)
//
// The team part stands in for what the paper's h_ρ(s) reads from the serialised team: without
// it the state of a one-solver team and of a one-researcher team differ only through their
// execution traces, and b_ψ cannot learn the flow of a structure (docs/METHOD.md §3.5).
func StateWidth(taskTypes int) int { return 30 + taskTypes + 2 + 3 + 3 + 4 + 2*len(Roles) }

// Encode returns the exact network inputs of a decision: the state vector and the legal
// actions' descriptors, flattened row by row (len(Legal) x ActionWidth).
func Encode(d *Decision) (state, actions []float32) {
	f := newFacts(d.RT)
	return encodeState(d, f), encodeActions(d, f)
}

func encodeState(d *Decision, f *facts) []float32 {
	rt := d.RT
	s := make([]float32, 0, StateWidth(len(d.Families)))
	feat := rt.Features()
	s = append(s, feat[:]...)
	s = append(s, orchestra.TaskTypeOneHot(d.Families, rt.TaskType())...)
	s = append(s, float32(d.Value), float32(d.ValueChange))
	avail, caps := rt.Ledger().Available(), rt.Ledger().Cap()
	s = append(s, frac(rt.Ledger().TotalTokensAvailable(), rt.Ledger().TotalTokenCap()),
		frac(avail.ToolCalls, caps.ToolCalls), frac(avail.WallMS, caps.WallMS))
	menu := float32(len(f.menuStatus))
	s = append(s, menu/(menu+1), float32(f.candidates)/(menu+1), float32(f.validated)/(menu+1))
	share := float32(0)
	if len(f.answer) > 0 {
		share = float32(f.largest) / float32(len(f.answer))
	}
	s = append(s, b2f(f.answered(f.output)), b2f(f.disagree()), share, b2f(rt.Finalising()))
	team := make([]float32, len(Roles))
	for _, n := range f.nodes {
		if i := slices.Index(Roles, n.Role); i >= 0 {
			team[i]++
		}
	}
	for i, n := range team {
		team[i] = n / (n + 1)
	}
	s = append(s, team...)
	output := make([]float32, len(Roles))
	if f.output != "" {
		onehot(output, Roles, f.nodes[f.output].Role)
	}
	return append(s, output...)
}

func frac(a, b int64) float32 {
	if b <= 0 {
		return 0
	}
	return float32(max(0, min(1, float64(a)/float64(b))))
}

func encodeActions(d *Decision, f *facts) []float32 {
	out := make([]float32, len(d.Legal)*ActionWidth)
	for i, a := range d.Legal {
		v := out[i*ActionWidth : (i+1)*ActionWidth]
		onehot(v[0:7], Kinds, a.Kind)
		onehot(v[7:13], Roles, f.role(a))
		if a.SkillID != "" {
			v[13] = 1
			v[14] = b2f(f.menuStatus[a.SkillID] == "candidate")
			v[15] = b2f(f.menuStatus[a.SkillID] == "validated")
		}
		v[16] = b2f(a.Protocol == "feedback")
		v[17] = b2f(a.Protocol == "revise")
		if t := target(a); t != "" {
			n := f.nodes[t]
			v[18] = b2f(f.answered(t))
			v[19] = b2f(f.failed(t))
			v[20] = b2f(t == f.output)
			v[21] = float32(n.OutputVersion) / float32(n.OutputVersion+1)
			v[22] = b2f(f.inLargestGroup(t))
			v[27] = b2f(t == f.newest)
		}
		if a.Kind == orchestra.KindAddEdge {
			v[23] = b2f(f.answered(a.SourceID))
			v[24] = b2f(f.failed(a.SourceID))
			v[25] = b2f(a.SourceID == f.output)
			v[26] = b2f(f.inLargestGroup(a.SourceID))
		}
	}
	return out
}

// Pad lays a decision's descriptors out on the network's fixed K-row legal-action axis
// (policy.max_legal_actions) with a mask of the real rows, so every batch has one shape; ok is
// false when the legal set is larger than K.
func Pad(actions []float32, k int) (padded []float32, mask []bool, ok bool) {
	n := len(actions) / ActionWidth
	if n > k {
		return nil, nil, false
	}
	padded = make([]float32, k*ActionWidth)
	copy(padded, actions)
	mask = make([]bool, k)
	for i := range n {
		mask[i] = true
	}
	return padded, mask, true
}
