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
// It must not change the learner or read anything but the step's decisions, episodes and the
// previous checkpoint.
package rescore
