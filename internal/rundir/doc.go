// Package rundir owns the run folder of ARCHITECTURE.md §3: run.yaml with the resolved
// configuration and its hash, the step-NNNNNN folders, the per-step manifest.json (carrying the
// sha256 of itself, so a hand-made one is refused), and the stage runner that skips a stage whose
// outputs match its inputs, seed and configuration, and otherwise runs it into a temporary folder
// renamed into place, so a crash never leaves a partial output. A run is created the same way,
// whole or not at all, and a writer holds the run's lock (.lock), so a second writer is refused
// by name.
//
// It must not know what any stage computes or read the contents of Arrow files.
package rundir
