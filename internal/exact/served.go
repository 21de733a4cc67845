package exact

import (
	"context"
	"fmt"

	"github.com/evosteer/evosteer-go/internal/executor/scoring"
)

// WithServedReference returns a copy of w whose reference ρ is a served language model: in every
// state, log ρ(a|s) is the scorer's masked likelihood of action a's canonical JSON (actionTexts)
// after systemPrompt and the state's user message (userMessage), as a served ρ enters a
// decision row (internal/episode's servedReference). The world's states are few, so every one is
// scored here, once: training then costs what it costs with the built-in prior, and P* is computed
// from the same ρ the rows carry.
func (w *World) WithServedReference(ctx context.Context, scorer *scoring.Scorer) (*World, error) {
	out := *w
	out.served = make([][][]float32, w.Tasks())
	for q := range w.Tasks() {
		states := w.states(q)
		out.served[q] = make([][]float32, len(states))
		for _, s := range states {
			actions := w.actionTexts(s)
			scored, err := scorer.Score(ctx, systemPrompt, w.userMessage(s, actions), actions)
			if err != nil {
				return nil, fmt.Errorf("exact world: served reference: task %s, state %d: %w", w.TaskID(q), w.index(s), err)
			}
			logits := make([]float32, len(scored.LogProbs))
			for a, lp := range scored.LogProbs {
				logits[a] = float32(lp)
			}
			out.served[q][w.index(s)] = logits
		}
	}
	return &out, nil
}
