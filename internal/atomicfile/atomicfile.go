package atomicfile

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Write creates path (and its parent folders) with the bytes that write produces. On any error
// the temporary file is removed and path is left as it was.
func Write(path string, perm os.FileMode, write func(w io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := write(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: fsync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return SyncDir(dir)
}

// WriteBytes is Write for content already in memory.
func WriteBytes(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// SyncDir fsyncs a folder so that a rename inside it survives a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	defer d.Close()
	// Some platforms cannot fsync a folder; only that error is ignored.
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	return nil
}

// ReplaceDir puts the folder tmp at final. An existing folder is moved aside first (to a
// hidden sibling, .NAME.old-*, that no reader of the parent lists) and removed after, so a crash
// in between leaves either the old contents, the new ones, or the old ones aside with nothing
// at final, which RecoverDir puts back; never a mixture.
func ReplaceDir(tmp, final string) error {
	var old string
	if _, err := os.Stat(final); err == nil {
		old = filepath.Join(filepath.Dir(final), "."+filepath.Base(final)+oldInfix+strconv.FormatInt(time.Now().UnixNano(), 36))
		if err := os.Rename(final, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	if err := SyncDir(filepath.Dir(final)); err != nil {
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

// oldInfix names the folder ReplaceDir moves aside: .NAME.old-TIME.
const oldInfix = ".old-"

// RecoverDir finishes or undoes a ReplaceDir that a crash interrupted in the folder dir: where
// a folder was moved aside and nothing took its place, the newest one moved aside goes back;
// every other one moved aside is removed.
func RecoverDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	type moved struct {
		entry string
		stamp int64
	}
	aside := map[string][]moved{} // final name -> the folders moved aside from it
	for _, e := range entries {
		base := strings.TrimPrefix(e.Name(), ".") // unhidden: moved aside by an earlier version
		i := strings.LastIndex(base, oldInfix)
		if !e.IsDir() || i <= 0 {
			continue
		}
		stamp, err := strconv.ParseInt(base[i+len(oldInfix):], 36, 64)
		if err != nil {
			continue
		}
		aside[base[:i]] = append(aside[base[:i]], moved{e.Name(), stamp})
	}
	restored := false
	for _, name := range slices.Sorted(maps.Keys(aside)) {
		olds := aside[name]
		slices.SortFunc(olds, func(a, b moved) int { return cmp.Compare(a.stamp, b.stamp) })
		final := filepath.Join(dir, name)
		if _, err := os.Lstat(final); errors.Is(err, fs.ErrNotExist) {
			if err := os.Rename(filepath.Join(dir, olds[len(olds)-1].entry), final); err != nil {
				return err
			}
			restored, olds = true, olds[:len(olds)-1]
		}
		for _, o := range olds {
			if err := os.RemoveAll(filepath.Join(dir, o.entry)); err != nil {
				return err
			}
		}
	}
	if restored {
		return SyncDir(dir)
	}
	return nil
}
