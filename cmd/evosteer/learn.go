package main

import (
	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/stages/rescore"
	"github.com/evosteer/evosteer-go/stages/update"
)

func newRescoreCmd() *cobra.Command {
	var f stageFlags
	cmd := &cobra.Command{
		Use:   "rescore --run DIR --step K [--force]",
		Short: "Recompute log π_θ and log π_ρ of every decision of a step (teacher forcing)",
		Long: `Rescore training step K: with the learner of step K-1 (the θ the step's update differentiates),
recompute log π_θ and log π_ρ of the action taken at every decision of the step's rollout (every
source, every shard) from the network inputs the rollout stored, and write
step-NNNNNN/rescore/scores.arrow with Δℓ = log π_θ − log π_ρ. Forced actions are scored at their
true probabilities over the full legal set.

The rollout sampled current episodes from that θ and reference episodes from ρ, so the rescored
log-probabilities must reproduce the stored behaviour log-probabilities; the stage fails when they
differ by more than 1e-5 relative (a checkpoint and a rollout that do not belong together).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := f.runStage(cmd, cmd.ErrOrStderr(), rescore.Stage{})
			return err
		},
	}
	f.register(cmd)
	return cmd
}

func newUpdateCmd() *cobra.Command {
	var f stageFlags
	cmd := &cobra.Command{
		Use:   "update --run DIR --step K [--force]",
		Short: "Take a step's update of the policy (AnchorTB or the configured objective), fit the value head, save the learner",
		Long: `Update training step K: load the learner of step K-1, build the step's trajectories (every
healthy episode of every source: network inputs from the rollout, Δℓ from rescore, corrections and
anchors from aggregate), take one AnchorTB step on the policy adapter and the residual head b_ψ
(three gradient clips, AdamW with the adapter and heads groups), fit the value head (one step on the
step's value states, then value_head.fit_steps − 1 on the replay window) and the outcome heads,
publish the value head, and write step-NNNNNN/update/. With objective tb, ttb, ppo or grpo the
policy step is that objective's instead (tb and ttb learn a log Z per task, ttb a backward policy,
ppo a critic; ppo and grpo train on the current episodes only, comparison.epochs passes):

  losses.arrow          per trajectory: loss, loss_rho (every Δℓ = 0), loss_anchor (Δℓ = 0, b_ψ = 0)
  coefficients.arrow    per decision: flow F_t, measured part, residual, coefficient Γ_t = ∂L/∂ℓ_θ(a_t)
  update_metrics.arrow  the batch metrics (loss, gain, policy divergence, gradient norms, value fit,
                        the update's work in network rows)
  checkpoint/learner.arrow  the updated learner, read by step K+1

Losses and coefficients are evaluated at the parameters before the update, with the Δℓ of the
scores file, so they can be recomputed from the files alone. Needs rollout, rescore and aggregate
of step K.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := f.runStage(cmd, cmd.ErrOrStderr(), update.Stage{})
			return err
		},
	}
	f.register(cmd)
	return cmd
}
