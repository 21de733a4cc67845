package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

var sample = Record{
	Name:        "Check units first",
	Description: "Convert every quantity to one unit before computing.",
	Trigger:     "Use when a task mixes units.",
	Plan:        []string{"List each quantity with its unit.", "Convert all to SI units."},
	Pitfalls:    []string{"Dropping a factor of 1000."},
	Constraint:  []string{"State the final unit."},
}

func TestRecordBodyHashAndID(t *testing.T) {
	want := `{"constraint":["State the final unit."],"description":"Convert every quantity to one unit before computing.",` +
		`"name":"Check units first","pitfall":["Dropping a factor of 1000."],"plan":["List each quantity with its unit.",` +
		`"Convert all to SI units."],"trigger":"Use when a task mixes units."}`
	if got := sample.Body(); got != want {
		t.Fatalf("Body =\n%s\nwant\n%s", got, want)
	}
	sum := sha256.Sum256([]byte(want))
	if got := sample.ContentHash(); got != hex.EncodeToString(sum[:]) {
		t.Errorf("ContentHash = %s", got)
	}
	if id := sample.ID(); id != "evosteer-"+hex.EncodeToString(sum[:])[:20] || len(id) != len("evosteer-")+20 {
		t.Errorf("ID = %s", id)
	}
	// Nil lists are empty lists; any change of content changes the id.
	empty := Record{Name: "x"}
	if got := empty.Body(); got != `{"constraint":[],"description":"","name":"x","pitfall":[],"plan":[],"trigger":""}` {
		t.Errorf("empty Body = %s", got)
	}
	other := sample
	other.Plan = []string{"List each quantity with its unit.", "Convert all to SI units!"}
	if other.ID() == sample.ID() {
		t.Error("a changed plan keeps the id")
	}
}

// Canonical JSON normalises strings to NFC, so the same text in two encodings is one skill.
func TestRecordNFC(t *testing.T) {
	composed, decomposed := sample, sample
	composed.Name, decomposed.Name = "Caf\u00e9 rule", "Cafe\u0301 rule"
	if composed.ID() != decomposed.ID() {
		t.Error("NFC-equal names give different ids")
	}
	if c := decomposed.Canonical(); c.Name != "Caf\u00e9 rule" {
		t.Errorf("Canonical name = %q", c.Name)
	}
}

func TestParseBody(t *testing.T) {
	got, err := ParseBody(sample.Body())
	if err != nil {
		t.Fatal(err)
	}
	if got.Body() != sample.Body() || got.Name != sample.Name || len(got.Plan) != 2 {
		t.Errorf("round trip: %+v", got)
	}
	for name, body := range map[string]string{
		"not json":       `{"name":`,
		"missing field":  `{"constraint":[],"description":"","name":"x","pitfall":[],"plan":[]}`,
		"unknown field":  `{"constraint":[],"description":"","extra":1,"name":"x","pitfall":[],"plan":[],"trigger":""}`,
		"null list":      `{"constraint":null,"description":"","name":"x","pitfall":[],"plan":[],"trigger":""}`,
		"string list":    `{"constraint":"one","description":"","name":"x","pitfall":[],"plan":[],"trigger":""}`,
		"spacing":        `{"constraint": [],"description":"","name":"x","pitfall":[],"plan":[],"trigger":""}`,
		"key order":      `{"description":"","constraint":[],"name":"x","pitfall":[],"plan":[],"trigger":""}`,
		"duplicate key":  `{"constraint":[],"description":"","name":"x","name":"y","pitfall":[],"plan":[],"trigger":""}`,
		"not NFC":        `{"constraint":[],"description":"","name":"Cafe` + "\u0301" + `","pitfall":[],"plan":[],"trigger":""}`,
		"trailing value": sample.Body() + `{}`,
	} {
		if _, err := ParseBody(body); err == nil {
			t.Errorf("%s: ParseBody accepted %s", name, body)
		}
	}
}

// Render is the METHOD.md §2.5 procedure layout.
func TestRecordRender(t *testing.T) {
	want := strings.Join([]string{
		"Name: Check units first",
		"Purpose: Convert every quantity to one unit before computing.",
		"Use when: Use when a task mixes units.",
		"Steps:",
		"1. List each quantity with its unit.",
		"2. Convert all to SI units.",
		"Pitfalls to avoid:",
		"- Dropping a factor of 1000.",
		"Constraint:",
		"- State the final unit.",
	}, "\n")
	if got := sample.Render(); got != want {
		t.Errorf("Render =\n%s\nwant\n%s", got, want)
	}
}
