package qwen3

import (
	"fmt"

	"github.com/evosteer/evosteer-go/internal/tokenizer"
)

// ChatTemplate is the template a controller prompt is rendered with: the one tokenizer_config.json's
// chat_template is recognised as, or Qwen3's where the folder has none (lm check says which).
func (f *Folder) ChatTemplate() (tokenizer.ChatTemplate, error) {
	if f.TokenizerConfig.ChatTemplateSHA256 == "" {
		return tokenizer.Qwen3, nil
	}
	return f.TokenizerConfig.ChatTemplate()
}

// NewDecision is a decision over candidate replies to a system and a user message, tokenised in
// process exactly as the served scorer has a server tokenise it (internal/executor/scoring): the
// template's prompt text, then each candidate's text followed by the template's end of turn,
// which must be one token. The candidates must differ (their paths are then prefix-free).
func NewDecision(tok *tokenizer.Tokenizer, template tokenizer.ChatTemplate, system, user string, candidates []string) (Decision, error) {
	eos, ok := tok.TokenID(template.EndOfTurn)
	if !ok {
		return Decision{}, fmt.Errorf("qwen3: the %s template's end of turn %q is not a token of the tokenizer", template.Name, template.EndOfTurn)
	}
	prompt, err := tok.Encode(template.Prompt(system, user))
	if err != nil {
		return Decision{}, fmt.Errorf("qwen3: the prompt: %w", err)
	}
	d := Decision{Prompt: prompt, Actions: make([][]int, len(candidates))}
	for i, c := range candidates {
		ids, err := tok.Encode(c)
		if err != nil {
			return Decision{}, fmt.Errorf("qwen3: candidate %d: %w", i, err)
		}
		d.Actions[i] = append(ids, eos)
	}
	return d, nil
}
