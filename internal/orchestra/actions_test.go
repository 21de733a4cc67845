package orchestra

import (
	"testing"

	"github.com/evosteer/evosteer-go/internal/textrules"
)

// TestActionJSONIsCanonical: Action.JSON, written directly, is canonicalJSON of the action's value.
func TestActionJSONIsCanonical(t *testing.T) {
	cases := []struct {
		name string
		a    Action
		want string
	}{
		{"stop has only its kind", Action{Kind: KindStop}, `{"kind":"STOP"}`},
		{"add agent with skill, keys sorted", addAgent("n0", "solver", "evosteer-0123456789abcdef0123"),
			`{"kind":"ADD_AGENT","node_id":"n0","role_id":"solver","skill_id":"evosteer-0123456789abcdef0123"}`},
		{"add agent without skill omits skill_id", addAgent("n3", "planner", ""), `{"kind":"ADD_AGENT","node_id":"n3","role_id":"planner"}`},
		{"edge keys sorted", addEdge("n0", "n1", ProtocolRevise), `{"kind":"ADD_EDGE","protocol":"revise","source_id":"n0","target_id":"n1"}`},
		{"no HTML escaping, UTF-8 kept", addAgent("n0", "a<b>&ü", ""), `{"kind":"ADD_AGENT","node_id":"n0","role_id":"a<b>&ü"}`},
		{"NFC normalisation", addAgent("n0", "e\u0301", ""), "{\"kind\":\"ADD_AGENT\",\"node_id\":\"n0\",\"role_id\":\"\u00e9\"}"},
		{"control characters escaped as Python does", addAgent("n0", "a\"\\\n\x01", ""), `{"kind":"ADD_AGENT","node_id":"n0","role_id":"a\"\\\n\u0001"}`},
		{"invalid UTF-8 replaced, tab and DEL", addAgent("n0", "a\xff\tb\x7f", ""), "{\"kind\":\"ADD_AGENT\",\"node_id\":\"n0\",\"role_id\":\"a\ufffd\\tb\x7f\"}"},
	}
	for _, c := range cases {
		if got := c.a.JSON(); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
		if got, want := c.a.JSON(), canonicalJSON(c.a.value()); got != want {
			t.Errorf("%s: JSON %s differs from the canonical form of its value %s", c.name, got, want)
		}
	}
	every := Action{Kind: "K", NodeID: "n", Protocol: "p", RoleID: "r", SkillID: "s", SourceID: "a", TargetID: "b"}
	if got, want := every.JSON(), canonicalJSON(every.value()); got != want {
		t.Errorf("every field: JSON %s differs from the canonical form %s", got, want)
	}
}

func TestParseActionRoundTrip(t *testing.T) {
	sess := newFake()
	r := newTestRuntime(qaTask, sess, defaultOptions())
	mustApply(t, r, addAgent("n0", "solver", "s1"))
	mustApply(t, r, addAgent("n1", "verifier", ""))
	mustApply(t, r, onNode(KindSetOutput, "n0"))
	legal := r.Legal()
	kinds := map[string]bool{}
	for _, a := range legal {
		kinds[a.Kind] = true
		got, err := ParseAction(a.JSON())
		if err != nil {
			t.Fatalf("parse %s: %v", a.JSON(), err)
		}
		if got != a || got.JSON() != a.JSON() {
			t.Errorf("round trip of %s gave %+v", a.JSON(), got)
		}
	}
	if len(kinds) != 7 {
		t.Errorf("round trip covered kinds %v, want all 7", kinds)
	}
	// Non-canonical input (spacing, key order, decomposed characters) parses to the canonical action.
	got, err := ParseAction(" { \"role_id\" : \"e\u0301\", \"node_id\":\"n0\",\"kind\":\"ADD_AGENT\" } ")
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\"kind\":\"ADD_AGENT\",\"node_id\":\"n0\",\"role_id\":\"\u00e9\"}"; got.JSON() != want || got.RoleID != "\u00e9" {
		t.Errorf("got %s (%q), want %s", got.JSON(), got.RoleID, want)
	}
}

func TestParseActionErrors(t *testing.T) {
	bad := map[string]string{
		"unknown key":              `{"kind":"STOP","why":"done"}`,
		"field the kind lacks":     `{"kind":"STOP","node_id":"n0"}`,
		"skill on SET_OUTPUT":      `{"kind":"SET_OUTPUT","node_id":"n0","skill_id":"s1"}`,
		"missing required node_id": `{"kind":"RERUN_AGENT"}`,
		"missing protocol":         `{"kind":"ADD_EDGE","source_id":"n0","target_id":"n1"}`,
		"bad protocol":             `{"kind":"ADD_EDGE","protocol":"broadcast","source_id":"n0","target_id":"n1"}`,
		"self edge":                `{"kind":"ADD_EDGE","protocol":"feedback","source_id":"n1","target_id":"n1"}`,
		"null field":               `{"kind":"ADD_AGENT","node_id":"n0","role_id":"solver","skill_id":null}`,
		"empty field":              `{"kind":"ADD_AGENT","node_id":"n0","role_id":"solver","skill_id":""}`,
		"blank field":              `{"kind":"ADD_AGENT","node_id":"n0","role_id":"  "}`,
		"number field":             `{"kind":"SET_OUTPUT","node_id":0}`,
		"duplicate key":            `{"kind":"SET_OUTPUT","node_id":"n0","node_id":"n1"}`,
		"unknown kind":             `{"kind":"FORK_AGENT","node_id":"n0"}`,
		"missing kind":             `{"node_id":"n0"}`,
		"trailing data":            `{"kind":"STOP"} {"kind":"STOP"}`,
		"not an object":            `["STOP"]`,
		"invalid JSON":             `{"kind":"STOP"`,
	}
	for name, text := range bad {
		if a, err := ParseAction(text); err == nil {
			t.Errorf("%s: %s parsed as %+v, want an error", name, text, a)
		}
	}
}

func TestLongestActionTokens(t *testing.T) {
	actions := []Action{{Kind: KindStop}, addEdge("n10", "n11", ProtocolFeedback)}
	if got, want := LongestActionTokens(actions), textrules.Tokens(actions[1].JSON()); got != want {
		t.Errorf("LongestActionTokens = %d, want %d", got, want)
	}
}

func TestCanonicalFloatsAndValues(t *testing.T) {
	floats := map[float64]string{0.5: "0.5", 1: "1.0", 1e-5: "1e-05", 1e16: "1e+16", 123456789: "123456789.0",
		0.30000000000000004: "0.30000000000000004", -2.5e-7: "-2.5e-07", 0.0001: "0.0001"}
	for f, want := range floats {
		if got := canonicalJSON(f); got != want {
			t.Errorf("float %v rendered %s, want %s", f, got, want)
		}
	}
	got := canonicalJSON(map[string]any{"b": []any{1, nil, true}, "a": map[string]any{"z": []string{}, "y": int64(-3)}, "é": 0.0})
	if want := `{"a":{"y":-3,"z":[]},"b":[1,null,true],"é":0.0}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
