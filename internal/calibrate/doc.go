// Package calibrate fits the simulated world (internal/sim) to measured baseline scores: a table
// of (benchmark, policy, score) cells for the six baseline policies of the paper's Table 2 (the
// executor alone, the four fixed paradigms and the untrained architecture ρ). The fitted values
// are the world's per-benchmark rows (sim.families.<benchmark>: level, tool weight, plan weight,
// the verifier's quality on a text benchmark or the share of unsolvable tasks on an interactive
// one, the executor-alone offset; a text benchmark's share is held at HeldShare), the weights of
// ρ's prior that say what a prompted orchestrator knows (a solver or a tool role first; a verifier once an answer
// stands; acting on in a running environment) and the world's failure rate (how often an
// execution fails, and how far agents of one model fail together).
//
// Every evaluation plays the same tasks (the check's: the test split's, with episode seeds of
// the fit's own) with the same episode seeds (common random numbers), so the objective is a
// deterministic function of the parameters, and a parameter change moves a score only through
// the episodes it changes. The fit is block-coordinate Nelder–Mead (gonum/optimize): one block
// per benchmark, then ρ's block, then (in every round but the last) the failure block, repeated
// for a few rounds; in the first round a benchmark's level is first set by bisection, and the
// executor-alone offset, which moves the direct cell alone, is always solved by bisection. The
// searched workflow is searched afresh at the start of every round on a large training sample
// and played frozen within the round.
//
// The report (Markdown) sets every cell's fit, check and refit beside its target, and the refit's
// moves beside those the fit samples' own episode noise would cause, with the chance that a world
// exact in structure meets the refit and average tolerances at this sample (sampleNoise).
//
// The method's own rows (the trained orchestrator, its ablations and objectives) are never
// inputs: ReadTargets refuses every policy outside Policies.
//
// It must not read or write run folders, learn anything, or import a stage.
package calibrate
