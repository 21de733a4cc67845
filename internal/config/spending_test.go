package config

import (
	"strings"
	"testing"
)

// TestSpendingKeepsTheHash: admission.spending is omitted at its default (released), so the
// default configuration keeps its hash and canonical JSON, and writing the default out
// changes nothing; attainable changes the hash and survives run.yaml and Clone; any other
// value is an error naming the key and the allowed values.
func TestSpendingKeepsTheHash(t *testing.T) {
	def, _ := Default()
	if def.Admission.Spending != SpendingReleased {
		t.Fatalf("default spending %q", def.Admission.Spending)
	}
	if strings.Contains(string(def.canonicalJSON()), "spending") || strings.Contains(string(def.YAML()), "spending") {
		t.Fatal("admission.spending is written at its default")
	}
	same, err := Load(write(t, "admission:\n  spending: released\n"))
	if err != nil {
		t.Fatal(err)
	}
	if same.SHA256() != def.SHA256() {
		t.Fatal("spending: released changed the hash")
	}
	on, err := Load(write(t, "admission:\n  spending: attainable\n"))
	if err != nil {
		t.Fatal(err)
	}
	if on.Admission.Spending != SpendingAttainable || on.SHA256() == def.SHA256() {
		t.Fatalf("spending: attainable: parsed %q, hash unchanged %v", on.Admission.Spending, on.SHA256() == def.SHA256())
	}
	back, err := Parse("run.yaml", on.YAML())
	if err != nil {
		t.Fatal(err)
	}
	if back.Admission.Spending != SpendingAttainable || back.SHA256() != on.SHA256() || on.Clone().Admission.Spending != SpendingAttainable {
		t.Fatalf("attainable did not survive run.yaml (%q) or Clone (%q)", back.Admission.Spending, on.Clone().Admission.Spending)
	}
	if c := def.Clone(); !c.Admission.Spending.IsZero() || c.SHA256() != def.SHA256() {
		t.Fatalf("Clone of the default: spending %q, hash changed %v", c.Admission.Spending, c.SHA256() != def.SHA256())
	}
	path := write(t, "admission:\n  spending: greedy\n")
	_, err = Load(path)
	if err == nil {
		t.Fatal("spending: greedy accepted")
	}
	for _, w := range []string{path + ":2:13:", "admission.spending", "released", "attainable", `"greedy"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}
