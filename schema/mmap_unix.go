//go:build unix

package schema

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// mmap is syscall.Mmap; a test stands in a filesystem that cannot map files.
var mmap = syscall.Mmap

// mapFile maps the whole file read-only. Files are immutable once renamed
// into place (writes go to a temp file), so a shared read-only mapping is
// safe and lets the IPC reader slice buffers without copying. Where the
// filesystem cannot map files (ENODEV: some FUSE and network filesystems) the
// file is read into memory instead. A directory is refused as one.
func mapFile(path string) (data []byte, unmap func() error, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.IsDir() {
		return nil, nil, syscall.EISDIR
	}
	size := st.Size()
	if size == 0 {
		return nil, func() error { return nil }, nil // mmap of 0 bytes fails
	}
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("file too large to map (%d bytes)", size)
	}
	data, err = mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if errors.Is(err, syscall.ENODEV) {
		if data, err = io.ReadAll(f); err != nil {
			return nil, nil, fmt.Errorf("read (the filesystem cannot map files): %w", err)
		}
		return data, func() error { return nil }, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("mmap: %w", err)
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
