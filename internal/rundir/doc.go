// Package rundir owns the run folder of ARCHITECTURE.md §3 (its names are internal/layout's):
// run.yaml with the resolved configuration and its hash, the step-NNNNNN folders, the per-step
// manifest.json (carrying the sha256 of itself, so a hand-made one is refused), the shards of a
// stage's table, and the stage runner of §5.1. Every stage is a Stage: a name, the input files
// it declares, the output files it declares and a Run. RunStage checks that every declared
// input exists (a missing one is named with the command that writes it) and is the output its
// step's manifest records under the run's configuration (VerifyInputs, which commands reading a
// run outside the runner use too), skips a stage whose outputs match its inputs, seed and
// configuration, refuses a step or stage folder that is a link or holds a file it did not
// write, and otherwise runs it into a temporary folder, checks that it wrote exactly its
// declared outputs and renames the folder into place, so a crash never leaves a partial output;
// the manifest then records what the stage folder holds (a whole stage or one layout of shards). A run is created the same way, whole or not at all,
// and a writer holds the run's lock (.lock), so a second writer is refused by name.
//
// It must not know what any stage computes or read the contents of Arrow files.
package rundir
