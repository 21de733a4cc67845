//go:build unix

package schema

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps the whole file read-only. Files are immutable once renamed
// into place (writes go to a temp file), so a shared read-only mapping is
// safe and lets the IPC reader slice buffers without copying.
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
	size := st.Size()
	if size == 0 {
		return nil, func() error { return nil }, nil // mmap of 0 bytes fails
	}
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("file too large to map (%d bytes)", size)
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap: %w", err)
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
