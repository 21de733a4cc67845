package schema

import "testing"

// TestOpenADirectory: a directory given as a table is refused as one, naming it, not as
// "mmap: no such device" (internal/mapfile reads a file whose filesystem cannot map it:
// TestMapWhereMmapIsUnsupported).
func TestOpenADirectory(t *testing.T) {
	openErr(t, Open, t.TempDir(), "is a directory")
}
