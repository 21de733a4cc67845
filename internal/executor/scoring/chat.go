package scoring

import (
	"crypto/sha256"
	"encoding/hex"
)

// Qwen3 is the chat template of the Qwen3 family (ChatML) with thinking off, applied here rather
// than by the server because a scoring request carries token ids: a system and a user message,
// then the generation prompt with the empty thinking block the model's own template writes for
// enable_thinking=false, so the scored reply starts where the model's answer would.
var Qwen3 = ChatTemplate{
	Name:      "qwen3",
	EndOfTurn: "<|im_end|>",
	render: func(system, user string) string {
		return "<|im_start|>system\n" + system + "<|im_end|>\n" +
			"<|im_start|>user\n" + user + "<|im_end|>\n" +
			"<|im_start|>assistant\n<think>\n\n</think>\n\n"
	},
}

// ChatTemplate turns a system and a user message into the prompt text a reply follows.
type ChatTemplate struct {
	Name      string // the configuration's name for it
	EndOfTurn string // the special token that ends a reply: the EOS of every candidate
	render    func(system, user string) string
}

// Prompt is the prompt text of a system and a user message, ending where the reply begins.
func (t ChatTemplate) Prompt(system, user string) string { return t.render(system, user) }

// PromptSHA256 is the lower-case hex sha256 of Prompt(system, user)'s UTF-8 bytes: the text the
// scorer has the server tokenise (the prompts table's prompt_sha256).
func (t ChatTemplate) PromptSHA256(system, user string) string {
	sum := sha256.Sum256([]byte(t.Prompt(system, user)))
	return hex.EncodeToString(sum[:])
}

// Templates are the chat templates by name.
var Templates = map[string]ChatTemplate{Qwen3.Name: Qwen3}
