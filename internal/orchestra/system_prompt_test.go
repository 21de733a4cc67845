package orchestra

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/evosteer/evosteer-go/internal/textrules"
)

// systemPromptGolden pins ControllerSystemPrompt to its ID: a run records the ID, not the
// text, so an edited text under an old ID would make recorded prompts lie. When the text
// changes, bump ControllerSystemPromptID and put the new ID and hash here.
var systemPromptGolden = struct{ id, sha256 string }{
	id:     "evosteer-go-controller@1",
	sha256: "6ac535246463646c2d41efe880c45d6d67591599c1d6454d5b46ed149cef389c",
}

func TestControllerSystemPromptGolden(t *testing.T) {
	sum := sha256.Sum256([]byte(ControllerSystemPrompt))
	got := hex.EncodeToString(sum[:])
	switch {
	case got != systemPromptGolden.sha256 && ControllerSystemPromptID == systemPromptGolden.id:
		t.Errorf("ControllerSystemPrompt changed (sha256 %s) but ControllerSystemPromptID is still %q: "+
			"bump the ID, then set systemPromptGolden to the new ID and this hash", got, ControllerSystemPromptID)
	case got != systemPromptGolden.sha256 || ControllerSystemPromptID != systemPromptGolden.id:
		t.Errorf("systemPromptGolden is {%q, %q}; set it to {%q, %q}",
			systemPromptGolden.id, systemPromptGolden.sha256, ControllerSystemPromptID, got)
	}
}

// TestControllerSystemPromptText: the text goes into a chat template verbatim, so it must be
// clean text: valid UTF-8, no control characters but newlines, no stray whitespace.
func TestControllerSystemPromptText(t *testing.T) {
	p := ControllerSystemPrompt
	if !utf8.ValidString(p) {
		t.Fatal("not valid UTF-8")
	}
	for i, c := range p {
		if c != '\n' && (unicode.IsControl(c) || c == utf8.RuneError) {
			t.Errorf("control character %U at byte %d", c, i)
		}
	}
	if strings.TrimSpace(p) != p || strings.Contains(p, "\n\n\n") {
		t.Error("leading or trailing whitespace, or more than one blank line in a row")
	}
	for i, line := range strings.Split(p, "\n") {
		if strings.TrimRight(line, " ") != line || strings.Contains(line, "  ") {
			t.Errorf("line %d has trailing or doubled spaces: %q", i+1, line)
		}
	}
	if strings.Count(p, "`")%2 != 0 {
		t.Error("unbalanced backquotes")
	}
}

// TestControllerSystemPromptEndsWithReplyRule: the last thing the model reads before the
// state is the output contract, which ParseAction and the legal set enforce.
func TestControllerSystemPromptEndsWithReplyRule(t *testing.T) {
	paragraphs := strings.Split(ControllerSystemPrompt, "\n\n")
	last := paragraphs[len(paragraphs)-1]
	for _, want := range []string{"Reply with exactly one action from `legal_actions`", "its JSON object, exactly as listed", "nothing else"} {
		if !strings.Contains(last, want) {
			t.Errorf("last paragraph %q lacks %q", last, want)
		}
	}
}

// TestControllerSystemPromptDescribesEveryAction: each action kind the runtime knows has its
// own bullet naming every field its JSON object takes, and both edge protocols are explained.
func TestControllerSystemPromptDescribesEveryAction(t *testing.T) {
	p := ControllerSystemPrompt
	if len(requiredFields) != 7 {
		t.Fatalf("%d action kinds; describe the new ones in ControllerSystemPrompt", len(requiredFields))
	}
	for kind, required := range requiredFields {
		start := strings.Index(p, "\n- `"+kind+"`")
		if start < 0 {
			t.Errorf("no bullet for %s", kind)
			continue
		}
		bullet, _, _ := strings.Cut(p[start+1:], "\n")
		for _, f := range required {
			if !strings.Contains(bullet, "`"+f+"`") {
				t.Errorf("%s bullet does not name its field %s", kind, f)
			}
		}
		for _, f := range optionalFields[kind] {
			if !strings.Contains(bullet, "optional `"+f+"`") {
				t.Errorf("%s bullet does not name its optional field %s", kind, f)
			}
		}
	}
	for _, protocol := range []string{ProtocolFeedback, ProtocolRevise} {
		if !strings.Contains(p, "protocol `"+protocol+"`") {
			t.Errorf("edge protocol %s not explained", protocol)
		}
	}
}

