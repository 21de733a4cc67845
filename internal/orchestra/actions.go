package orchestra

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/evosteer/evosteer-go/internal/textrules"
)

// Action kinds (METHOD.md §2.1).
const (
	KindAddAgent   = "ADD_AGENT"
	KindAddEdge    = "ADD_EDGE"
	KindBindSkill  = "BIND_SKILL"
	KindSetOutput  = "SET_OUTPUT"
	KindRerunAgent = "RERUN_AGENT"
	KindDropAgent  = "DROP_AGENT"
	KindStop       = "STOP"
)

// Edge protocols: exactly these two.
const (
	ProtocolFeedback = "feedback"
	ProtocolRevise   = "revise"
)

// Action is one atomic edit of the team. An empty field is an absent field: it is omitted
// from the JSON form, never written as null.
type Action struct {
	Kind     string
	NodeID   string
	RoleID   string
	SkillID  string
	SourceID string
	TargetID string
	Protocol string
}

// fieldNames maps JSON keys to the Action fields they fill.
var fieldNames = []string{"node_id", "role_id", "skill_id", "source_id", "target_id", "protocol"}

func (a *Action) field(name string) *string {
	switch name {
	case "node_id":
		return &a.NodeID
	case "role_id":
		return &a.RoleID
	case "skill_id":
		return &a.SkillID
	case "source_id":
		return &a.SourceID
	case "target_id":
		return &a.TargetID
	case "protocol":
		return &a.Protocol
	}
	return nil
}

// required and optional fields per kind (METHOD.md §2.1).
var (
	requiredFields = map[string][]string{
		KindAddAgent:   {"node_id", "role_id"},
		KindAddEdge:    {"source_id", "target_id", "protocol"},
		KindBindSkill:  {"node_id", "skill_id"},
		KindSetOutput:  {"node_id"},
		KindRerunAgent: {"node_id"},
		KindDropAgent:  {"node_id"},
		KindStop:       {},
	}
	optionalFields = map[string][]string{KindAddAgent: {"skill_id"}}
)

// value is the JSON object of the action: kind plus every present field.
func (a Action) value() map[string]any {
	v := map[string]any{"kind": a.Kind}
	for _, name := range fieldNames {
		if s := *a.field(name); s != "" {
			v[name] = s
		}
	}
	return v
}

// JSON is the canonical action text: sorted keys, no whitespace, absent fields omitted,
// strings NFC-normalised. Legal actions are sorted and compared by it.
// It is written directly, keys in their sorted order, because sorting the legal set reads it
// for every action at every decision; TestActionJSONIsCanonical holds it to canonicalJSON.
func (a Action) JSON() string {
	var b strings.Builder
	b.Grow(96)
	b.WriteString(`{"kind":`)
	writeString(&b, a.Kind)
	for _, f := range [...]struct{ key, v string }{{"node_id", a.NodeID}, {"protocol", a.Protocol}, {"role_id", a.RoleID},
		{"skill_id", a.SkillID}, {"source_id", a.SourceID}, {"target_id", a.TargetID}} {
		if f.v != "" {
			b.WriteString(`,"` + f.key + `":`)
			writeString(&b, f.v)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// Validate checks the action's shape (not its legality in a state): a known kind, its
// required fields present and non-blank, no field the kind does not take, a known protocol,
// no self-edge.
func (a Action) Validate() error {
	required, ok := requiredFields[a.Kind]
	if !ok {
		return fmt.Errorf("unknown action kind %q", a.Kind)
	}
	allowed := append(append([]string{}, required...), optionalFields[a.Kind]...)
	for _, name := range fieldNames {
		s := *a.field(name)
		isAllowed := slices.Contains(allowed, name)
		switch {
		case s == "" && slices.Contains(required, name):
			return fmt.Errorf("%s requires %s", a.Kind, name)
		case s != "" && !isAllowed:
			return fmt.Errorf("%s does not take %s", a.Kind, name)
		case s != "" && strings.TrimSpace(s) == "":
			return fmt.Errorf("%s must be non-blank text", name)
		}
	}
	if a.Kind == KindAddEdge {
		if a.Protocol != ProtocolFeedback && a.Protocol != ProtocolRevise {
			return fmt.Errorf("unknown edge protocol %q", a.Protocol)
		}
		if a.SourceID == a.TargetID {
			return errors.New("self-edges are illegal")
		}
	}
	return nil
}

// ParseAction reads an action from its JSON object. It is strict: the text must be one
// object whose values are all strings, with no unknown, duplicate, null or empty field; the
// action must then pass Validate. Strings are NFC-normalised, so a parsed action's JSON is
// canonical even when the input was not.
func ParseAction(s string) (Action, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return Action{}, errors.New("action must be a JSON object")
	}
	var a Action
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Action{}, fmt.Errorf("action JSON: %w", err)
		}
		key := tok.(string) // object keys are always strings
		if seen[key] {
			return Action{}, fmt.Errorf("duplicate action field %q", key)
		}
		seen[key] = true
		if tok, err = dec.Token(); err != nil {
			return Action{}, fmt.Errorf("action JSON: %w", err)
		}
		val, isString := tok.(string)
		if !isString {
			return Action{}, fmt.Errorf("action field %q must be a string, not %v", key, tok)
		}
		if val == "" {
			return Action{}, fmt.Errorf("action field %q is empty; absent fields are omitted", key)
		}
		val = nfc(val)
		if key == "kind" {
			a.Kind = val
			continue
		}
		p := a.field(key)
		if p == nil {
			return Action{}, fmt.Errorf("unknown action field %q", key)
		}
		*p = val
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return Action{}, fmt.Errorf("action JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Action{}, errors.New("trailing data after the action object")
	}
	if !seen["kind"] {
		return Action{}, errors.New("action has no kind")
	}
	return a, a.Validate()
}

// LongestActionTokens is the controller's output reservation for a legal set: the token
// length of its longest action text.
func LongestActionTokens(actions []Action) int64 {
	var longest int64
	for _, a := range actions {
		longest = max(longest, textrules.Tokens(a.JSON()))
	}
	return longest
}
