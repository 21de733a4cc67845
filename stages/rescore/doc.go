// Package rescore is the second stage of a training step: it recomputes, by teacher forcing,
// log π_θ and log π_ρ of the action taken at every decision of the step (every source, every
// shard) from the network inputs the rollout stored (policy_input, action_inputs,
// prior_logits) with the learner of the previous step — the θ the step's update differentiates —
// and writes step-NNNNNN/rescore/scores.arrow with Δℓ_t = log π_θ − log π_ρ. Forced actions
// (budget finalisation, the forced first action of a paired arm) are scored at their true
// probabilities over the full legal set.
//
// Since the rollout sampled current episodes from that same θ and reference episodes from ρ,
// the rescored log-probabilities must reproduce the stored behaviour log-probabilities; the
// stage checks this (learner.MaxBehaviorMismatch) and fails loudly when a checkpoint and a rollout do
// not belong together.
//
// With served_reference set it also re-queries the served ρ (drift.go): a fixed share
// (served_reference.rescore_sample, drawn from the stage seed) of the decisions the rollout's
// prompts table holds, each rebuilt from its stored user message and legal actions, and writes
// rescore/rho_drift.arrow (one row per re-queried decision: its legal action of largest
// |Δ log ρ|); the summary prints the largest, and the stage fails in one line naming the
// episode, decision, action and drift past served_reference.drift_tolerance. The stored
// prior_logits stay as the rollout recorded them, and log π_ρ is rescored from them.
//
// It must not change the learner or read anything but the step's decisions, episodes, prompts
// and the previous checkpoint (and, to re-query, the served reference).
package rescore
