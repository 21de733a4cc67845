//go:build duckdb_arrow

package main

import (
	"testing"
)

// TestInspectADirectory: inspect given a folder says so and names what to give instead, never
// "mmap: no such device".
func TestInspectADirectory(t *testing.T) {
	dir := t.TempDir()
	_, err := run(t, "", "inspect", dir)
	want := "inspect " + dir + ": is a directory; give one Arrow file (evosteer inspect " + dir + "/…/FILE.arrow), or query every table of a run folder with evosteer sql --run " + dir
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}
