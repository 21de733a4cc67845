package main

import (
	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/stages/author"
)

func newAuthorCmd() *cobra.Command {
	var f stageFlags
	cmd := &cobra.Command{
		Use:   "author --run DIR --step K [--force]",
		Short: "Propose candidate skills in the step's author windows",
		Long: `Open the author windows of training step K (docs/METHOD.md §5.3–5.4): none before
author.start_step (warm-up), author.start_families at it, then one every author.interval steps,
each for the family with the highest priority (fewest skills first) that has room for a
candidate.

A window shows the author (author.backend: sim, the simulated author of the embedded world, or
openai, an OpenAI-compatible chat endpoint at author.base_url with author.model and the API key
from the environment variable named by author.api_key_env) the family's skills, statistics and
up to author.max_trajectories episodes of step K and of the evidence pool carried over the
earlier steps (author.evidence_pool per family). Its answer becomes a candidate unless
it is null, a duplicate of a library skill, or breaks the output rules (sizes, evidence talk,
a repeated name, a quoted task prompt); a rejected answer wastes only its window.

Needs step K's validate output, step K-1's author output and step K's rollout episodes (read
every step while an evidence pool is carried). Writes
step-NNNNNN/author/{proposals,ledger,skills,ledger_state,evidence_pool,author_state}.arrow (and
sim_truth.arrow with the sim executor: the candidates' hidden effects); skills.arrow is the
library step K+1's rollout uses, ledger_state.arrow the ledger's state validate K+1 continues
from, evidence_pool.arrow and author_state.arrow the pool and the count of windows without a
candidate per family that author K+1 continues from. Then prints one line per window.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := f.runStage(cmd, cmd.ErrOrStderr(), author.Stage{})
			return err
		},
	}
	f.register(cmd)
	return cmd
}
