package orchestra

import (
	"slices"

	"github.com/evosteer/evosteer-go/internal/executor"
)

// answerForm is the shared clause telling an answering role which final form to use.
const answerForm = "in exactly the form the task requests: for a coding task, the complete " +
	"function in a python code block (keep the task's function name; no 'Answer:' line); for a " +
	"math problem, the final answer in the requested format; for a short-answer question, a last " +
	"line 'Answer: <answer>'."

// defaultEnvelope is the envelope of an answering role without tools (METHOD.md §2.4).
var defaultEnvelope = executor.Envelope{InputTokens: 20480, OutputTokens: 12288, ModelCalls: 1, WallMS: 360000}

// baseRoles are the six roles of the reference configuration, in declared order: roles[0]
// (solver) is the forced first role of paired trials, so the order is part of the contract.
var baseRoles = []executor.Role{
	{
		ID: "solver",
		Instruction: "Solve the task. Give the final answer " + answerForm +
			" If you are running long, stop exploring and give your best current answer in the " +
			"requested form immediately.",
		Envelope: defaultEnvelope,
	},
	{
		ID: "verifier",
		Instruction: "Check the inputs from other agents against the task and point out any error. " +
			"If you have no inputs, list what a correct answer to the task must satisfy. Then end " +
			"with the complete final result, corrected where you found an error, " + answerForm,
		Tools:    []string{"python"},
		Envelope: defaultEnvelope,
	},
	{
		ID:          "planner",
		Instruction: "Write a short step-by-step plan for the task. Do not solve it.",
		Envelope:    executor.Envelope{InputTokens: 20480, OutputTokens: 2048, ModelCalls: 1, WallMS: 60000},
		NonOutput:   true,
	},
	{
		ID: "researcher",
		Instruction: "List the facts from the task and from any inputs from other agents that are " +
			"needed to answer it, each with where it comes from. End with a last line " +
			"'Answer: <answer>' that gives the answer those facts support, in exactly the form the " +
			"task requests.",
		Tools:    []string{"search"},
		Envelope: defaultEnvelope,
	},
	{
		ID: "finalizer",
		Instruction: "Give the final answer to the task, using the inputs from other agents if you " +
			"have any, " + answerForm,
		Envelope: defaultEnvelope,
	},
	{
		ID: "tool_user",
		Instruction: "Work in two steps, using only the tool(s) listed below. Step 1: your first " +
			"reply is only a tool call written with its tags: <search>short query</search> to look " +
			"up a fact the task depends on, or <python>code</python> to calculate, or to run your " +
			"solution code on the example test of a coding task. Step 2: after the result, reply " +
			"with only the final result, in exactly the form the task requests: just the answer for " +
			"a short-answer question; for a coding task, the complete function code in a python " +
			"code block (the code itself, not its output), keeping the task's function name; for a " +
			"math problem, the final answer in the requested format. No explanation.",
		Tools:    []string{"python", "search"},
		Envelope: defaultEnvelope,
	},
}

// toolOnlyRoles are dropped in a family that offers none of their tools.
var toolOnlyRoles = []string{"tool_user"}

// familyTools are the tools each task type offers (text_tools.family_tools).
var familyTools = map[string][]string{
	"aime_2026": {"python"},
	"hotpotqa":  {"search"},
	"medqa":     {"search"},
	"nq_open":   {"search"},
	"mbpp_plus": {"python"},
}

// toolEnvelopes replace a role's envelope when it keeps at least one tool
// (text_tools.role_maximum): several model turns with tool calls between them.
var toolEnvelopes = map[string]executor.Envelope{
	"researcher": {InputTokens: 20480, OutputTokens: 12288, ModelCalls: 4, ToolCalls: 3, WallMS: 360000},
	"tool_user":  {InputTokens: 24576, OutputTokens: 12288, ModelCalls: 5, ToolCalls: 4, WallMS: 360000},
	"verifier":   {InputTokens: 24576, OutputTokens: 12288, ModelCalls: 4, ToolCalls: 3, WallMS: 360000},
}

// toolSentences are appended to a role's instruction for each tool it keeps
// (text_tools.role_tool_instructions).
var toolSentences = map[string]map[string]string{
	"researcher": {"search": "You have a search tool: first reply with only <search>short query</search> " +
		"to look up a fact the task depends on; you may search again after each result."},
	"verifier": {"python": "You have a python tool: your first reply may be only <python> followed by a " +
		"self-contained program and </python>, to recompute a result or to define the function and " +
		"run the task's example test; the result comes back before your final reply."},
}

// familyInstructions replace a tool role's whole instruction in one task type
// (text_tools.family_role_instructions).
var familyInstructions = map[string]map[string]string{
	"mbpp_plus": {"tool_user": "Work in two steps, using only the tool listed below. Step 1: your " +
		"first reply is only a tool call written with its tags: <python>code</python> to run your " +
		"solution code on the example test of the coding task; nothing else is defined when it runs, " +
		"so the program must hold the complete function followed by the example test. Step 2: after " +
		"the result, reply with only the final result, in exactly the form the task requests: the " +
		"complete function code in a python code block (the code itself, not its output), keeping " +
		"the task's function name. No explanation."},
}

// environmentEnvelope is the envelope of every role in the ALFWorld task type
// (family_role_maximum): one node plays up to 25 environment steps.
var environmentEnvelope = executor.Envelope{InputTokens: 30000, OutputTokens: 5600, ModelCalls: 35, ToolCalls: 25, WallMS: 240000}

// environmentTaskTypes take the environment envelope and lose every tool.
var environmentTaskTypes = []string{"alfworld"}

// RolesFor adapts the six roles to a family (METHOD.md §2.4; the release's roles_for). The
// adaptation is keyed by the task type, so an OOD family gets the rules of the IID type it maps to
// (webshop → alfworld, math_hard → aime_2026); an empty taskType means family is IID.
func RolesFor(family, taskType string) []executor.Role {
	if taskType == "" {
		taskType = family
	}
	var roles []executor.Role
	if slices.Contains(environmentTaskTypes, taskType) {
		for _, base := range baseRoles {
			if slices.Contains(toolOnlyRoles, base.ID) {
				continue
			}
			role := base
			role.Tools = []string{}
			role.Envelope = environmentEnvelope
			roles = append(roles, role)
		}
		return roles
	}
	offered := familyTools[taskType]
	for _, base := range baseRoles {
		role := base
		role.Tools = []string{}
		for _, tool := range base.Tools {
			if slices.Contains(offered, tool) {
				role.Tools = append(role.Tools, tool)
			}
		}
		if len(role.Tools) == 0 {
			if slices.Contains(toolOnlyRoles, base.ID) {
				continue
			}
			roles = append(roles, role)
			continue
		}
		if env, ok := toolEnvelopes[role.ID]; ok {
			role.Envelope = env
		}
		if text, ok := familyInstructions[taskType][role.ID]; ok {
			role.Instruction = text
		} else {
			for _, tool := range role.Tools {
				if sentence, ok := toolSentences[role.ID][tool]; ok {
					role.Instruction += " " + sentence
				}
			}
		}
		roles = append(roles, role)
	}
	return roles
}
