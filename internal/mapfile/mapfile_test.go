//go:build unix

package mapfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestMapWhereMmapIsUnsupported: a file maps to its bytes; on a filesystem that cannot map files
// (mmap fails with ENODEV, as on some FUSE and network filesystems) it is read into memory with
// the same bytes; an empty file is no bytes; a directory is refused as one, not as "mmap: no such
// device".
func TestMapWhereMmapIsUnsupported(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	want := bytes.Repeat([]byte("evosteer"), 5000)
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		data, unmap, err := Map(p)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !bytes.Equal(data, want) {
			t.Fatalf("%s: the bytes differ", what)
		}
		if err := unmap(); err != nil {
			t.Fatalf("%s: unmap: %v", what, err)
		}
	}
	check("mapped")
	defer func(m func(int, int64, int, int, int) ([]byte, error)) { mmap = m }(mmap)
	mmap = func(int, int64, int, int, int) ([]byte, error) { return nil, syscall.ENODEV }
	check("without mmap")
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if data, _, err := Map(empty); err != nil || len(data) != 0 {
		t.Fatalf("empty file: %d bytes, %v", len(data), err)
	}
	if _, _, err := Map(dir); !errors.Is(err, syscall.EISDIR) {
		t.Fatalf("directory: %v, want EISDIR", err)
	}
}
