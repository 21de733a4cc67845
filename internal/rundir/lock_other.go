//go:build !unix

package rundir

// lockFile is a no-op where flock does not exist; sharded rollouts then need one process per
// step folder.
func lockFile(string) (func(), error) { return func() {}, nil }
