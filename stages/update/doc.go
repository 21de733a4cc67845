// Package update is the learning stage of a training step (METHOD.md §4): it loads the learner of
// the previous step, builds the step's trajectories — every healthy episode of every source with
// its decisions' network inputs and behaviour log-probabilities (rollout), Δℓ and log π_θ
// (rescore), corrections and task anchor (aggregate) — takes one AnchorTB step on the policy
// adapter and b_ψ (or the step of the configured objective: tb, ttb, ppo, grpo; gpu/objectives.go),
// fits the value head (one step on this step's value states, then the replay window) and the
// diagnostic outcome heads, publishes the value head, and writes into step-NNNNNN/update/:
//
//   - losses.arrow          per trajectory the objective trains on (ppo and grpo: the current
//     episodes): the loss, the reference level (every Δℓ = 0) and the anchor-only level
//     (Δℓ = 0 and b_ψ = 0; the reference level again for objectives without flows), at the
//     parameters before the update;
//   - coefficients.arrow    per decision of those trajectories: F_t, its measured part and
//     residual (the objective's state term otherwise), and Γ_t = ∂L_x/∂ℓ_θ(a_t), so that an
//     external trainer can apply the same update;
//   - update_metrics.arrow  one row of batch metrics, with the update's work as network rows
//     (the paper's update compute per episode; wall time is only logged, being irreproducible);
//   - checkpoint/learner.arrow  the updated learner, read by the next step.
//
// Step 0's checkpoint (the learner before any update) is written into this folder by
// learner.Initial, for `evosteer init`.
//
// It must not roll anything out or read another step's outputs than the previous checkpoint and
// the replay window's value data.
package update
