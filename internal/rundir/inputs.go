package rundir

import "os"

// Existing keeps the paths that exist now.
func Existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// ExistingInputs keeps the paths that exist now, relative to the run folder: what Stage.Inputs
// takes. A stage lists only existing files as inputs (the runner hashes them before the stage
// runs) and reports a missing one itself, with the command that writes it.
func (r *Run) ExistingInputs(paths []string) []string {
	out := Existing(paths)
	for i, p := range out {
		out[i] = r.Rel(p)
	}
	return out
}
