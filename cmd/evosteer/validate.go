package main

import (
	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/stages/validate"
)

func newValidateCmd() *cobra.Command {
	var f stageFlags
	cmd := &cobra.Command{
		Use:   "validate --run DIR --step K [--force]",
		Short: "Judge candidate skills: record a step's pairs and run the sequential sign test",
		Long: `Validate training step K (paper 4.3 and appendix C): rebuild the skill-admission ledger by
replaying every earlier segment (checked against step K-1's author/skills.arrow), record the
eligible pairs of step-NNNNNN/aggregate/pairs.arrow, registering a new comparison (global index
j) for every new comparison id, and, every admission.validation_interval-th step, give each
open comparison with new wins or losses one look l:

  level = alpha / (j(j+1) l(l+1)), alpha/2 per direction
  p+ = P(Bin(D,1/2) >= W), p- = P(Bin(D,1/2) >= L), exact, D = W + L
  p- <= level/2: retire (checked first); p+ <= level/2: promote a candidate (defer_capacity
  when its family already holds max_validated_per_family), retain a validated skill; else defer

Writes step-NNNNNN/validate/ledger.arrow (the events of this step) and skills.arrow (the library
after them), then prints a summary. With the sequential-validation ablation a candidate is
promoted after admission.fixed_count_k successful treatment arms instead; with skill-evolution
ablated both files are empty.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := f.runStage(cmd, cmd.ErrOrStderr(), validate.Stage{})
			return err
		},
	}
	f.register(cmd)
	return cmd
}
