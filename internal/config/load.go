package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data)
}

// Parse is Load for configuration text already in memory; name labels errors.
func Parse(name string, data []byte) (*Config, error) {
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
