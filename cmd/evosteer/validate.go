package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/stages/validate"
)

func newValidateCmd() *cobra.Command {
	var f stageFlags
	var check bool
	cmd := &cobra.Command{
		Use:   "validate --run DIR --step K [--force] [--check]",
		Short: "Judge candidate skills: record a step's pairs and run the sequential sign test",
		Long: `Validate training step K (paper 4.3 and appendix C): continue the skill-admission ledger from
the state step K-1's author left (author/ledger_state.arrow, which must agree with the
author/skills.arrow beside it), record the eligible pairs of step-NNNNNN/aggregate/pairs.arrow,
registering a new comparison (global index j) for every new comparison id, and, every
admission.validation_interval-th step, give each open comparison with new wins or losses one
look l:

  level = alpha / (j(j+1) l(l+1)), alpha/2 per direction
  p+ = P(Bin(D,1/2) >= W), p- = P(Bin(D,1/2) >= L), exact, D = W + L
  p- <= level/2: retire (checked first); p+ <= level/2: promote a candidate (defer_capacity
  when its family already holds max_validated_per_family), retain a validated skill; else defer

Writes step-NNNNNN/validate/ledger.arrow (the events of this step), skills.arrow (the library
after them) and ledger_state.arrow (the ledger's state, from which step K's author continues),
then prints a summary. With the sequential-validation ablation a candidate is promoted after
admission.fixed_count_k successful treatment arms instead; with skill-evolution ablated the
ledger is empty.

--check replays every ledger segment of steps 1..K (each event checked) and compares the
ledger state and library that step K's validate and author wrote with the replayed ones, row
for row; it prints "ok" or the first difference per stage and fails on a difference.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := f.runStage(cmd, cmd.ErrOrStderr(), validate.Stage{})
			if err != nil || !check {
				return err
			}
			results, err := skills.CheckStates(r, f.step)
			if err != nil {
				return fmt.Errorf("check: %w", err)
			}
			out := cmd.OutOrStdout()
			failed := 0
			fmt.Fprintf(out, "check against the replay of the ledger, steps 1..%d:\n", f.step)
			for _, c := range results {
				switch {
				case c.Absent:
					fmt.Fprintf(out, "  %-9s not written yet (run `evosteer %s --step %d --run %s`)\n", c.Stage, c.Stage, f.step, f.run)
				case c.Mismatch == "":
					fmt.Fprintf(out, "  %-9s ok (%d events, %d open comparisons)\n", c.Stage, c.Events, c.Open)
				default:
					failed++
					fmt.Fprintf(out, "  %-9s MISMATCH: %s\n", c.Stage, c.Mismatch)
				}
			}
			if failed > 0 {
				return fmt.Errorf("check: %d of %d ledger states differ from the replay", failed, len(results))
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&check, "check", false, "replay the ledger of steps 1..K and compare the stored states of step K's validate and author")
	return cmd
}
