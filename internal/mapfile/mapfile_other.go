//go:build !unix

package mapfile

import "os"

// Map reads the whole file where mmap is not available.
func Map(path string) (data []byte, unmap func() error, err error) {
	data, err = os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}
