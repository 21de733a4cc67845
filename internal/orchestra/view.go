package orchestra

import (
	"fmt"
	"strings"
)

// The controller's view of the episode (METHOD.md §2.7): the public state, projected for
// the controller, with the value fields and the legal actions, followed by the diagnosis.

const (
	stateFormat       = "evosteer-graph-runtime@3"
	outputHeadChars   = 1200
	outputTailChars   = 1200
	skillNameChars    = 120
	skillTriggerChars = 240
)

// ControllerPrompt is the controller's user message: the canonical JSON of {task_family,
// execution, reference_value, reference_value_change, legal_actions}, then "\n\nDiagnosis:\n"
// and the diagnosis lines. value is the value head's estimate now and valueChange its change
// since the previous decision (0 on the first). Its token length (Tokens) is what a sampled
// decision is charged. The estimate at the first decision this runtime was shown is the
// diagnosis's episode start.
func (r *Runtime) ControllerPrompt(value, valueChange float64) string {
	return r.controllerPrompt(value, valueChange, true)
}

// ControllerPromptWithoutValue is the controller's message when the value estimate is withheld
// (the value-head ablation): no reference_value fields and no estimate lines in the diagnosis.
func (r *Runtime) ControllerPromptWithoutValue() string {
	return r.controllerPrompt(0, 0, false)
}

func (r *Runtime) controllerPrompt(value, valueChange float64, known bool) string {
	start, ok := r.shownValue[0]
	if !ok {
		start = value
	}
	var legal []any
	for _, a := range r.legal() {
		legal = append(legal, rawJSON(a.JSON()))
	}
	doc := map[string]any{
		"task_family":   r.task.Family,
		"execution":     r.publicState(),
		"legal_actions": legal,
	}
	if known {
		doc["reference_value"], doc["reference_value_change"] = value, valueChange
	}
	return canonicalJSON(doc) + "\n\nDiagnosis:\n" + r.Diagnosis(value, start, known)
}

// publicState is the reference's public_state after controller_projection: operational ids
// and prompts are left out and each live output is shown once, cut to its head and tail.
func (r *Runtime) publicState() map[string]any {
	var nodes, edges, menu []any
	for _, id := range r.nodeIDs() {
		n := r.nodes[id]
		// A node's entry changes only with its output and skills: written again only then.
		if key := fmt.Sprintf("%s|%d|%s", n.Role, n.OutputVersion, strings.Join(n.Skills, ",")); key != n.viewKey || n.view == "" {
			n.view, n.viewKey = rawJSON(canonicalJSON(map[string]any{
				"node_id": n.ID, "role_id": n.Role, "skill_ids": n.Skills,
				"output": elideOutput(n.Output), "output_version": n.OutputVersion,
			})), key
		}
		nodes = append(nodes, n.view)
	}
	for _, e := range r.Edges() {
		edges = append(edges, map[string]any{"source_id": e.Source, "target_id": e.Target, "protocol": e.Protocol})
	}
	if r.staticView == nil {
		var roles []any
		for _, role := range r.roles {
			roles = append(roles, map[string]any{
				"role_id": role.ID, "instruction": role.Instruction, "tools": role.Tools,
				"model_maximum": EnvelopeVector(role.Envelope).value(),
			})
		}
		r.staticView = map[string]rawJSON{"roles": rawJSON(canonicalJSON(roles)), "task_prompt": rawJSON(canonicalJSON(r.task.Prompt)),
			"feature_names": rawJSON(canonicalJSON(FeatureNames[:]))}
	}
	for _, s := range r.menu {
		entry := map[string]any{"skill_id": s.ID, "content_hash": s.ContentHash}
		if name := strings.TrimSpace(s.Name); name != "" {
			entry["name"] = truncateRunes(name, skillNameChars)
		}
		if trigger := strings.TrimSpace(s.Trigger); trigger != "" {
			entry["trigger"] = truncateRunes(trigger, skillTriggerChars)
		}
		menu = append(menu, entry)
	}
	// An event is final once Apply returns, and the prompt is built between actions.
	for i := len(r.historyView); i < len(r.history); i++ {
		ev := r.history[i]
		r.historyView = append(r.historyView, rawJSON(canonicalJSON(map[string]any{
			"sequence": i + 1, "action": rawJSON(ev.Action.JSON()), "observation": ev.Observation,
			"output_changed": ev.OutputChanged,
		})))
	}
	history := make([]any, len(r.historyView))
	for i, v := range r.historyView {
		history[i] = v
	}
	var output, environment any
	if r.output != "" {
		output = r.output
	}
	if r.env.Enabled {
		environment = map[string]any{
			"enabled": true, "steps_completed": r.env.StepsCompleted, "max_phases": r.env.MaxPhases,
			"steps_per_phase": r.env.StepsPerPhase, "phase_index": r.env.PhaseIndex,
			"environment_terminal": r.env.Done,
		}
	}
	features := r.features()
	values := make([]any, len(features))
	for i, v := range features {
		values[i] = v
	}
	state := map[string]any{
		"format":             stateFormat,
		"task_prompt":        r.staticView["task_prompt"],
		"graph":              map[string]any{"nodes": nodes, "edges": edges, "output_node_id": output},
		"roles":              r.staticView["roles"],
		"skill_menu":         menu,
		"history":            history,
		"actions_remaining":  nil,
		"limits":             map[string]any{"max_nodes": nil, "max_actions": nil},
		"environment":        environment,
		"feature_version":    FeatureVersion,
		"feature_names":      r.staticView["feature_names"],
		"execution_features": values,
		"budget_available":   r.ledger.Available().value(),
		"total_token_budget": map[string]any{"cap": r.ledger.TotalTokenCap(), "available": r.ledger.TotalTokensAvailable()},
		"node_usage":         r.nodeUsage.value(),
		"stopped":            r.stopped,
		"poisoned":           r.poisoned,
	}
	if r.finalising {
		state["controller_budget_finalization"] = true
	}
	return state
}

// elideOutput shows an output's first and last 1200 characters around a marker.
func elideOutput(text string) string {
	runes := []rune(text)
	omitted := len(runes) - outputHeadChars - outputTailChars
	if omitted <= 0 {
		return text
	}
	return string(runes[:outputHeadChars]) + fmt.Sprintf("[... %d characters omitted ...]", omitted) +
		string(runes[len(runes)-outputTailChars:])
}

func truncateRunes(s string, n int) string {
	if runes := []rune(s); len(runes) > n {
		return string(runes[:n])
	}
	return s
}
