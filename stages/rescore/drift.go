package rescore

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor/scoring"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/schema"
)

// sampled is a prompts row drawn for the drift check, with where it came from and its decision.
type sampled struct {
	path     string
	row      int
	prompt   schema.PromptRow
	decision *schema.DecisionRow
}

// drift re-queries the served reference sr for a fixed share (sr.RescoreSample) of the decisions
// the prompts files hold, drawn from seed (the same subset every rerun), each rebuilt from its
// stored user message and its decision's legal actions, and returns one row per sampled decision:
// its legal action whose log ρ moved most from the recorded prior_logits. It fails on a prompt
// that cannot be rebuilt exactly (another system prompt, template or model; a text whose hash or
// token count differs from the recorded one) and when the largest drift exceeds
// sr.DriftTolerance. It changes no stored log ρ.
func drift(ctx context.Context, sr *config.ServedReference, seed uint64, promptFiles []string, decs []schema.DecisionRow) ([]schema.RhoDriftRow, error) {
	byKey := make(map[string]*schema.DecisionRow, len(decs))
	for i := range decs {
		byKey[decisionKey(decs[i].EpisodeID, decs[i].T)] = &decs[i]
	}
	var all []sampled
	for _, p := range promptFiles {
		rows, err := schema.ReadFile[schema.PromptRow](schema.Prompts, p)
		if err != nil {
			return nil, err
		}
		for i, row := range rows {
			d, ok := byKey[decisionKey(row.EpisodeID, row.T)]
			if !ok {
				return nil, fmt.Errorf("rescore: %s row %d: decision %d of episode %s is not in the step's decisions", p, i, row.T, row.EpisodeID)
			}
			all = append(all, sampled{path: p, row: i, prompt: row, decision: d})
		}
	}
	k := int(math.Ceil(sr.RescoreSample * float64(len(all))))
	if k == 0 {
		return []schema.RhoDriftRow{}, nil
	}
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))
	pick := rng.Perm(len(all))[:k]
	slices.Sort(pick)
	scorer, err := scoring.FromConfig(ctx, sr)
	if err != nil {
		return nil, fmt.Errorf("rescore: %w", err)
	}
	// A decision whose prompt and legal actions an earlier sampled one has is answered by that
	// one's request (the scorer's cache would, in whichever order the requests finish): it is
	// re-queried after the first, so the rows' requests and tokens_sent do not depend on timing.
	out := make([]schema.RhoDriftRow, k)
	leader := map[string]int{}
	var first, rest []int
	for j, i := range pick {
		key := all[i].prompt.PromptSHA256 + "\x00" + strings.Join(all[i].decision.LegalActions, "\x00")
		if _, ok := leader[key]; ok {
			rest = append(rest, j)
			continue
		}
		leader[key] = j
		first = append(first, j)
	}
	for _, js := range [][]int{first, rest} {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(sr.MaxConcurrency)
		for _, j := range js {
			g.Go(func() error {
				var err error
				out[j], err = requery(gctx, sr, scorer, all[pick[j]])
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
	}
	worst := out[0]
	for _, r := range out[1:] {
		if r.Drift > worst.Drift {
			worst = r
		}
	}
	if worst.Drift > sr.DriftTolerance {
		return nil, fmt.Errorf("rescore: served ρ drift %.3g nats > served_reference.drift_tolerance %g at episode %s decision %d action %s: log ρ %.6g re-queried, %.6g recorded by the rollout (the server at %s no longer scores the rollout's prompts as it did)",
			worst.Drift, sr.DriftTolerance, worst.EpisodeID, worst.T, worst.ActionJSON, worst.LogpRequeried, worst.LogpRecorded, sr.BaseURL)
	}
	return out, nil
}

// requery scores s's decision again from its stored prompt and legal actions.
func requery(ctx context.Context, sr *config.ServedReference, scorer *scoring.Scorer, s sampled) (schema.RhoDriftRow, error) {
	p, d := s.prompt, s.decision
	at := fmt.Sprintf("rescore: %s row %d (decision %d of episode %s)", s.path, s.row, p.T, p.EpisodeID)
	switch {
	case p.SystemPromptID != orchestra.ControllerSystemPromptID:
		return schema.RhoDriftRow{}, fmt.Errorf("%s: system_prompt_id %q, this build's controller system prompt is %q: the prompt cannot be rebuilt", at, p.SystemPromptID, orchestra.ControllerSystemPromptID)
	case p.Template != sr.Template || p.Model != sr.Model:
		return schema.RhoDriftRow{}, fmt.Errorf("%s: template %q, model %q; served_reference has template %q, model %q", at, p.Template, p.Model, sr.Template, sr.Model)
	case scorer.Template().PromptSHA256(orchestra.ControllerSystemPrompt, p.UserMessage) != p.PromptSHA256:
		return schema.RhoDriftRow{}, fmt.Errorf("%s: prompt_sha256 %s is not the sha256 of the rendered prompt of user_message", at, p.PromptSHA256)
	}
	scored, err := scorer.Score(ctx, orchestra.ControllerSystemPrompt, p.UserMessage, d.LegalActions)
	if err != nil {
		return schema.RhoDriftRow{}, fmt.Errorf("%s: %w", at, err)
	}
	if scored.PromptTokens != int(p.PromptTokens) {
		return schema.RhoDriftRow{}, fmt.Errorf("%s: the server tokenises the prompt to %d tokens, prompt_tokens recorded %d: not the rollout's tokenizer", at, scored.PromptTokens, p.PromptTokens)
	}
	row := schema.RhoDriftRow{EpisodeID: p.EpisodeID, T: p.T, Drift: -1, Requests: int32(scored.Requests), TokensSent: int64(scored.TokensSent)}
	for i, lp := range scored.LogProbs {
		recorded := float64(d.PriorLogits[i])
		if dd := math.Abs(lp - recorded); dd > row.Drift {
			row.ActionJSON, row.LogpRecorded, row.LogpRequeried, row.Drift = d.LegalActions[i], recorded, lp, dd
		}
	}
	return row, nil
}

// decisionKey identifies a decision of the step.
func decisionKey(episode string, t int32) string { return fmt.Sprintf("%s#%d", episode, t) }
