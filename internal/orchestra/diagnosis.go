package orchestra

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/evosteer/evosteer-go/internal/executor"
	"github.com/evosteer/evosteer-go/internal/textrules"
)

// The diagnosis of METHOD.md §2.7 (the release's feature_diagnosis.py): what the controller reads
// about the team before each decision. Like the observations it describes and never prescribes.

// Diagnosis is the reference's diagnosis text for the current decision (METHOD.md §2.7,
// the release's feature_diagnosis.py) without the value-head contribution lines, which need the
// head and belong to the policy stage. value is the value head's estimate now, valueAtStart its
// estimate at the first decision; valueKnown false (no value head) leaves the estimates
// out. The estimate of each decision is remembered so the next one can say how the last
// action moved it (and ControllerPrompt takes the first one as the episode start).
func (r *Runtime) Diagnosis(value, valueAtStart float64, valueKnown bool) string {
	h := len(r.history)
	previous, hasPrevious := r.shownValue[h-1]
	if valueKnown {
		r.shownValue[h] = value
	}
	if h == 0 {
		line := "No node has executed yet."
		if valueKnown {
			line += " Estimated final score " + estimate(value) + " for tasks of this family."
		}
		return line
	}
	var lines []string
	if valueKnown {
		shown, start := rounded(value), rounded(valueAtStart)
		line := fmt.Sprintf("Estimated final score %s (episode start %s; %s since start",
			estimate(value), estimate(valueAtStart), signed(shown-start))
		if hasPrevious {
			line += fmt.Sprintf("; %s after your last action %s", signed(shown-rounded(previous)), r.history[h-1].Action.Kind)
		}
		lines = append(lines, line+").")
	}
	f := r.diagnosisFacts()
	lines = append(lines, f.teamLine())
	return strings.Join(append(lines, f.nodesLines()...), "\n")
}

func estimate(v float64) string { return fmt.Sprintf("%.2f", v) }

// rounded is the estimate as shown (two decimals), so deltas agree with the printed values.
func rounded(v float64) float64 {
	x, _ := strconv.ParseFloat(estimate(v), 64)
	return x
}

// signed is "+0.05" / "-0.12", and "+0.00" for anything that rounds to zero.
func signed(v float64) string {
	s := fmt.Sprintf("%+.2f", v)
	if s == "-0.00" {
		return "+0.00"
	}
	return s
}

// No-answer kinds: outputs that pass the answer test but state no real answer.
const (
	kindRefusal     = "refusal"
	kindPlaceholder = "placeholder"
	kindPlan        = "plan"
)

var noAnswerNotes = map[string]string{
	kindRefusal:     "states no answer (it says the information was not found)",
	kindPlaceholder: "states no answer (a placeholder)",
	kindPlan:        "states no answer (a plan)",
}

const refusalSources = `(?:search(?:\s+results?)?|results?|passages?|facts|context|sources?|documents?|texts?|information|data|evidence|articles?|snippets?)`

var (
	refusalRe = regexp.MustCompile(`(?i)` + strings.Join([]string{
		`\b` + refusalSources + `\s+(?:do|does|did)\s+not\s+(?:explicitly\s+|directly\s+|specifically\s+|clearly\s+)?(?:contain|state|mention|provide|specify|identify|include|give|list|say|name)\b`,
		`\b(?:cannot|can't|can\s+not|could\s+not|couldn't)\s+be\s+(?:determined|found|identified)\b`,
		`\bunable\s+to\s+(?:determine|find|identify)\b`,
		`\bnot\s+(?:available|found|mentioned|provided|specified|stated)(?:\s*$|\s+(?:in|from|within|among)\b[^.;]*?\b` + refusalSources + `\b)`,
		`\bno\s+information\b`,
		`^unknown(?:\s+(?:based\s+on|from|given|according\s+to|in)\b.*)?$`,
	}, "|"))
	hedgedRe         = regexp.MustCompile(`(?i)\b(?:approximately|roughly|though|although|however|likely|probably|possibly|perhaps|presumably|estimated?|notable|best\s+guess)\b|\*\*`)
	placeholderBoxRe = regexp.MustCompile(`(?i)^(?:(?:your|final|short)\s+)?(?:plan(?:\s+(?:complete|completed|provided|formulated))?|answer|final|result|\?+|\.{3}|…)?$`)
	placeholderCueRe = regexp.MustCompile(`(?i)^[<\[({]*\s*(?:(?:your|final|short)\s+)?(?:answer|\?+|\.{3}|…)\s*[>\])}]*$`)
	numberCueRe      = regexp.MustCompile(`^[\s$*(\\\[]*-?\d`)
	planItemRe       = regexp.MustCompile(`^\s*\d{1,2}[.)]\s+(?:\*\*)?([A-Za-z]+)`)
	boxCommandRe     = regexp.MustCompile(`\\(?:text|textbf|mathrm|mbox)\s*\{([^{}]*)\}`)
)

