package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// decodeStrict parses data as exactly one YAML document and decodes it into c. Before decoding
// it refuses what a strict decode would let through: an empty file, a second document, anchors
// and aliases (the decoder expands them, so an alias bomb costs memory exponential in the file's
// size), a null value (refuseNulls: the decoder leaves the default in place), and a fraction or a
// string where an integer is wanted (the decoder truncates 1.5 to 1).
// It returns the parsed file, which places range errors.
func decodeStrict(name string, data []byte, c *Config) (*ast.File, error) {
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, positioned(name, err)
	}
	if len(file.Docs) > 1 {
		doc := file.Docs[1]
		tok := doc.Start
		if tok == nil && doc.Body != nil {
			tok = doc.Body.GetToken()
		}
		return nil, at(name, tok, "a second YAML document starts here; a config file holds one document")
	}
	if len(file.Docs) == 0 || file.Docs[0].Body == nil {
		return nil, fmt.Errorf("config %s is empty: it sets no key (it holds only comments or blank lines); write the keys that change the defaults, e.g. \"steps: 40\"", name)
	}
	body := file.Docs[0].Body
	if err := refuseAliases(name, body); err != nil {
		return nil, err
	}
	if err := refuseNulls(name, body, "", nil); err != nil {
		return nil, err
	}
	if err := wholeNumbers(name, body, reflect.TypeOf(c).Elem(), ""); err != nil {
		return nil, err
	}
	if err := yaml.NodeToValue(body, c, yaml.Strict()); err != nil {
		return nil, positioned(name, err)
	}
	positiveZeros(reflect.ValueOf(c).Elem())
	return file, nil
}

// at formats an error at a token's line and column, or at the file when there is no token.
func at(name string, tok *token.Token, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if tok == nil {
		return fmt.Errorf("%s: %s", name, msg)
	}
	return fmt.Errorf("%s:%d:%d: %s", name, tok.Position.Line, tok.Position.Column, msg)
}

// aliasFinder stops at the first anchor, alias or merge key. The walk visits the parsed tree,
// in which an alias is one node, so it costs the file's size whatever the aliases would expand to.
type aliasFinder struct{ found ast.Node }

func (f *aliasFinder) Visit(n ast.Node) ast.Visitor {
	if f.found != nil {
		return nil
	}
	switch n.(type) {
	case *ast.AnchorNode, *ast.AliasNode, *ast.MergeKeyNode:
		f.found = n
		return nil
	}
	return f
}

// refuseAliases refuses YAML anchors, aliases and merge keys: a configuration has no need for
// them, and refusing them before decoding is what bounds the decoder's work by the file's size.
func refuseAliases(name string, body ast.Node) error {
	f := &aliasFinder{}
	ast.Walk(f, body)
	if f.found == nil {
		return nil
	}
	what := map[ast.NodeType]string{ast.AnchorType: "anchor", ast.AliasType: "alias", ast.MergeKeyType: "merge key"}[f.found.Type()]
	return at(name, f.found.GetToken(), "YAML %s %q refused: a config file may not use anchors, aliases or merge keys; write the values out", what, f.found.GetToken().Value)
}

// nullable lists the keys whose explicit null has a documented meaning (docs/LLM-EXECUTORS.md):
// the author's send_seed and disable_thinking take executor.openai's value while null. There, and
// only there, a null written out (null, ~) is kept; an empty value is refused there too.
var nullable = map[string]string{
	"author.send_seed":        "executor.openai.send_seed",
	"author.disable_thinking": "executor.openai.disable_thinking",
}

// refuseNulls refuses, at its line and column, every null of the document: an empty value
// ("tasks:" with nothing after it), ~, null, a null list entry or a null key. The decoder would
// leave a null key at its default, so "seed: ~" would hash as the default configuration while the
// file looks as if it set the seed. prev is the indicator before the value (the key's ":" or the
// entry's "-"): an empty value has no token of its own and is placed just after it.
func refuseNulls(name string, n ast.Node, key string, prev *token.Token) error {
	if tag, ok := n.(*ast.TagNode); ok {
		n = tag.Value
	}
	var errs []error
	switch v := n.(type) {
	case *ast.NullNode:
		tok := v.GetToken()
		if key == "" {
			return at(name, tok, "the document is null; write the keys that change the defaults, e.g. \"steps: 40\"")
		}
		if tok == nil || tok.Type == token.ImplicitNullType {
			if prev != nil {
				pos := *prev.Position
				pos.Column++
				tok = &token.Token{Position: &pos}
			}
			if inherit, ok := nullable[key]; ok {
				return at(name, tok, "%s: empty value (write null to take %s, a value to set it, or remove the key)", key, inherit)
			}
			if strings.HasSuffix(key, "]") {
				return at(name, tok, "%s: empty list entry (give a value or remove the entry)", key)
			}
			return at(name, tok, "%s: empty value (give a value or remove the key)", key)
		}
		if _, ok := nullable[key]; ok {
			return nil
		}
		if strings.HasSuffix(key, "]") {
			return at(name, tok, "%s: null list entry %q (give a value or remove the entry)", key, tok.Value)
		}
		return at(name, tok, "%s: null value %q; a null does not mean the default (give a value or remove the key)", key, tok.Value)
	case *ast.MappingNode, *ast.MappingValueNode:
		for _, mv := range mappingValues(v) {
			k := mv.Key
			if mk, ok := k.(*ast.MappingKeyNode); ok { // "? key"
				if inner, ok := mk.Value.(ast.MapKeyNode); ok {
					k = inner
				}
			}
			if _, ok := k.(*ast.NullNode); ok {
				where := key
				if where == "" {
					where = "the top level"
				}
				errs = append(errs, at(name, k.GetToken(), "%s: null key %q (name the key)", where, k.GetToken().Value))
				continue
			}
			errs = append(errs, refuseNulls(name, mv.Value, keyPath(key, k.GetToken().Value), mv.Start))
		}
	case *ast.SequenceNode:
		for i, e := range v.Values {
			var hyphen *token.Token
			if i < len(v.Entries) && v.Entries[i] != nil {
				hyphen = v.Entries[i].Start
			}
			errs = append(errs, refuseNulls(name, e, fmt.Sprintf("%s[%d]", key, i), hyphen))
		}
	}
	return errors.Join(errs...)
}

