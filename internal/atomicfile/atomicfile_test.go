package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "f.txt")
	if err := WriteBytes(path, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(path, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "two" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestFailedWriteLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	if err := WriteBytes(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(path, 0o644, func(w io.Writer) error {
		w.Write([]byte("partial"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("want boom, got %v", err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "old" {
		t.Fatalf("old content replaced by %q", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary file left behind: %v", entries)
	}
}

// ReplaceDir installs a new folder and replaces an existing one whole: no file of the old
// folder survives, and nothing is left beside the final folder.
func TestReplaceDir(t *testing.T) {
	parent := t.TempDir()
	final := filepath.Join(parent, "out")
	for i, name := range []string{"a.txt", "b.txt"} {
		tmp := filepath.Join(parent, ".tmp"+name)
		if err := WriteBytes(filepath.Join(tmp, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := ReplaceDir(tmp, final); err != nil {
			t.Fatalf("replace %d: %v", i, err)
		}
	}
	if got, err := os.ReadFile(filepath.Join(final, "b.txt")); err != nil || string(got) != "b.txt" {
		t.Fatalf("new file: %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(final, "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("old file survived: %v", err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Fatalf("left beside the folder: %v", entries)
	}
}