var planVerbs = map[string]bool{}

func init() {
	for _, v := range strings.Fields("identify search locate find determine verify confirm compare extract " +
		"formulate provide output write summarize recall select scan look check retrieve gather list read " +
		"review analyze analyse calculate compute state insert use consult cross-reference") {
		planVerbs[v] = true
	}
}

// noAnswerKind classifies an answering output that is really a placeholder, a refusal or a
// plan ("" otherwise). Code families have no refusals or plans: code is an answer.
func noAnswerKind(output, taskType string) string {
	switch {
	case placeholder(output, taskType):
		return kindPlaceholder
	case taskType == "mbpp_plus":
		return ""
	case refusal(output):
		return kindRefusal
	case planOnly(output):
		return kindPlan
	}
	return ""
}

// refusal: the answer span says the information was not found, without hedging.
func refusal(output string) bool {
	if textrules.HasCodeBlock(output) || textrules.HasFunction(output) {
		return false
	}
	span, ok := textrules.FinalBoxed(output)
	if !ok {
		span, ok = textrules.CuedAnswer(output)
	}
	if !ok {
		span = strings.TrimSpace(output)
		if textrules.RuneLen(span) > 200 {
			return false
		}
	}
	span = textrules.Collapse(strings.TrimRight(strings.Trim(strings.TrimSpace(span), textrules.Quotes), "."))
	loc := refusalRe.FindStringIndex(span)
	if loc == nil {
		return false
	}
	prefix, suffix := span[:loc[0]], span[loc[1]:]
	if strings.Count(prefix, "(") > strings.Count(prefix, ")") {
		return false
	}
	return !hedgedRe.MatchString(prefix) && !hedgedRe.MatchString(suffix)
}

// placeholder: the boxed or cued answer is a template word ("answer", "...", "?"), or, for
// integer answers, a box without a digit.
func placeholder(output, taskType string) bool {
	integer := taskType == "aime_2026"
	boxed, ok := textrules.FinalBoxed(output)
	if !ok {
		cued, ok := textrules.CuedAnswer(output)
		return ok && placeholderCueRe.MatchString(cued)
	}
	content := boxText(boxed)
	if !placeholderBoxRe.MatchString(content) && !(integer && !strings.ContainsFunc(content, unicode.IsDigit)) {
		return false
	}
	cues := textrules.AnswerCueRe.FindAllStringIndex(output, -1)
	if len(cues) > 0 && cues[len(cues)-1][0] > strings.LastIndex(output, textrules.BoxedOpen) {
		if cued, ok := textrules.CuedAnswer(output); ok && !placeholderCueRe.MatchString(cued) {
			return integer && !numberCueRe.MatchString(cued)
		}
	}
	return true
}

func boxText(content string) string {
	content = boxCommandRe.ReplaceAllString(content, "${1}")
	return textrules.Collapse(strings.Trim(strings.ReplaceAll(content, `\ `, " "), "{}$ \\.:"))
}

// planOnly: three or more lines, every one a numbered step starting with a plan verb.
func planOnly(output string) bool {
	if _, ok := textrules.FinalBoxed(output); ok {
		return false
	}
	if _, ok := textrules.CuedAnswer(output); ok || textrules.HasCodeBlock(output) {
		return false
	}
	var lines []string
	for _, l := range textrules.SplitLines(output) {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) < 3 {
		return false
	}
	for _, l := range lines {
		m := planItemRe.FindStringSubmatch(l)
		if m == nil || !planVerbs[textrules.Casefold(m[1])] {
			return false
		}
	}
	return true
}

// facts are what the diagnosis says about the team (feature_diagnosis._Facts).
type facts struct {
	x            [30]float64
	nodes        int
	output       string
	real         int            // answers that are not refusals, placeholders or plans
	excluded     map[string]int // answers excluded by kind
	searchCalls  int
	pythonCalls  int
	toolUsers    int
	checkable    int // real answers with a checkable key
	realFound    int // real answers found in the search results
	realPairs    int
	realAgreeing int
	pending      []Edge
	environment  bool
	envSteps     int
	envCap       int
	nodeRows     []string
	answerGroups [][]string
}

