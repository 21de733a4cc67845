//go:build unix

package mapfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// mmap is syscall.Mmap; a test stands in a filesystem that cannot map files.
var mmap = syscall.Mmap

// Map maps the whole file at path read-only and returns its bytes and the function that unmaps
// them. A shared read-only mapping is safe because the files it serves are replaced by rename,
// never written in place. An error is the file's (a *fs.PathError from os.Open), syscall.EISDIR
// for a directory, or says what failed; the caller adds the path it names the file by.
func Map(path string) (data []byte, unmap func() error, err error) {
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
