package orchestra

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"testing"
)

// buildTeam applies actions to a fresh hotpotqa runtime.
func buildTeam(t *testing.T, actions ...Action) *Runtime {
	t.Helper()
	r := newTestRuntime(qaTask, newFake(), defaultOptions())
	for _, a := range actions {
		mustApply(t, r, a)
	}
	return r
}

func TestStructureKeyInvariantUnderRenumbering(t *testing.T) {
	a := buildTeam(t,
		addAgent("n0", "solver", "s1"), addAgent("n1", "verifier", ""), addAgent("n2", "finalizer", ""),
		addEdge("n0", "n1", ProtocolRevise), addEdge("n1", "n2", ProtocolFeedback), onNode(KindSetOutput, "n2"))
	// The same team built with other ids (after drops), edges added in another order.
	b := buildTeam(t,
		addAgent("n0", "planner", ""), addAgent("n1", "planner", ""), onNode(KindDropAgent, "n0"),
		addAgent("n2", "solver", "s1"), addAgent("n3", "verifier", ""), onNode(KindDropAgent, "n1"),
		addAgent("n4", "finalizer", ""), addEdge("n3", "n4", ProtocolFeedback), addEdge("n2", "n3", ProtocolRevise),
		onNode(KindSetOutput, "n4"))
	ea, ca := a.StructureKey()
	eb, cb := b.StructureKey()
	if ea != eb || ca != cb {
		t.Fatalf("same structure, different keys:\n%s\n%s", ea, eb)
	}
	if !regexp.MustCompile(`^\["exact","sha256:[0-9a-f]{64}",3,2,false\]$`).MatchString(ea) {
		t.Errorf("exact key %s", ea)
	}
	if ca != `["coarse","",3,2,false]` {
		t.Errorf("coarse key %s", ca)
	}
	mustApply(t, a, stop)
	if e, c := a.StructureKey(); e == ea || c != `["coarse","",3,2,true]` {
		t.Errorf("stopped keys %s %s", e, c)
	}
}

func TestStructureKeyDistinguishesStructure(t *testing.T) {
	base := []Action{addAgent("n0", "solver", "s1"), addAgent("n1", "verifier", ""), addEdge("n0", "n1", ProtocolRevise), onNode(KindSetOutput, "n1")}
	exact, coarse := buildTeam(t, base...).StructureKey()
	variants := map[string][]Action{
		"protocol":  {addAgent("n0", "solver", "s1"), addAgent("n1", "verifier", ""), addEdge("n0", "n1", ProtocolFeedback), onNode(KindSetOutput, "n1")},
		"role":      {addAgent("n0", "solver", "s1"), addAgent("n1", "finalizer", ""), addEdge("n0", "n1", ProtocolRevise), onNode(KindSetOutput, "n1")},
		"skill":     {addAgent("n0", "solver", "s2"), addAgent("n1", "verifier", ""), addEdge("n0", "n1", ProtocolRevise), onNode(KindSetOutput, "n1")},
		"output":    {addAgent("n0", "solver", "s1"), addAgent("n1", "verifier", ""), addEdge("n0", "n1", ProtocolRevise), onNode(KindSetOutput, "n0")},
		"no output": {addAgent("n0", "solver", "s1"), addAgent("n1", "verifier", ""), addEdge("n0", "n1", ProtocolRevise)},
		"direction": {addAgent("n0", "solver", "s1"), addAgent("n1", "verifier", ""), addEdge("n1", "n0", ProtocolRevise), onNode(KindSetOutput, "n1")},
	}
	for name, actions := range variants {
		e, c := buildTeam(t, actions...).StructureKey()
		if e == exact {
			t.Errorf("%s: exact key unchanged", name)
		}
		if c != coarse {
			t.Errorf("%s: coarse key %s changed from %s", name, c, coarse)
		}
	}
	// Outputs and versions are not structure: a rerun keeps the key.
	r := buildTeam(t, base...)
	mustApply(t, r, onNode(KindRerunAgent, "n0"))
	if e, _ := r.StructureKey(); e != exact {
		t.Error("re-executing a node changed the structure key")
	}
}

func TestStructureKeyEmptyTeam(t *testing.T) {
	r := buildTeam(t)
	exact, coarse := r.StructureKey()
	// sha256 of {"edges":[],"nodes":[],"output":null}
	if exact != `["exact","sha256:`+sha256Hex(`{"edges":[],"nodes":[],"output":null}`)+`",0,0,false]` || coarse != `["coarse","",0,0,false]` {
		t.Errorf("empty keys %s %s", exact, coarse)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
