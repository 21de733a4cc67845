package orchestra

import (
	"fmt"
	"strings"

	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/textrules"
)

// Prompt layout and fitting of the reference's plain executor (METHOD.md §2.5). The runtime
// assembles the prompt so that every backend sees the same text and the executions table
// logs exactly what was sent; a tool-running backend inserts its tool block before the
// closing sentence itself.

const (
	// executorContext is the executor model's context window (EVOSTEER_EXECUTOR_CONTEXT).
	executorContext = 32768
	// fitFloorChars: inputs at or below this many characters are never cut.
	fitFloorChars = 800
)

// RenderSkill renders a skill record as the procedure text an executor sees when the skill
// is bound (METHOD.md §2.5): Name, Purpose, Use when, numbered Steps, bulleted Pitfalls and
// Constraint lines; empty parts are left out. Callers fill MenuSkill.Text with it.
func RenderSkill(name, description, trigger string, plan, pitfalls, constraint []string) string {
	var lines []string
	for _, f := range []struct{ label, text string }{{"Name", name}, {"Purpose", description}, {"Use when", trigger}} {
		if f.text != "" {
			lines = append(lines, f.label+": "+f.text)
		}
	}
	list := func(label string, items []string, numbered bool) {
		if len(items) == 0 {
			return
		}
		lines = append(lines, label+":")
		for i, item := range items {
			mark := "-"
			if numbered {
				mark = fmt.Sprintf("%d.", i+1)
			}
			lines = append(lines, mark+" "+item)
		}
	}
	list("Steps", plan, true)
	list("Pitfalls to avoid", pitfalls, false)
	list("Constraint", constraint, false)
	return strings.Join(lines, "\n")
}

// renderPrompt joins the prompt parts with blank lines: role, task, procedures, inputs,
// previous output, and the closing sentence naming what the agent was given.
func renderPrompt(role executor.Role, task string, skills []executor.Skill, msgs []executor.Message, prev *string) string {
	parts := []string{"Role: " + role.Instruction, "Task:\n" + task}
	for _, s := range skills {
		parts = append(parts, "Procedure to follow (skill "+s.ID+"):\n"+s.Text)
	}
	for _, m := range msgs {
		parts = append(parts, "Input from agent "+m.SourceID+" ("+m.Protocol+"):\n"+m.Body)
	}
	if prev != nil {
		parts = append(parts, "Your previous output:\n"+*prev)
	}
	inputs := []string{"the task"}
	if len(skills) > 0 {
		inputs = append(inputs, "the procedure")
	}
	if len(msgs) > 0 {
		inputs = append(inputs, "the inputs from other agents")
	}
	if prev != nil {
		inputs = append(inputs, "your previous output")
	}
	listed := inputs[0]
	if n := len(inputs); n > 1 {
		listed = strings.Join(inputs[:n-1], ", ") + " and " + inputs[n-1]
	}
	parts = append(parts, "Perform your role using "+listed+". Return your result.")
	return strings.Join(parts, "\n\n")
}

// fitPrompt renders the prompt and, while it is longer than the role's input limit
// (min(input_tokens, executor window − output_tokens)), cuts the longest message body or
// previous output above the floor to 70% of its length. Ties go to the later message; the
// previous output ranks before every message.
func fitPrompt(role executor.Role, task string, skills []executor.Skill, msgs []executor.Message, prev *string) string {
	budget := min(role.Envelope.InputTokens, executorContext-role.Envelope.OutputTokens)
	originals := map[int][]rune{}
	for i, m := range msgs {
		originals[i] = []rune(m.Body)
	}
	if prev != nil {
		originals[-1] = []rune(*prev)
	}
	keep := map[int]int{}
	for i, text := range originals {
		keep[i] = len(text)
	}
	render := func() string {
		fitted := make([]executor.Message, len(msgs))
		for i, m := range msgs {
			m.Body = elideToFit(originals[i], keep[i])
			fitted[i] = m
		}
		var p *string
		if prev != nil {
			s := elideToFit(originals[-1], keep[-1])
			p = &s
		}
		return renderPrompt(role, task, skills, fitted, p)
	}
	prompt := render()
	for textrules.Tokens(prompt) > budget {
		best, found := 0, false
		for i, kept := range keep {
			if kept > fitFloorChars && (!found || kept > keep[best] || (kept == keep[best] && i > best)) {
				best, found = i, true
			}
		}
		if !found {
			break
		}
		keep[best] = max(fitFloorChars, keep[best]*7/10)
		prompt = render()
	}
	return prompt
}

// elideToFit keeps keep characters of text: 40% from the head and 60% from the tail around
// a marker saying how much was cut.
func elideToFit(text []rune, keep int) string {
	omitted := len(text) - keep
	if omitted <= 0 {
		return string(text)
	}
	head := keep * 2 / 5
	return string(text[:head]) +
		fmt.Sprintf("\n[... %d characters omitted to fit the input limit ...]\n", omitted) +
		string(text[len(text)-(keep-head):])
}
