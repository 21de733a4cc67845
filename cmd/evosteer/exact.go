package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/atomicfile"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/exact"
	"github.com/evosteer/evosteer-go/schema"
)

func newExactCmd() *cobra.Command {
	var cfgPath, out string
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
			for _, o := range objectives {
				if !slices.Contains(config.Objectives, o) {
					return fmt.Errorf("unknown objective %q (known: %s)", o, strings.Join(config.Objectives, ", "))
				}
			}
			w, err := exact.NewWorld(families, tasks, roles, cfg.Seed, rewardNoise)
			if err != nil {
				return err
			}
			eng, err := gpu.OpenEngine(cfg.Compute.Backend)
			if err != nil {
				return err
			}
			defer eng.Close()
			log := cmd.ErrOrStderr()
			var rows []schema.ExactCurveRow
			var curves [][]exact.Point
			for _, o := range objectives {
				c := *cfg
				c.Objective = o
				curve, err := exact.Train(cmd.Context(), eng, w, &c, steps, func(p exact.Point) {
					if p.Step%25 == 0 || p.Step == steps {
						fmt.Fprintf(log, "exact %s step %d/%d: TV(θ,P*) %.4f (ρ %.4f), TV(θ,P_KL) %.4f, reward θ %.3f P* %.3f max %.3f\n",
							o, p.Step, steps, p.TV, p.TVRho, p.TVKL, p.RewardTheta, p.RewardTarget, p.RewardMax)
					}
				})
				if err != nil {
					return fmt.Errorf("objective %s: %w", o, err)
				}
				curves = append(curves, curve)
				rows = append(rows, exact.Rows(o, curve)...)
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			lin := schema.Lineage{Run: filepath.Base(out), Stage: "exact", ConfigSHA256: cfg.SHA256()}
			if err := schema.WriteRows(schema.ExactCurve, filepath.Join(out, "curve.arrow"), lin, rows); err != nil {
				return err
			}
			world := "Exact world"
			if rewardNoise {
				world = "Exact world with noisy rewards"
			}
			md := fmt.Sprintf("# %s: %d tasks × %d histories, β = %g, %d steps\n\n%s", world, w.Tasks(), w.Histories(), cfg.AnchorTB.Beta, steps, exact.Markdown(objectives, curves, rewardNoise))
			if err := atomicfile.WriteBytes(filepath.Join(out, "curve.md"), []byte(md), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\ncurve: %s\n", md, filepath.Join(out, "curve.arrow"))
			if check {
				var failed []string
				for i, o := range objectives {
					if v, ok := exact.Verdict(o, curves[i], rewardNoise); !ok {
						failed = append(failed, o+": "+v)
					}
				}
				if len(failed) > 0 {
					return fmt.Errorf("--check: %s", strings.Join(failed, "; "))
				}
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
	cmd.Flags().BoolVar(&rewardNoise, "reward-noise", false, "the noisy world: every episode draws its binary reward from its history's success probability")
	return cmd
}
