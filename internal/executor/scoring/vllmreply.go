package scoring

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A vLLM reply with prompt_logprobs holds an entry for every position of every sequence sent
// (some 75 bytes each, 8 MiB for 112,000 positions), of which a decision reads the
// continuations' few. encoding/json spends some 80 ms of CPU on such a reply, checking it and
// then skipping each position into a json.RawMessage; readCompletionReply checks it in one pass
// and keeps only the positions from the prompt's end on.

// vllmChoice is what decodePromptLogprobs reads of one element of the reply's choices.
type vllmChoice struct {
	index       int
	hasIndex    bool              // index is a number, not null or missing
	hasLogprobs bool              // prompt_logprobs is an array, not null or missing
	positions   int               // prompt_logprobs' length
	tail        []json.RawMessage // its entries from position n on
}

// maxDepth bounds the nesting of the values readCompletionReply skips, as encoding/json's does.
const maxDepth = 10000

// readCompletionReply reads raw, which must be one JSON value as encoding/json accepts it (an
// object, or null for no choices), into each element of its "choices" (an array, or null): its
// "index" and its "prompt_logprobs" (an array, or null), of whose entries those from position n
// on are kept. Keys match as encoding/json matches a struct's field names: case-insensitively,
// the last of duplicates winning.
func readCompletionReply(raw []byte, n int) ([]vllmChoice, error) {
	r := &jsonReader{b: raw}
	var choices []vllmChoice
	r.space()
	if r.literal("null") {
		return nil, r.end()
	}
	err := r.object(func(key string) error {
		if !strings.EqualFold(key, "choices") {
			return r.skip(1)
		}
		choices = nil
		if r.literal("null") {
			return nil
		}
		return r.array(func(int) error {
			var ch vllmChoice
			if !r.literal("null") {
				if err := r.choice(&ch, n); err != nil {
					return err
				}
			}
			choices = append(choices, ch)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return choices, r.end()
}

// choice reads one choice object into ch.
func (r *jsonReader) choice(ch *vllmChoice, n int) error {
	return r.object(func(key string) error {
		switch {
		case strings.EqualFold(key, "index"):
			ch.hasIndex = false
			if r.literal("null") {
				return nil
			}
			start := r.i
			if err := r.number(); err != nil {
				return err
			}
			i, err := strconv.Atoi(string(r.b[start:r.i]))
			if err != nil {
				return fmt.Errorf("the index %s is not an int", r.b[start:r.i])
			}
			ch.index, ch.hasIndex = i, true
			return nil
		case strings.EqualFold(key, "prompt_logprobs"):
			ch.hasLogprobs, ch.positions, ch.tail = false, 0, nil
			if r.literal("null") {
				return nil
			}
			ch.hasLogprobs = true
			return r.array(func(pos int) error {
				ch.positions++
				start := r.i
				if err := r.skip(1); err != nil {
					return err
				}
				if pos >= n {
					ch.tail = append(ch.tail, json.RawMessage(r.b[start:r.i]))
				}
				return nil
			})
		default:
			return r.skip(1)
		}
	})
}

// jsonReader reads JSON from b[i:], checking it as encoding/json's scanner does (RFC 8259; a
// string's bytes are not checked to be UTF-8, which encoding/json replaces rather than refuses).
type jsonReader struct {
	b []byte
	i int
}

var errJSONEnd = errors.New("unexpected end of JSON input")

func (r *jsonReader) fail(what string) error {
	if r.i >= len(r.b) {
		return errJSONEnd
	}
	return fmt.Errorf("invalid character %q at byte %d %s", r.b[r.i], r.i, what)
}

// space skips whitespace.
func (r *jsonReader) space() {
	b, i := r.b, r.i
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	r.i = i
}

// end checks that nothing but whitespace follows the value.
func (r *jsonReader) end() error {
	r.space()
	if r.i < len(r.b) {
		return r.fail("after the top-level value")
	}
	return nil
}

// literal consumes lit (true, false, null) if it is next, after whitespace.
func (r *jsonReader) literal(lit string) bool {
	r.space()
	if len(r.b)-r.i >= len(lit) && string(r.b[r.i:r.i+len(lit)]) == lit {
		r.i += len(lit)
		return true
	}
	return false
}

// object reads an object, calling field with each key with r before its value, which field
// must consume.
func (r *jsonReader) object(field func(key string) error) error {
	r.space()
	if r.i >= len(r.b) || r.b[r.i] != '{' {
		return r.fail("where an object begins")
	}
	r.i++
	r.space()
	if r.i < len(r.b) && r.b[r.i] == '}' {
		r.i++
		return nil
	}
	for {
		r.space()
		start := r.i
		if err := r.str(); err != nil {
			return err
		}
		key := string(r.b[start+1 : r.i-1])
		if strings.IndexByte(key, '\\') >= 0 {
			if err := json.Unmarshal(r.b[start:r.i], &key); err != nil {
				return err
			}
		}
		r.space()
		if r.i >= len(r.b) || r.b[r.i] != ':' {
			return r.fail("after an object key")
		}
		r.i++
		if err := field(key); err != nil {
			return err
		}
		r.space()
		if r.i >= len(r.b) {
			return errJSONEnd
		}
		switch r.b[r.i] {
		case ',':
			r.i++
		case '}':
			r.i++
			return nil
		default:
			return r.fail("after an object's value")
		}
	}
}

// array reads an array, calling elem with each element's position with r before it, which elem
// must consume.
func (r *jsonReader) array(elem func(pos int) error) error {
	r.space()
	if r.i >= len(r.b) || r.b[r.i] != '[' {
		return r.fail("where an array begins")
	}
	r.i++
	r.space()
	if r.i < len(r.b) && r.b[r.i] == ']' {
		r.i++
		return nil
	}
	for pos := 0; ; pos++ {
		r.space()
		if err := elem(pos); err != nil {
			return err
		}
		r.space()
		if r.i >= len(r.b) {
			return errJSONEnd
		}
		switch r.b[r.i] {
		case ',':
			r.i++
		case ']':
			r.i++
			return nil
		default:
			return r.fail("after an array element")
		}
	}
}

// skip consumes one value, at nesting depth depth, allocating nothing.
func (r *jsonReader) skip(depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("exceeded max depth at byte %d", r.i)
	}
	r.space()
	if r.i >= len(r.b) {
		return errJSONEnd
	}
	switch c := r.b[r.i]; {
	case c == '{', c == '[':
		return r.skipContainer(depth)
	case c == '"':
		return r.str()
	case c == '-' || '0' <= c && c <= '9':
		return r.number()
	case r.literal("true"), r.literal("false"), r.literal("null"):
		return nil
	default:
		return r.fail("looking for the beginning of a value")
	}
}

// skipContainer consumes the object or array at r.i.
func (r *jsonReader) skipContainer(depth int) error {
	obj := r.b[r.i] == '{'
	closing := byte(']')
	if obj {
		closing = '}'
	}
	r.i++
	r.space()
	if r.i < len(r.b) && r.b[r.i] == closing {
		r.i++
		return nil
	}
	for {
		if obj {
			r.space()
			if err := r.str(); err != nil {
				return err
			}
			r.space()
			if r.i >= len(r.b) || r.b[r.i] != ':' {
				return r.fail("after an object key")
			}
			r.i++
		}
		if err := r.skip(depth + 1); err != nil {
			return err
		}
		r.space()
		if r.i >= len(r.b) {
			return errJSONEnd
		}
		switch r.b[r.i] {
		case ',':
			r.i++
		case closing:
			r.i++
			return nil
		default:
			return r.fail("after a value in an object or array")
		}
	}
}

// str consumes a string, its escapes checked.
func (r *jsonReader) str() error {
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return r.fail("where a string begins")
	}
	r.i++
	for r.i < len(r.b) {
		b, i := r.b, r.i
		for i < len(b) && plain[b[i]] {
			i++
		}
		r.i = i
		if r.i >= len(r.b) {
			break
		}
		switch c := r.b[r.i]; {
		case c == '"':
			r.i++
			return nil
		case c < 0x20:
			return r.fail("in a string literal")
		}
		r.i++ // the backslash
		if r.i >= len(r.b) {
			return errJSONEnd
		}
		switch r.b[r.i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			r.i++
		case 'u':
			r.i++
			for range 4 {
				if r.i >= len(r.b) {
					return errJSONEnd
				}
				if !isHex(r.b[r.i]) {
					return r.fail("in a \\u escape")
				}
				r.i++
			}
		default:
			return r.fail("in a string escape code")
		}
	}
	return errJSONEnd
}

// plain holds the bytes that stand for themselves in a string: all but '"', '\\' and controls.
var plain = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// number consumes a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *jsonReader) number() error {
	r.space()
	if r.i < len(r.b) && r.b[r.i] == '-' {
		r.i++
	}
	switch {
	case r.i >= len(r.b):
		return errJSONEnd
	case r.b[r.i] == '0':
		r.i++
	case '1' <= r.b[r.i] && r.b[r.i] <= '9':
		r.digits()
	default:
		return r.fail("in numeric literal")
	}
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		if !r.digits() {
			return r.fail("after decimal point in numeric literal")
		}
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		if !r.digits() {
			return r.fail("in exponent of numeric literal")
		}
	}
	return nil
}

// digits consumes [0-9]* and says whether there was one.
func (r *jsonReader) digits() bool {
	start := r.i
	for r.i < len(r.b) && '0' <= r.b[r.i] && r.b[r.i] <= '9' {
		r.i++
	}
	return r.i > start
}
