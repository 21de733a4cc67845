package scoring

import "github.com/evosteer/evosteer-go/internal/tokenizer"

// The chat templates live in internal/tokenizer, shared with the in-process model: one
// implementation for both paths. The scorer applies the template itself rather than letting the
// server do it, because a scoring request carries token ids.

// ChatTemplate turns a system and a user message into the prompt text a reply follows
// (tokenizer.ChatTemplate).
type ChatTemplate = tokenizer.ChatTemplate

// Qwen3 is Qwen3's chat template with thinking off (tokenizer.Qwen3).
var Qwen3 = tokenizer.Qwen3

// Templates are the chat templates by name (tokenizer.Templates).
var Templates = tokenizer.Templates