// mappingValues returns the key-value pairs of a mapping node (the parser gives a one-pair
// mapping as its pair alone), or nil for any other node.
func mappingValues(n ast.Node) []*ast.MappingValueNode {
	switch m := n.(type) {
	case *ast.MappingNode:
		return m.Values
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}
	}
	return nil
}

// wholeNumbers walks the parsed document along the Go type it decodes into and refuses, at the
// key's line and column, a value that an integer field would silently change: a fraction (1.5),
// an infinity or NaN. A whole number written as a float (1e5, 16.0) is kept. A quoted value of
// a number or boolean key ("2.0", "true") is refused alike for every scalar type: the decoder
// would accept some and refuse others. Keys the type lacks are left to the strict decoder, which
// names them.
func wholeNumbers(name string, n ast.Node, t reflect.Type, key string) error {
	if tag, ok := n.(*ast.TagNode); ok {
		n = tag.Value
	}
	var errs []error
	switch t.Kind() {
	case reflect.Struct:
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			fields[tag] = f.Type
		}
		for _, mv := range mappingValues(n) {
			k := mv.Key.GetToken().Value
			if ft, ok := fields[k]; ok {
				errs = append(errs, wholeNumbers(name, mv.Value, ft, keyPath(key, k)))
			}
		}
	case reflect.Map:
		for _, mv := range mappingValues(n) {
			errs = append(errs, wholeNumbers(name, mv.Value, t.Elem(), keyPath(key, mv.Key.GetToken().Value)))
		}
	case reflect.Slice:
		if seq, ok := n.(*ast.SequenceNode); ok {
			for i, v := range seq.Values {
				errs = append(errs, wholeNumbers(name, v, t.Elem(), fmt.Sprintf("%s[%d]", key, i)))
			}
		}
	case reflect.Float32, reflect.Float64:
		return unquoted(name, n, key, "a number")
	case reflect.Bool:
		return unquoted(name, n, key, "true or false")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if err := unquoted(name, n, key, "an integer"); err != nil {
			return err
		}
		var tok *token.Token
		var f float64
		switch v := n.(type) {
		case *ast.FloatNode:
			tok, f = v.Token, v.Value
		case *ast.InfinityNode, *ast.NanNode:
			tok, f = v.GetToken(), math.NaN()
		case *ast.StringNode: // the parser leaves 1e5 a string; the decoder reads it as a float
			tok = v.Token
			var err error
			if f, err = strconv.ParseFloat(v.Value, 64); err != nil {
				f = math.NaN()
			}
		default:
			return nil
		}
		if f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
			return at(name, tok, "%s: %q is not a whole number; the key takes an integer", key, tok.Value)
		}
	}
	return errors.Join(errs...)
}

// unquoted refuses a quoted string where key takes want (a number, or true or false).
func unquoted(name string, n ast.Node, key, want string) error {
	v, ok := n.(*ast.StringNode)
	if !ok || v.Token == nil || (v.Token.Type != token.DoubleQuoteType && v.Token.Type != token.SingleQuoteType) {
		return nil
	}
	return at(name, v.Token, "%s: %s is quoted; the key takes %s, written without quotes", key, strings.TrimSpace(v.Token.Origin), want)
}

// positiveZeros turns every -0 float of v into 0: -0.0 and 0 are the same setting and must give
// the configuration the same sha256.
func positiveZeros(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			positiveZeros(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				positiveZeros(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			positiveZeros(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			positiveZeros(e)
			v.SetMapIndex(k, e)
		}
	case reflect.Float32, reflect.Float64:
		if v.Float() == 0 && v.CanSet() {
			v.SetFloat(0)
		}
	}
}

// keyPath is the dotted path of key k under parent ("" at the top level).
func keyPath(parent, k string) string {
	if parent == "" {
		return k
	}
	return parent + "." + k
}
