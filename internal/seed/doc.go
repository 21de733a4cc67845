// Package seed derives every random seed of a run from the run seed and a textual key, the way
// the reference release does, so that a stage, an episode or an execution gets the same seed
// wherever and whenever it runs, and the two arms of a pair share theirs.
//
// It must not hold random generators or state.
package seed