// renderedControllerPrompts are user messages of a team with nodes, skills, both edge
// protocols, history and an output node: one with the value shown, one in budget
// finalisation, one with the value withheld.
func renderedControllerPrompts(t *testing.T) []string {
	t.Helper()
	r := newTestRuntime(qaTask, newFake(), defaultOptions())
	mustApply(t, r, addAgent("n0", "solver", ""))
	mustApply(t, r, addAgent("n1", "verifier", "s1"))
	mustApply(t, r, addEdge("n0", "n1", ProtocolRevise))
	mustApply(t, r, addEdge("n1", "n0", ProtocolFeedback))
	mustApply(t, r, bind("n0", "s2"))
	mustApply(t, r, onNode(KindSetOutput, "n0"))
	shown := r.ControllerPrompt(0.5, 0.1)
	withheld := r.ControllerPromptWithoutValue()
	if r.ControllerReservation(textrules.Tokens(shown), 1_000_000) {
		t.Fatal("an impossible controller reservation fitted")
	}
	return []string{shown, r.ControllerPrompt(0.5, 0), withheld}
}

// parseControllerDoc is the JSON part of a user message.
func parseControllerDoc(t *testing.T, prompt string) map[string]any {
	t.Helper()
	body, _, ok := strings.Cut(prompt, "\n\nDiagnosis:\n")
	if !ok {
		t.Fatal("no diagnosis separator")
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// resolves reports whether the key path leads somewhere from v, looking through arrays.
func resolves(v any, path []string) bool {
	if len(path) == 0 {
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		child, ok := x[path[0]]
		return ok && resolves(child, path[1:])
	case []any:
		return slices.ContainsFunc(x, func(item any) bool { return resolves(item, path) })
	}
	return false
}

// resolvesAnywhere reports whether the path leads somewhere from any object within v.
func resolvesAnywhere(v any, path []string) bool {
	if resolves(v, path) {
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		for _, child := range x {
			if resolvesAnywhere(child, path) {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(x, func(item any) bool { return resolvesAnywhere(item, path) })
	}
	return false
}

var backquoted = regexp.MustCompile("`([^`]*)`")

// TestControllerSystemPromptNamesExist: every backquoted name in the prompt is an action
// kind, an edge protocol, or a key (or dotted key path) of a rendered user message, so the
// prompt never points the model at a field this runtime does not render. And the reverse:
// every top-level field and every field of execution is explained, so a field added to the
// view fails here until the prompt says what it is.
func TestControllerSystemPromptNamesExist(t *testing.T) {
	var docs []any
	for _, prompt := range renderedControllerPrompts(t) {
		docs = append(docs, parseControllerDoc(t, prompt))
	}
	names := map[string]bool{}
	for _, m := range backquoted.FindAllStringSubmatch(ControllerSystemPrompt, -1) {
		name := m[1]
		names[name] = true
		if _, ok := requiredFields[name]; ok || name == ProtocolFeedback || name == ProtocolRevise {
			continue
		}
		path := strings.Split(name, ".")
		if !slices.ContainsFunc(docs, func(doc any) bool { return resolvesAnywhere(doc, path) }) {
			t.Errorf("the prompt names `%s`, which no rendered controller prompt holds", name)
		}
	}
	for _, doc := range docs {
		top := doc.(map[string]any)
		for key := range top {
			if !names[key] {
				t.Errorf("the user message's field %s is not explained", key)
			}
		}
		for key := range top["execution"].(map[string]any) {
			if !names[key] && !slices.ContainsFunc(slices.Collect(maps.Keys(names)), func(n string) bool { return strings.HasPrefix(n, key+".") }) {
				t.Errorf("execution field %s is not explained", key)
			}
		}
	}
	for _, key := range []string{"nodes", "edges", "output_node_id"} {
		if !names["graph."+key] {
			t.Errorf("graph.%s is not explained", key)
		}
	}
	// The rendered fixtures must hold what the check relies on.
	if _, ok := docs[1].(map[string]any)["execution"].(map[string]any)["controller_budget_finalization"]; !ok {
		t.Fatal("fixture: the finalisation prompt lacks controller_budget_finalization")
	}
	if _, ok := docs[2].(map[string]any)["reference_value"]; ok {
		t.Fatal("fixture: the withheld prompt shows reference_value")
	}
}

// TestControllerSystemPromptFitsWindow: the system message shares the controller's window
// with the user message and the action; it must leave most of the window to the state.
func TestControllerSystemPromptFitsWindow(t *testing.T) {
	if n := textrules.Tokens(ControllerSystemPrompt); n > controllerWindow/8 {
		t.Errorf("the system prompt is about %d tokens, more than 1/8 of the %d-token window", n, controllerWindow)
	}
}
