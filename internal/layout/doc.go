// Package layout names the run folder of ARCHITECTURE.md §3.1: the step folders (StepDir,
// ParseStepDir), the folder of every stage of a step and the files each writes, the shards of a
// sharded table (ShardFile, ParseShardFile), the evaluation folder, and the one error for an
// input that does not exist (MissingInput), which names the command that writes it. Every
// package that reads or writes a run spells its paths with these names, so no stage names
// another stage's files by literal.
//
// It must not touch the file system or import anything of the module: it is names only.
package layout
