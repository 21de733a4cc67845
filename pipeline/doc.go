// Package pipeline runs the stages of training steps in order, in one process (and, before a
// run, the solver-only pilot that picks its training pool: Pilot): a step is the
// ordered list Stages, rollout → rescore → aggregate → update → validate → author (paper
// Algorithm 1), each a StepStage (a rundir.Stage that also summarises its outputs from its
// files) run through the run folder's stage runner, so a stage whose outputs are up to date is
// skipped and a crash loses at most the stage in flight.
//
// It is a driver, above the stages (only cmd/ and the comparison study use it); no stage
// imports it but as a test fixture. It must not implement any stage itself; it only runs each in
// its turn (the runner lists a stage's inputs as the files on disk at that moment).
package pipeline
