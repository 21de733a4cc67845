//go:build unix

package schema

import (
	"reflect"
	"syscall"
	"testing"
)

// TestOpenWhereMmapIsUnsupported: a file on a filesystem that cannot map files (mmap fails with
// ENODEV, as on some FUSE and network filesystems) is read into memory and opens with the same
// rows; a directory is refused as one, not as "mmap: no such device".
func TestOpenWhereMmapIsUnsupported(t *testing.T) {
	p, _ := writeGood(t, 5000)
	want, err := ReadFile[EpisodeRow](Episodes, p)
	if err != nil {
		t.Fatal(err)
	}
	defer func(m func(int, int64, int, int, int) ([]byte, error)) { mmap = m }(mmap)
	mmap = func(int, int64, int, int, int) ([]byte, error) { return nil, syscall.ENODEV }
	got, err := ReadFile[EpisodeRow](Episodes, p)
	if err != nil {
		t.Fatalf("without mmap: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("without mmap the rows differ")
	}
	dir := t.TempDir()
	openErr(t, Open, dir, "is a directory")
}
