package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/exact"
)

func newExactCmd() *cobra.Command {
	var cfgPath, out, causalLM string
	var check, rewardNoise bool
	var objectives []string
	var steps, families, tasks, roles int
	cmd := &cobra.Command{
		Use:   "exact [--objectives anchortb,tb,ppo,grpo] [--steps N] [--out DIR]",
		Short: "Train on an enumerable world and measure θ's exact distance to its target",
		Long: `Train each objective on a small orchestration world whose histories can be enumerated
(internal/exact: a first agent of one of --roles roles or STOP, then STOP, a verifier or a rerun,
then a forced STOP; a deterministic binary reward per task and history), through the learner the
update stage trains, and measure after every step, exactly:

  TV(θ, P*)   total variation between θ's terminal distribution and P* ∝ ρ·R_β, the fixed point
              of AnchorTB and TB;
  reward      expected reward under θ, P*, ρ and the best history.

AnchorTB and TB should reach P* (TV below 0.05); PPO and GRPO maximise reward and go past P*.

With --reward-noise every episode draws its binary reward from its history's success probability,
as an executor's outcome is drawn in a real run. AnchorTB and TB regress toward log R_β of the
sampled reward, so their fixed point is then P_KL ∝ ρ·exp(E[log R_β]) = ρ·exp(β·E[r]), the
maximiser of E[β·r] − KL(θ‖ρ), and not P* ∝ ρ·E[R_β]: the summary adds TV(θ, P_KL), and their
verdict asks that θ end nearer P_KL than P* (the two are far apart at β = 4, a few hundredths
apart at β = 2; make exact runs the noisy world at β = 4).

The network, optimizer, β and ablations come from the configuration (--config overlays
pipeline.yaml), so a change to any of them can be judged here in minutes before a real run.

With policy.kind causal_lm in the configuration, or --causal-lm DIR, the policy is a Qwen3 model
read from a local folder (gpu.CausalLM): every decision's row carries the controller's system
prompt, the state's user message and the legal actions' canonical JSON, θ is the model with its
LoRA adapter (policy.adapter_rank, policy.adapter_alpha, policy.causal_lm.target_modules) and ρ
the model with the adapter off, so P* ∝ ρ·R_β is the model's own ρ tilted. --causal-lm DIR sets
policy.kind causal_lm and policy.causal_lm.model DIR, keeping the rest of policy.causal_lm from
--config (target modules all-linear when it sets none).

Writes DIR/curve.arrow (table exact_curve, one row per objective × step) and DIR/curve.md (a
summary table and one verdict per objective), and prints the summary. With --check the command
fails when a verdict does (AnchorTB or TB not within TV 0.05 of P*, or with --reward-noise not
nearer P_KL; PPO or GRPO not past P*'s reward while away from P*), so make exact is a check, not
only a curve.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cfgPath)
			if err != nil {
				return err
			}
			if causalLM != "" {
				if cfg.Served != nil {
					return fmt.Errorf("--causal-lm: the configuration sets served_reference, which cannot be ρ with policy.kind causal_lm: ρ is the language model with its adapter off")
				}
				cfg.Policy.Kind = config.PolicyCausalLM
				if cfg.Policy.CausalLM == nil {
					cfg.Policy.CausalLM = &config.CausalLM{TargetModules: []string{"all-linear"}}
				}
				cfg.Policy.CausalLM.Model = causalLM
			}
			for _, o := range objectives {
				if !slices.Contains(config.Objectives, o) {
					return fmt.Errorf("unknown objective %q (known: %s)", o, strings.Join(config.Objectives, ", "))
				}
			}
			eng, err := gpu.OpenEngine(cfg.Compute.Backend)
			if err != nil {
				return err
			}
			defer eng.Close()
			log := cmd.ErrOrStderr()
			study := exact.Study{Objectives: objectives, Steps: steps, Families: families, Tasks: tasks, Roles: roles,
				RewardNoise: rewardNoise, Out: out, Progress: func(o string, p exact.Point) {
					fmt.Fprintf(log, "exact %s step %d/%d: TV(θ,P*) %.4f (ρ %.4f), TV(θ,P_KL) %.4f, reward θ %.3f P* %.3f max %.3f\n",
						o, p.Step, steps, p.TV, p.TVRho, p.TVKL, p.RewardTheta, p.RewardTarget, p.RewardMax)
				}}
			res, err := study.Run(cmd.Context(), eng, cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\ncurve: %s\n", res.Markdown, res.Curve)
			if check && len(res.Failed) > 0 {
				return fmt.Errorf("--check: %s", strings.Join(res.Failed, "; "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "configuration overlaid on the built-in pipeline.yaml (network, optimizer, β, ablations)")
	cmd.Flags().StringVar(&out, "out", "runs/exact", "folder for curve.arrow and curve.md")
	cmd.Flags().BoolVar(&check, "check", false, "exit with an error, after writing the files, when an objective does not end at its fixed point (make exact sets it)")
	cmd.Flags().StringSliceVar(&objectives, "objectives", []string{"anchortb", "tb", "ppo", "grpo"}, "objectives to train, one curve each")
	cmd.Flags().IntVar(&steps, "steps", 300, "training steps per objective (every task is in every batch)")
	cmd.Flags().IntVar(&families, "families", 3, "families of the world (each has its own best role and repair)")
	cmd.Flags().IntVar(&tasks, "tasks", 4, "tasks per family")
	cmd.Flags().IntVar(&roles, "roles", 4, "roles the first agent can take")
	cmd.Flags().StringVar(&causalLM, "causal-lm", "", "train the language-model policy: a Qwen3 model folder (sets policy.kind causal_lm and policy.causal_lm.model)")
	cmd.Flags().BoolVar(&rewardNoise, "reward-noise", false, "the noisy world: every episode draws its binary reward from its history's success probability")
	return cmd
}
