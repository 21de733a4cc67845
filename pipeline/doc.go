// Package pipeline runs the stages of training steps in order, in one process: a step is
// rollout → rescore → aggregate → update → validate → author (paper Algorithm 1), each through
// the run folder's stage runner, so a stage whose outputs are up to date is skipped and a crash
// loses at most the stage in flight.
//
// It is a driver, above the stages (only cmd/ and the comparison study use it); no stage
// imports it but as a test fixture. It must not implement any stage itself; it only builds each stage when its turn comes (a
// stage's inputs are the files on disk at that moment) and runs it.
package pipeline
