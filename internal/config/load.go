package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	evosteer "github.com/evosteer/evosteer-go"
)

// defaultName labels errors in the built-in defaults; they are a bug, never a user's mistake.
const defaultName = "pipeline.yaml (built-in default)"

// Default returns the built-in configuration, the embedded pipeline.yaml.
func Default() (*Config, error) {
	c := new(Config)
	if _, err := decodeStrict(defaultName, evosteer.PipelineYAML, c); err != nil {
		return nil, err
	}
	if err := c.validate(defaultName, nil); err != nil {
		return nil, err
	}
	return c, nil
}

// Load reads a configuration file and overlays it on the defaults, so a file may hold only the
// keys it changes. Lists and maps in the file replace the default ones whole.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	// Read one byte past the cap, never the whole of a huge or endless file (/dev/zero).
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", path, err)
	}
	return Parse(path, data)
}

// MaxFileBytes bounds a configuration file: the default is about 20 KiB, and the YAML parser's
// time and memory grow faster than the file, so a larger one is refused before parsing.
const MaxFileBytes = 256 << 10

// MaxDepth bounds the nesting of a configuration (block indentation levels and flow brackets);
// the deepest key of the schema is five levels down.
const MaxDepth = 32

// Parse is Load for configuration text already in memory; name labels errors.
func Parse(name string, data []byte) (*Config, error) {
	if err := checkShape(name, data); err != nil {
		return nil, err
	}
	def, err := Default()
	if err != nil {
		return nil, err
	}
	c := *def
	// Lists and maps are replaced, not merged, when the file sets them.
	c.Families, c.OODFamilies, c.Ablations = nil, nil, nil
	file, err := decodeStrict(name, data, &c)
	if err != nil {
		return nil, err
	}
	if c.Families == nil {
		c.Families = def.Families
	}
	if c.OODFamilies == nil {
		c.OODFamilies = def.OODFamilies
	}
	if c.Ablations == nil {
		c.Ablations = []string{}
	}
	if err := c.validate(name, file); err != nil {
		return nil, err
	}
	return &c, nil
}

// checkShape refuses, before the parser sees it, a file larger than MaxFileBytes or nested
// deeper than MaxDepth: by open flow brackets ([ and { outside quotes and comments) or by
// indentation (a level per two columns, as the default file indents).
func checkShape(name string, data []byte) error {
	if len(data) > MaxFileBytes {
		return fmt.Errorf("config %s is larger than %d KiB; a configuration holds the keys that change the defaults (about 20 KiB in all)", name, MaxFileBytes>>10)
	}
	depth, line, col := 0, 1, 0
	indent, comment := true, false
	var quote byte
	for _, c := range data {
		col++
		if c == '\n' {
			line, col, indent, comment = line+1, 0, true, false
			continue
		}
		if indent {
			if c == ' ' {
				if col > 2*MaxDepth {
					return fmt.Errorf("%s:%d:%d: indented deeper than %d levels; a configuration needs at most a few", name, line, col, MaxDepth)
				}
				continue
			}
			indent = false
		}
		switch {
		case comment:
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			comment = true
		case c == '[' || c == '{':
			if depth++; depth > MaxDepth {
				return fmt.Errorf("%s:%d:%d: nested deeper than %d levels; a configuration needs at most a few", name, line, col, MaxDepth)
			}
		case c == ']' || c == '}':
			depth = max(0, depth-1)
		}
	}
	return nil
}

// positioned turns a go-yaml error into "FILE:LINE:COL: message", the form editors jump to.
func positioned(name string, err error) error {
	var yerr yaml.Error
	if errors.As(err, &yerr) && yerr.GetToken() != nil {
		tok := yerr.GetToken()
		msg := yerr.GetMessage()
		var terr *yaml.TypeError
		if errors.As(err, &terr) {
			// go-yaml names the Go struct, not the key; the key is the token before the colon.
			key := "value"
			if colon := tok.Prev; colon != nil && colon.Type == token.MappingValueType && colon.Prev != nil {
				key = colon.Prev.Value
			}
			msg = fmt.Sprintf("%s: %q has the wrong type, want %s", key, tok.Value, terr.DstType)
		}
		return fmt.Errorf("%s:%d:%d: %s", name, tok.Position.Line, tok.Position.Column, msg)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// position finds where a dotted key ("anchortb.beta") is set in the parsed file.
func position(file *ast.File, key string) (line, col int, ok bool) {
	if file == nil {
		return 0, 0, false
	}
	p, err := yaml.PathString("$." + key)
	if err != nil {
		return 0, 0, false
	}
	node, err := p.FilterFile(file)
	if err != nil || node == nil || node.GetToken() == nil {
		return 0, 0, false
	}
	pos := node.GetToken().Position
	return pos.Line, pos.Column, true
}

// SHA256 is the hash of the resolved configuration: sha256 of its canonical JSON (struct field
// order, sorted map keys), so two files that resolve to the same values share a hash.
func (c *Config) SHA256() string {
	sum := sha256.Sum256(c.canonicalJSON())
	return hex.EncodeToString(sum[:])
}

func (c *Config) canonicalJSON() []byte {
	b, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("config: marshal: %v", err)) // plain data; cannot fail
	}
	return b
}

// YAML renders the resolved configuration; Parse of the result gives the same configuration.
func (c *Config) YAML() []byte {
	b, err := yaml.MarshalWithOptions(c, yaml.IndentSequence(true))
	if err != nil {
		panic(fmt.Sprintf("config: marshal: %v", err)) // plain data; cannot fail
	}
	return b
}

// Clone returns a deep copy of the configuration.
func (c *Config) Clone() *Config {
	var out Config
	if err := json.Unmarshal(c.canonicalJSON(), &out); err != nil {
		panic(fmt.Sprintf("config: clone: %v", err)) // the JSON was just written from the same type
	}
	return &out
}
