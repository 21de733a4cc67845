// Package probe measures how far the learner of one step is from its own target at the first
// decision of a task (issue 15, item 2): it tells "θ is limited by its target" (θ ≈ π*, and π*
// is worth little over ρ) from "θ is limited by the target its loss sets" (θ short of π* but on
// AnchorTB's own first-decision target, which the flows pull short of π*) and from "θ is
// limited by optimisation" (θ short of both).
//
// For a deterministic sample of training tasks (balanced over the IID families in config order,
// by hashes of the run seed, the same tasks at every step), it reads the first decision's legal
// actions and their log π_ρ(a), log π_θ(a) from the step's network on the decision's stored
// inputs (exactly as rollout scores them), then plays, for every legal first action a, M episodes
// forced to take a first (as paired arms are forced: episode.Job.First) and continued by ρ. The
// episode seeds are shared across the actions of a task (continuation i of every action uses the
// same seed, and the same seed at every step), so the actions' differences are paired. Episodes
// are played as the rollout of step+1 plays them: the step's learner (ρ is its frozen network,
// shown the step's published value head) and the skill library after the step. From the
// rewards: U(a) = mean R_β(r) = 1 + (e^β − 1)·r, the one-step tilted target
// π*(a) = ρ(a)·U(a) / Σ_b ρ(b)·U(b), and the table probe (schema.Probe), one row per (task,
// legal first action), with loss_target: AnchorTB's own target for log(θ/ρ) of the action,
// Δℓ_0 − (T+1)·Γ_0/4 averaged over the family's trained episodes of the last training steps that
// took it (target.go; read from the rollout, scores and coefficients tables, never recomputed).
// probetable.Summarize turns the rows alone into the summary (expected
// reward under ρ, θ, π* and the best action; θ's coverage of π*: slope, TV, KL; the family ×
// role interaction; a one-line verdict).
//
// Outputs: probe/step-NNNNNN/probe.arrow, summary.json and summary.md, put in place together
// (a temporary folder under probe/ replaces the step's folder whole; no partial file on error).
// The same run, step and options give byte-identical files.
//
// It must not train anything, change what it reads, or write anywhere in the run folder but
// under probe/.
package probe
