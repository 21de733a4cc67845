package config

import (
	"strings"
	"testing"
)

// TestCosts: the costs block is absent from the hash and the rendered file at its default (no
// prices), so every earlier configuration keeps its hash; a price changes the hash, prices the
// tokens per million, and a negative price is refused at its line and column.
func TestCosts(t *testing.T) {
	def, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if def.Costs.Priced() || strings.Contains(string(def.YAML()), "costs") || strings.Contains(string(def.canonicalJSON()), "per_million") {
		t.Fatalf("the default prices are set or written into the hash and the rendered file: %+v", def.Costs)
	}
	c, err := Load(write(t, "costs:\n  input_per_million: 0.5\n  output_per_million: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Costs.Priced() || c.SHA256() == def.SHA256() {
		t.Fatalf("prices %+v, hash unchanged %v", c.Costs, c.SHA256() == def.SHA256())
	}
	if got := c.Costs.Cost(2_000_000, 500_000); got != 2 {
		t.Fatalf("cost of 2M in and 0.5M out at 0.5 and 2 per million: %g, want 2", got)
	}
	path := write(t, "costs:\n  output_per_million: -1\n")
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path+":2:23: costs.output_per_million: must be >= 0 and finite, got -1") {
		t.Fatalf("a negative price: %v", err)
	}
}