func (r *Runtime) diagnosisFacts() facts {
	f := facts{x: r.features(), nodes: len(r.nodes), output: r.output, excluded: map[string]int{},
		searchCalls: len(r.toolCalls("search")), pythonCalls: len(r.toolCalls("python")),
		pending: r.pendingFeedback(), environment: r.env.Enabled,
		envSteps: r.env.StepsCompleted, envCap: r.env.MaxPhases * r.env.StepsPerPhase}
	for _, n := range r.nodes {
		if n.Result != nil && slices.ContainsFunc(n.Result.Tools, func(c executor.ToolCall) bool { return c.Tool != "environment" }) {
			f.toolUsers++
		}
	}
	var keys []string // the answer keys of the real answers
	for _, n := range r.answerNodes() {
		kind := ""
		if !f.environment {
			kind = n.noAnswer
		}
		if kind == "" {
			keys = append(keys, n.AnswerKey())
		} else {
			f.excluded[kind]++
		}
	}
	f.real = len(keys)
	for i := range keys {
		if textrules.Checkable(keys[i]) {
			f.checkable++
		}
		for j := range i {
			if keys[i] != "" && keys[i] == keys[j] {
				f.realAgreeing++
			}
		}
	}
	f.realPairs = len(keys) * (len(keys) - 1) / 2
	if !f.environment {
		r.describeNodes(&f)
	}
	return f
}

// describeNodes writes one row per node and the answer groups (text families only).
func (r *Runtime) describeNodes(f *facts) {
	text := r.searchText()
	var answering []*Node
	extractedAll := true
	for _, id := range r.nodeIDs() {
		n := r.nodes[id]
		reported := strings.TrimSpace(n.Output) != ""
		if n.Result != nil {
			reported = n.Result.AnswerPresent
		}
		answered := reported && n.hasAnswer
		kind := ""
		if answered {
			kind = n.noAnswer
			answered = kind == ""
		}
		var parts []string
		if nodeFailed(n.Result) {
			parts = append(parts, "its last execution failed or was cut at its output limit")
		}
		switch {
		case kind != "":
			parts = append(parts, noAnswerNotes[kind])
		case answered:
			parts = append(parts, "states an answer")
		default:
			parts = append(parts, "states no answer")
		}
		var calls []executor.ToolCall
		if n.Result != nil {
			calls = n.Result.Tools
		}
		if answered && f.searchCalls > 0 && textrules.Checkable(n.AnswerKey()) {
			switch {
			case textrules.ContainsWord(text, n.AnswerKey()):
				f.realFound++
				parts = append(parts, "its answer appears in the search results")
			case slices.ContainsFunc(calls, func(c executor.ToolCall) bool { return c.Tool == "search" }):
				parts = append(parts, "its answer does not appear in the search results")
			default:
				parts = append(parts, "its latest execution did not search")
			}
		}
		runs, clean := 0, 0
		for _, c := range calls {
			if c.Tool == "python" {
				runs++
				if c.Status == "success" {
					clean++
				}
			}
		}
		if runs > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d python runs exited cleanly", clean, runs))
		}
		label := id + " " + n.Role
		if id == r.output {
			label += " (output node)"
		}
		f.nodeRows = append(f.nodeRows, label+": "+strings.Join(parts, ", "))
		if answered {
			extractedAll = extractedAll && n.marked && textrules.RuneLen(n.AnswerKey()) <= textrules.EvidenceMax
			answering = append(answering, n)
		}
	}
	if extractedAll && len(answering) >= 2 {
		f.answerGroups = answerGroups(answering)
	}
}

