package scoring

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// A vLLM reply with prompt_logprobs holds an entry for every position of every sequence sent
// (some 75 bytes each, 8 MiB for 112,000 positions), of which a decision reads the
// continuations' few. encoding/json spends some 80 ms of CPU on such a reply, checking it and
// then skipping each position into a json.RawMessage; readCompletionReply reads it once as a
// stream of tokens (jsontext, the mirror of Go's encoding/json/v2), skipping the positions before
// the prompt's end and keeping only the others.

// vllmChoice is what decodePromptLogprobs reads of one element of the reply's choices.
type vllmChoice struct {
	index       int
	hasIndex    bool              // index is a number, not null or missing
	hasLogprobs bool              // prompt_logprobs is an array, not null or missing
	positions   int               // prompt_logprobs' length
	tail        []json.RawMessage // its entries from position n on
}

// readCompletionReply reads raw, which must be one JSON value (an object, or null for no
// choices), into each element of its "choices" (an array, or null): its "index" and its
// "prompt_logprobs" (an array, or null), of whose entries those from position n on are kept.
// Keys match as encoding/json matches a struct's field names: case-insensitively, the last of
// duplicates winning; a string's bytes need not be UTF-8, as encoding/json accepts them.
func readCompletionReply(raw []byte, n int) ([]vllmChoice, error) {
	d := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	var choices []vllmChoice
	if d.PeekKind() == 'n' {
		if _, err := d.ReadToken(); err != nil {
			return nil, err
		}
		return nil, atEnd(d)
	}
	err := object(d, "the reply", func(key string) error {
		if !strings.EqualFold(key, "choices") {
			return d.SkipValue()
		}
		choices = nil
		return array(d, "choices", func(int) error {
			var ch vllmChoice
			if d.PeekKind() == 'n' {
				_, err := d.ReadToken()
				choices = append(choices, ch)
				return err
			}
			if err := readChoice(d, &ch, n); err != nil {
				return err
			}
			choices = append(choices, ch)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return choices, atEnd(d)
}

// readChoice reads one choice object into ch.
func readChoice(d *jsontext.Decoder, ch *vllmChoice, n int) error {
	return object(d, "a choice", func(key string) error {
		switch {
		case strings.EqualFold(key, "index"):
			ch.hasIndex = false
			tok, err := d.ReadToken()
			if err != nil || tok.Kind() == 'n' {
				return err
			}
			if tok.Kind() != '0' {
				return fmt.Errorf("the index is a %s, not a number", tok.Kind())
			}
			i, err := strconv.Atoi(tok.String())
			if err != nil {
				return fmt.Errorf("the index %s is not an int", tok.String())
			}
			ch.index, ch.hasIndex = i, true
			return nil
		case strings.EqualFold(key, "prompt_logprobs"):
			ch.hasLogprobs, ch.positions, ch.tail = false, 0, nil
			if d.PeekKind() == 'n' {
				_, err := d.ReadToken()
				return err
			}
			ch.hasLogprobs = true
			return array(d, "prompt_logprobs", func(pos int) error {
				ch.positions++
				if pos < n {
					return d.SkipValue()
				}
				v, err := d.ReadValue()
				if err != nil {
					return err
				}
				ch.tail = append(ch.tail, json.RawMessage(v.Clone()))
				return nil
			})
		default:
			return d.SkipValue()
		}
	})
}

// object reads an object, calling member with each key while the decoder stands at its value
// (which member must read).
func object(d *jsontext.Decoder, what string, member func(key string) error) error {
	if err := open(d, what, '{'); err != nil {
		return err
	}
	for d.PeekKind() != '}' {
		key, err := d.ReadToken()
		if err != nil {
			return err
		}
		if err := member(key.String()); err != nil {
			return err
		}
	}
	_, err := d.ReadToken()
	return err
}

// array reads an array (or null, as an empty one), calling elem with each element's index while
// the decoder stands at it (which elem must read).
func array(d *jsontext.Decoder, what string, elem func(int) error) error {
	if d.PeekKind() == 'n' {
		_, err := d.ReadToken()
		return err
	}
	if err := open(d, what, '['); err != nil {
		return err
	}
	for i := 0; d.PeekKind() != ']'; i++ {
		if err := elem(i); err != nil {
			return err
		}
	}
	_, err := d.ReadToken()
	return err
}

// open reads the token that opens what, which must be kind ('{' or '[').
func open(d *jsontext.Decoder, what string, kind jsontext.Kind) error {
	tok, err := d.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != kind {
		return fmt.Errorf("%s is a %s, not %s", what, tok.Kind(), kind)
	}
	return nil
}

// atEnd checks that nothing but whitespace follows the reply's value.
func atEnd(d *jsontext.Decoder) error {
	if _, err := d.ReadToken(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("another value follows the reply")
		}
		return err
	}
	return nil
}
