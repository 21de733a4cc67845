package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/internal/probetable"
	"github.com/evosteer/evosteer-go/stages/probe"
)

func newProbeCmd() *cobra.Command {
	var run string
	var step, tasks, continuations, window int
	cmd := &cobra.Command{
		Use:   "probe --run DIR --step K [--tasks N] [--continuations M] [--target-window W]",
		Short: "Measure how far the learner of a step is from its own target at the first decision",
		Long: `Measure how far θ, the learner of step K (K = 0: the untrained learner, θ = ρ), is from its
training target at the first decision of a task, and whether more gain needs a better target or
better optimisation.

AnchorTB's target is the reference tilted by the reward, P* ∝ ρ·R_β with R_β(r) = 1 + (e^β − 1)·r.
At the first decision (empty team) its one-step version is π*(a) = ρ(a)·U(a) / Σ_b ρ(b)·U(b), with
U(a) = E[R_β | first action a, then ρ]. For N training tasks (default 66, balanced over the IID
families, the same tasks at every step) the probe reads the first decision's legal actions and
their ρ(a), θ(a) from the step's network, then plays M episodes (default 32) per legal first action,
forced to take it and continued by ρ, with seeds shared across a task's actions (paired) and across
steps. That is N × actions × M episodes (the actions are every role, with and without each skill on
the family's menu): a few minutes on 2 cores at the defaults. The episodes are played as the rollout
of step K+1 would play them: the frozen ρ network, shown step K's published value head, with the
skill library after step K, so ρ's expected reward can move between probed steps.

It also reads the target AnchorTB itself set for each first action in training: over the trained
episodes of the last W steps (default 60, ending at K) that took the action in the task's family,
the mean of τ = Δℓ_0 − (T+1)·Γ_0/4, which is where the loss's gradient pulls log(θ/ρ) of that
action (its first-decision coefficient is exactly Γ_0 = 4/(T+1)·(Δℓ_0 − τ)); an action taken in
fewer than 20 of them gets none.

Writes probe/step-NNNNNN/probe.arrow (table probe: one row per task and legal first action, with
rho, theta, pistar, log_rho, log_theta, u, mean_reward, reward_sd, loss_target; query it with
evosteer sql),
summary.json and summary.md, and prints the summary. How to read it, per family and overall:
  reward ρ      expected reward ×100 when ρ takes the first action (and ρ continues)
  gain θ, π*    what drawing the first action from θ or from π* instead adds, in points
  best action   what the best single first action of each task adds: the ceiling of this decision
                (overestimated by the noise of the M-episode means it takes the largest of)
  slope         least-squares slope of log(θ/ρ) on log(π*/ρ) (ρ-weighted, centred per task):
                1 when θ = π*, 0 when θ = ρ; the share of the way θ went toward its target
  TV, coverage  mean total variation to π* of θ and of ρ; coverage = 1 − TV(θ,π*)/TV(ρ,π*)
  KL            mean KL(π*‖θ) and KL(π*‖ρ), nats
  noise         how much of log(π*/ρ)'s spread may be sampling noise of Û (an upper bound; it
                pulls the slope toward 0 by as much: raise --continuations when it is large)
  loss target   least-squares slope of the loss target τ on log(θ/ρ) (same weights): 1 when θ
                sits on the target its own loss sets, above 1 when θ falls short of it
  reach         slope of τ on log(π*/ρ), corrected like the slope: how much of π*'s tilt the
                loss asks for; the slope can reach only this far while the flows stay as they are
  interaction   the family × role means of log(θ/ρ) and log(π*/ρ), double-centred, and their
                correlation: does θ learn what differs between families?
The verdict: "θ is limited by its target" when θ ≈ π* (slope ≥ 0.8 and coverage ≥ 0.5), so gains
need a target worth more (a larger β, a better reference); when θ falls short of π* and gains
less than π* would, "θ is limited by the target its loss sets" when θ has reached τ (loss target
between 0.8 and 1.25) — the flows ask for less than π*, so better optimisation would not help —
and "θ is limited by optimisation" otherwise.

The same run, step and flags give byte-identical files; evosteer report shows every probed step.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("step") {
				return fmt.Errorf("probe: --step is required (0 probes the untrained learner)")
			}
			r, err := openLocked(run)
			if err != nil {
				return err
			}
			defer r.Unlock()
			log := cmd.ErrOrStderr()
			start := time.Now()
			res, err := probe.Run(cmd.Context(), r, probe.Options{Step: step, Tasks: tasks, Continuations: continuations, TargetWindow: window,
				Progress: func(p probe.Progress) {
					if p.Tasks == 0 {
						fmt.Fprintf(log, "probe: step %d, %d tasks, %d forced episodes\n", step, p.TotalTasks, p.TotalEpisodes)
						return
					}
					fmt.Fprintf(log, "probe: %d/%d tasks, %d/%d episodes (%s)\n", p.Tasks, p.TotalTasks, p.Episodes, p.TotalEpisodes,
						time.Since(start).Round(time.Second))
				}})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\nwritten: %s/{%s,%s,%s}\n", res.Summary.Markdown(r.Config.Executor.Backend == "sim"),
				res.Dir, probetable.TableFile, probe.SummaryJSON, probe.SummaryMD)
			return nil
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "run folder (required)")
	cmd.Flags().IntVar(&step, "step", 0, "probe the learner and skill library of this step (required; 0: the untrained learner)")
	cmd.Flags().IntVar(&tasks, "tasks", probe.DefaultTasks, "training tasks to probe, balanced over the IID families")
	cmd.Flags().IntVar(&continuations, "continuations", probe.DefaultContinuations, "ρ continuations per task and legal first action")
	cmd.Flags().IntVar(&window, "target-window", probe.DefaultTargetWindow, "training steps, ending at --step, whose trained episodes give the loss targets (0: none)")
	cmd.MarkFlagRequired("run")
	return cmd
}
