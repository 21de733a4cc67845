// Package rundir owns the run folder of ARCHITECTURE.md §3: run.yaml with the resolved
// configuration and its hash, the step-NNNNNN folders, the per-step manifest.json, and the stage
// runner that skips a stage whose outputs match its inputs, seed and configuration, and otherwise
// runs it into a temporary folder renamed into place, so a crash never leaves a partial output.
//
// It must not know what any stage computes or read the contents of Arrow files.
package rundir
