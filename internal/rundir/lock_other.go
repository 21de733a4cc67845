//go:build !unix

package rundir

import "os"

// lockFile is a no-op where flock does not exist; sharded rollouts then need one process per
// step folder.
func lockFile(string) (func(), error) { return func() {}, nil }

// tryLock only opens the lock file where flock does not exist: runs are not protected from a
// second writer there.
func tryLock(path string, _ bool) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	return f, false, err
}
