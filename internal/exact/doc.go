// Package exact is a small orchestration world whose histories can be enumerated, so that the
// learning machinery can be checked against exact answers, as the GFlowNet literature does on its
// enumerable environments.
//
// Every task starts with an empty team. The first decision adds an agent of one of a few roles or
// stops; the second stops, adds a verifier or reruns the agent; a third, forced, decision stops.
// Each history's reward is deterministic per (task, history) and binary, so the tilted target of
// AnchorTB and TB, P*(x) ∝ ρ(x)·R_β(r(x)), and the reward-maximising policy are known exactly.
// The state shows the task, so every target is realizable by the network.
//
// Training goes through the learner the update stage trains (gpu.Learner.Update: the network,
// the objective's loss and routing, the clip groups and AdamW) with batches built as the rollout
// and aggregate stages build them (π_θ and ρ episodes per task, behaviour log-probabilities,
// Δℓ from the scores, measured task anchors from the ρ episodes seen so far). After every step
// the policy's terminal distribution is computed exactly by enumeration and compared with P*.
// ρ is the calibrated prior's logits, or a served language model's (World.WithServedReference:
// the masked likelihood of each action's canonical JSON, scored once per state when the world is
// built), so the same check covers θ = ρ·exp(g_ψ) over a served ρ (docs/SERVED-REFERENCE.md).
// With policy.kind causal_lm the policy is a Qwen3 model instead of the network
// (World.NewLearner): every row carries the decision's texts (the controller's system prompt,
// the state's user message, the legal actions' canonical JSON), θ is the model with its LoRA
// adapter and ρ the model with the adapter off, and the episodes, the anchors and P* ∝ ρ·R_β
// all use that ρ.
// Study runs what `evosteer exact` runs (every objective, the curve table and its summary, the
// verdicts); the command only parses flags and prints.
//
// It must not read or write run folders: it is a check of gpu/, driven by a test, by `evosteer
// exact` and by `make exact`.
package exact