func (f facts) teamLine() string {
	output := "no output node selected"
	if f.output != "" {
		output = "output node " + f.output + " selected"
	}
	if f.environment {
		list := []string{plural(f.nodes, "node"), output, f.environmentStatus()}
		if f.x[idxLastExecutionFailed] >= 1 {
			list = append(list, "the last execution failed or was cut at its output limit")
		}
		if f.x[idxEnvironmentCallSucceeded] >= 1 {
			list = append(list, "last environment action succeeded")
		} else if f.x[idxEnvironmentCallFailed] >= 1 {
			list = append(list, "last environment action failed")
		}
		return "Team: " + strings.Join(append(list, f.pendingFacts()...), ", ") + "."
	}
	n, a := f.nodes, f.real
	list := []string{plural(n, "node"), fmt.Sprintf("%d of %d state an answer%s", a, n, f.excludedNote()), output}
	if f.toolUsers > 0 {
		list = append(list, fmt.Sprintf("%d of %d called a tool", f.toolUsers, n))
	}
	if f.searchCalls > 0 && a > 0 && f.checkable > 0 {
		found := f.realFound
		if len(f.excluded) == 0 {
			found = int(math.Round(f.x[idxAnswerSupported] * float64(a)))
		}
		if f.checkable >= a {
			list = append(list, fmt.Sprintf("%d of %d answers appear in the search results", found, a))
		} else {
			list = append(list, fmt.Sprintf("%d of %d answers of %d to %d characters appear in the search results",
				found, f.checkable, textrules.EvidenceMin, textrules.EvidenceMax))
		}
	}
	if f.pythonCalls > 0 {
		list = append(list, fmt.Sprintf("%d of %d python runs in the nodes' latest executions exited cleanly",
			int(math.Round(f.x[idxPythonClean]*float64(f.pythonCalls))), f.pythonCalls))
	}
	if a >= 2 {
		agreement := f.x[idxAnswerAgreement]
		if len(f.excluded) > 0 {
			agreement = ratio(float64(f.realAgreeing), float64(f.realPairs))
		}
		switch {
		case agreement >= 1:
			list = append(list, "answering nodes agree")
		case agreement <= 0:
			list = append(list, "answering nodes disagree")
		default:
			list = append(list, "answering nodes partly agree")
		}
	}
	if f.x[idxLastExecutionFailed] >= 1 {
		list = append(list, "the last execution failed or was cut at its output limit")
	}
	if f.x[idxLastOutputChanged] >= 1 {
		list = append(list, "the last execution changed its node's output")
	}
	return "Team: " + strings.Join(append(list, f.pendingFacts()...), ", ") + "."
}

func (f facts) excludedNote() string {
	var nouns []string
	for _, kind := range []string{kindRefusal, kindPlaceholder, kindPlan} {
		if k := f.excluded[kind]; k > 0 {
			nouns = append(nouns, plural(k, kind))
		}
	}
	if len(nouns) == 0 {
		return ""
	}
	return " (" + strings.Join(nouns, ", ") + ")"
}

func (f facts) environmentStatus() string {
	used := fmt.Sprintf("%d steps used", f.envSteps)
	if f.envCap > 0 {
		used = fmt.Sprintf("%d of %d steps used", f.envSteps, f.envCap)
	}
	switch {
	case f.x[idxEnvironmentTerminal] >= 1 && f.envCap > 0 && f.envSteps >= f.envCap:
		return fmt.Sprintf("the environment ended because all %d steps were used", f.envCap)
	case f.x[idxEnvironmentTerminal] >= 1:
		return "the environment reports the task completed (" + used + ")"
	}
	return "the environment task is not finished yet (" + used + ")"
}

func (f facts) pendingFacts() []string {
	var targets []string
	byTarget := map[string][]string{}
	for _, e := range f.pending {
		if _, ok := byTarget[e.Target]; !ok {
			targets = append(targets, e.Target)
		}
		byTarget[e.Target] = append(byTarget[e.Target], e.Source+"->"+e.Target)
	}
	var out []string
	for _, t := range targets {
		edges := byTarget[t]
		if len(edges) == 1 {
			out = append(out, fmt.Sprintf("feedback edge %s waits for %s's next execution", edges[0], t))
		} else {
			out = append(out, fmt.Sprintf("feedback edges %s wait for %s's next execution", strings.Join(edges, ", "), t))
		}
	}
	return out
}

func (f facts) nodesLines() []string {
	if len(f.nodeRows) == 0 {
		return nil
	}
	lines := []string{"Nodes: " + strings.Join(f.nodeRows, "; ") + "."}
	switch {
	case len(f.answerGroups) == 1:
		lines = append(lines, "Answer groups: all answering nodes give the same answer.")
	case len(f.answerGroups) > 1:
		groups := make([]string, len(f.answerGroups))
		for i, ids := range f.answerGroups {
			groups[i] = strings.Join(ids, ", ")
		}
		lines = append(lines, "Answer groups (nodes giving the same answer): "+strings.Join(groups, " | ")+".")
	}
	return lines
}
