package rundir

import "os"

// Existing keeps the paths that exist now. A stage lists only existing files as its inputs
// (the runner hashes them before the stage runs) and reports a missing one itself, with the
// command that writes it.
func Existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
