//go:build unix

package qwen3

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// mapFile maps a file read-only (schema/mmap_unix.go does the same for Arrow files; gpu must not
// import schema, so a shared helper would live in a leaf package). A filesystem that cannot map
// files (ENODEV) gets the file read into memory instead.
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
		return nil, nil, fmt.Errorf("%s: is a directory", path)
	}
	size := st.Size()
	none := func() error { return nil }
	if size == 0 {
		return nil, none, nil
	}
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("%s: too large to map (%d bytes)", path, size)
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if errors.Is(err, syscall.ENODEV) {
		if data, err = io.ReadAll(f); err != nil {
			return nil, nil, fmt.Errorf("%s: read: %w", path, err)
		}
		return data, none, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
