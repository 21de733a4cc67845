package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dlclark/regexp2/v2"
)

// Options tune a loaded tokenizer; the zero value is the default.
type Options struct {
	// MatchTimeout bounds one regex match of a Split pre-tokenizer (default 1s): regexp2
	// backtracks, and a hostile pattern must fail rather than hang. Qwen's pattern matches a
	// 1 MiB run of spaces, its longest single match, in about 0.5 s on the 2-core CI machine.
	MatchTimeout time.Duration
	// CacheSize is how many distinct pre-tokens keep their ids (default 1<<16; negative: none).
	CacheSize int
}

const (
	defaultMatchTimeout = time.Second
	defaultCacheSize    = 1 << 16
)

// Load reads a tokenizer.json.
func Load(path string, opt Options) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return Parse(filepath.Base(path), data, opt)
}

// Parse builds a tokenizer from the bytes of a tokenizer.json; name is the file's name in errors.
func Parse(name string, data []byte, opt Options) (*Tokenizer, error) {
	if opt.MatchTimeout <= 0 {
		opt.MatchTimeout = defaultMatchTimeout
	}
	if opt.CacheSize == 0 {
		opt.CacheSize = defaultCacheSize
	}
	p := parser{file: name}
	root, err := p.object("", data)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{file: name, timeout: opt.MatchTimeout}
	if opt.CacheSize > 0 {
		t.cache = newCache(opt.CacheSize)
	}
	if err := root.only("version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer", "post_processor", "decoder", "model"); err != nil {
		return nil, err
	}
	for _, field := range []string{"truncation", "padding"} {
		if !root.null(field) {
			return nil, root.refuse(field, "is not implemented (only null)")
		}
	}
	steps := []func() error{
		func() error { return p.model(t, root) },
		func() error { return p.normalizer(t, root) },
		func() error { return p.preTokenizer(t, root) },
		func() error { return p.byteLevelOnly(root, "post_processor", true) },
		func() error { return p.byteLevelOnly(root, "decoder", false) },
		func() error { return p.addedTokens(t, root) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// parser reads the JSON of one file, naming the file and the field in every error.
type parser struct{ file string }

// object is one JSON object of the file at path.
type object struct {
	p      *parser
	path   string
	fields map[string]json.RawMessage
}

func (p *parser) errorf(path, format string, args ...any) error {
	if path == "" {
		return fmt.Errorf("tokenizer: %s: %s", p.file, fmt.Sprintf(format, args...))
	}
	return fmt.Errorf("tokenizer: %s: %s: %s", p.file, path, fmt.Sprintf(format, args...))
}

func (p *parser) object(path string, raw json.RawMessage) (object, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return object{}, p.errorf(path, "not a JSON object: %v", jsonError(raw, err))
	}
	if fields == nil {
		return object{}, p.errorf(path, "null, want an object")
	}
	return object{p: p, path: path, fields: fields}, nil
}

// jsonError says where in raw a syntax error is.
func jsonError(raw []byte, err error) string {
	if se, ok := err.(*json.SyntaxError); ok {
		return fmt.Sprintf("%v at byte %d of %d", se, se.Offset, len(raw))
	}
	return err.Error()
}

func (o object) field(name string) string {
	if o.path == "" {
		return name
	}
	return o.path + "." + name
}

// only refuses a field the package does not know.
func (o object) only(known ...string) error {
	var names []string
	for name := range o.fields {
		if !slices.Contains(known, name) {
			names = append(names, name)
		}
	}
	if len(names) > 0 {
		slices.Sort(names)
		return o.p.errorf(o.field(names[0]), "an unknown field (this package knows %s)", strings.Join(known, ", "))
	}
	return nil
}

// refuse is the error of a field whose value the package does not implement.
func (o object) refuse(name, why string) error {
	return o.p.errorf(o.field(name), "%s %s", short(o.fields[name]), why)
}

// short is a JSON value cut for an error message.
func short(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if s == "" {
		s = "absent"
	}
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80]) + "…"
	}
	return s
}

func (o object) null(name string) bool {
	raw, ok := o.fields[name]
	return !ok || string(bytes.TrimSpace(raw)) == "null"
}

func (o object) sub(name string) (object, error) {
	raw, ok := o.fields[name]
	if !ok {
		return object{}, o.p.errorf(o.field(name), "missing")
	}
	return o.p.object(o.field(name), raw)
}

func (o object) str(name string) (string, error) {
	var s string
	raw, ok := o.fields[name]
	if !ok {
		return "", o.p.errorf(o.field(name), "missing")
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", o.p.errorf(o.field(name), "%s is not a string", short(raw))
	}
	return s, nil
}

// boolean is a boolean field, def when absent or null.
func (o object) boolean(name string, def bool) (bool, error) {
	if o.null(name) {
		return def, nil
	}
	var b bool
	if err := json.Unmarshal(o.fields[name], &b); err != nil {
		return false, o.p.errorf(o.field(name), "%s is not a boolean", short(o.fields[name]))
	}
	return b, nil
}

// want checks a boolean field against the only value implemented (absent or null reads def).
func (o object) want(name string, def, implemented bool) error {
	b, err := o.boolean(name, def)
	if err != nil {
		return err
	}
	if b != implemented {
		return o.refuse(name, fmt.Sprintf("is not implemented (only %v)", implemented))
	}
	return nil
}

// emptyString checks a string field that must be absent, null or "".
func (o object) emptyString(name string) error {
	if o.null(name) {
		return nil
	}
	s, err := o.str(name)
	if err != nil {
		return err
	}
	if s != "" {
		return o.refuse(name, `is not implemented (only null or "")`)
	}
	return nil
}

func (o object) kind() (string, error) { return o.str("type") }

func (p *parser) model(t *Tokenizer, root object) error {
	m, err := root.sub("model")
	if err != nil {
		return err
	}
	kind, err := m.kind()
	if err != nil {
		return err
	}
	if kind != "BPE" {
		return m.refuse("type", "is not implemented (only BPE)")
	}
	if err := m.only("type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges", "vocab", "merges"); err != nil {
		return err
	}
	if !m.null("dropout") {
		var d float64
		if json.Unmarshal(m.fields["dropout"], &d) != nil || d != 0 {
			return m.refuse("dropout", "is not implemented (only null)")
		}
	}
	if !m.null("unk_token") {
		return m.refuse("unk_token", "is not implemented (only null: every byte has a token)")
	}
	for _, name := range []string{"continuing_subword_prefix", "end_of_word_suffix"} {
		if err := m.emptyString(name); err != nil {
			return err
		}
	}
	if _, err := m.boolean("fuse_unk", false); err != nil { // without an unk token it changes nothing
		return err
	}
	if err := m.want("byte_fallback", false, false); err != nil {
		return err
	}
	if t.ignoreMerges, err = m.boolean("ignore_merges", false); err != nil {
		return err
	}
	var vocab map[string]int
	if raw, ok := m.fields["vocab"]; !ok {
		return p.errorf(m.field("vocab"), "missing")
	} else if err := json.Unmarshal(raw, &vocab); err != nil || vocab == nil {
		return p.errorf(m.field("vocab"), "not an object of token to id: %s", short(raw))
	}
	t.vocab = vocab
	t.tokens = make([]string, 0, len(vocab))
	for tok, id := range vocab {
		if id < 0 || id > 1<<30 {
			return p.errorf(m.field("vocab"), "token %q has id %d", tok, id)
		}
		for id >= len(t.tokens) {
			t.tokens = append(t.tokens, "")
			t.known = append(t.known, false)
		}
		if t.known[id] {
			return p.errorf(m.field("vocab"), "id %d is both %q and %q", id, t.tokens[id], tok)
		}
		t.tokens[id], t.known[id] = tok, true
	}
	for b := range 256 {
		id, ok := vocab[string(byteChar[b])]
		if !ok {
			return p.errorf(m.field("vocab"), "byte 0x%02x (%q) has no token: a byte-level vocab holds all 256", b, string(byteChar[b]))
		}
		t.byteID[b] = int32(id)
	}
	return p.merges(t, m)
}

func (p *parser) merges(t *Tokenizer, m object) error {
	field := m.field("merges")
	var raws []json.RawMessage
	if raw, ok := m.fields["merges"]; !ok {
		return p.errorf(field, "missing")
	} else if err := json.Unmarshal(raw, &raws); err != nil {
		return p.errorf(field, "not an array: %s", short(raw))
	}
	t.merges = make(map[uint64]merge, len(raws))
	for i, raw := range raws {
		var a, b string
		var pair []string
		var s string
		switch {
		case json.Unmarshal(raw, &s) == nil:
			var ok bool
			if a, b, ok = strings.Cut(s, " "); !ok || a == "" || b == "" || strings.Contains(b, " ") {
				return p.errorf(fmt.Sprintf("%s[%d]", field, i), "%q is not two tokens separated by one space", s)
			}
		case json.Unmarshal(raw, &pair) == nil && len(pair) == 2:
			a, b = pair[0], pair[1]
		default:
			return p.errorf(fmt.Sprintf("%s[%d]", field, i), "%s is neither \"a b\" nor [\"a\", \"b\"]", short(raw))
		}
		ia, oka := t.vocab[a]
		ib, okb := t.vocab[b]
		ic, okc := t.vocab[a+b]
		switch {
		case !oka:
			return p.errorf(fmt.Sprintf("%s[%d]", field, i), "the merge %q + %q: %q is not in model.vocab", a, b, a)
		case !okb:
			return p.errorf(fmt.Sprintf("%s[%d]", field, i), "the merge %q + %q: %q is not in model.vocab", a, b, b)
		case !okc:
			return p.errorf(fmt.Sprintf("%s[%d]", field, i), "the merge %q + %q: the result %q is not in model.vocab", a, b, a+b)
		}
		// A pair listed twice keeps its last rank, as the Hugging Face library's map does.
		t.merges[pairKey(int32(ia), int32(ib))] = merge{rank: int32(i), id: int32(ic)}
	}
	return nil
}

func (p *parser) normalizer(t *Tokenizer, root object) error {
	if root.null("normalizer") {
		return nil
	}
	n, err := root.sub("normalizer")
	if err != nil {
		return err
	}
	kind, err := n.kind()
	if err != nil {
		return err
	}
	if kind != "NFC" {
		return n.refuse("type", "is not implemented (only NFC or a null normalizer)")
	}
	if err := n.only("type"); err != nil {
		return err
	}
	t.nfc = true
	return nil
}

func (p *parser) preTokenizer(t *Tokenizer, root object) error {
	if root.null("pre_tokenizer") {
		return p.errorf("pre_tokenizer", "null is not implemented (a byte-level BPE needs the ByteLevel pre-tokenizer)")
	}
	pt, err := root.sub("pre_tokenizer")
	if err != nil {
		return err
	}
	kind, err := pt.kind()
	if err != nil {
		return err
	}
	var steps []object
	switch kind {
	case "Sequence":
		if err := pt.only("type", "pretokenizers"); err != nil {
			return err
		}
		var raws []json.RawMessage
		if err := json.Unmarshal(pt.fields["pretokenizers"], &raws); err != nil || len(raws) == 0 {
			return pt.refuse("pretokenizers", "is not a non-empty array")
		}
		for i, raw := range raws {
			step, err := p.object(fmt.Sprintf("%s[%d]", pt.field("pretokenizers"), i), raw)
			if err != nil {
				return err
			}
			steps = append(steps, step)
		}
	case "ByteLevel":
		steps = []object{pt}
	default:
		return pt.refuse("type", "is not implemented (only ByteLevel, or a Sequence of Split steps ending with ByteLevel)")
	}
	for i, step := range steps {
		kind, err := step.kind()
		if err != nil {
			return err
		}
		last := i == len(steps)-1
		switch {
		case kind == "Split" && !last:
			s, err := p.split(step, t.timeout)
			if err != nil {
				return err
			}
			t.splits = append(t.splits, s)
		case kind == "ByteLevel" && last:
			if err := step.only("type", "add_prefix_space", "trim_offsets", "use_regex"); err != nil {
				return err
			}
			if t.prefixSpace, err = step.boolean("add_prefix_space", true); err != nil {
				return err
			}
			if _, err := step.boolean("trim_offsets", true); err != nil { // offsets only
				return err
			}
			useRegex, err := step.boolean("use_regex", true)
			if err != nil {
				return err
			}
			if useRegex {
				re, err := regexp2.Compile(gpt2Pattern)
				if err != nil {
					return p.errorf(step.field("use_regex"), "the GPT-2 pattern: %v", err)
				}
				re.MatchTimeout = t.timeout
				t.byteSplit = &splitter{re: re, field: step.field("use_regex")}
			}
		case kind == "ByteLevel":
			return step.refuse("type", "is implemented only as the last step")
		default:
			return step.refuse("type", "is not implemented (only Split steps, then ByteLevel last)")
		}
	}
	return nil
}

// gpt2Pattern is the ByteLevel pre-tokenizer's own split (use_regex true).
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

func (p *parser) split(step object, timeout time.Duration) (*splitter, error) {
	if err := step.only("type", "pattern", "behavior", "invert"); err != nil {
		return nil, err
	}
	behavior, err := step.str("behavior")
	if err != nil {
		return nil, err
	}
	if behavior != "Isolated" {
		return nil, step.refuse("behavior", "is not implemented (only Isolated)")
	}
	if err := step.want("invert", false, false); err != nil {
		return nil, err
	}
	pat, err := step.sub("pattern")
	if err != nil {
		return nil, err
	}
	if len(pat.fields) != 1 {
		return nil, step.refuse("pattern", `is not {"Regex": …} or {"String": …}`)
	}
	var expr, field string
	if _, ok := pat.fields["Regex"]; ok {
		if expr, err = pat.str("Regex"); err != nil {
			return nil, err
		}
		field = pat.field("Regex")
	} else if _, ok := pat.fields["String"]; ok {
		s, err := pat.str("String")
		if err != nil {
			return nil, err
		}
		if s == "" {
			return nil, pat.refuse("String", "is empty")
		}
		expr, field = regexp2.Escape(s), pat.field("String")
	} else {
		return nil, step.refuse("pattern", `is not {"Regex": …} or {"String": …}`)
	}
	re, err := regexp2.Compile(expr)
	if err != nil {
		return nil, p.errorf(field, "%v", err)
	}
	re.MatchTimeout = timeout
	return &splitter{re: re, field: field}, nil
}

// byteLevelOnly checks a post_processor (null allowed) or decoder that must be ByteLevel.
func (p *parser) byteLevelOnly(root object, name string, nullOK bool) error {
	if root.null(name) {
		if nullOK {
			return nil
		}
		return p.errorf(name, "null is not implemented (only ByteLevel)")
	}
	o, err := root.sub(name)
	if err != nil {
		return err
	}
	kind, err := o.kind()
	if err != nil {
		return err
	}
	if kind != "ByteLevel" {
		return o.refuse("type", "is not implemented (only ByteLevel)")
	}
	if err := o.only("type", "add_prefix_space", "trim_offsets", "use_regex"); err != nil {
		return err
	}
	for _, f := range []string{"add_prefix_space", "trim_offsets", "use_regex"} {
		if _, err := o.boolean(f, false); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) addedTokens(t *Tokenizer, root object) error {
	if root.null("added_tokens") {
		return nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(root.fields["added_tokens"], &raws); err != nil {
		return root.refuse("added_tokens", "is not an array")
	}
	contents := map[string]int{}
	for i, raw := range raws {
		o, err := p.object(fmt.Sprintf("added_tokens[%d]", i), raw)
		if err != nil {
			return err
		}
		if err := o.only("id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"); err != nil {
			return err
		}
		var a addedToken
		if err := json.Unmarshal(o.fields["id"], &a.id); err != nil || a.id < 0 || a.id > 1<<30 {
			return o.refuse("id", "is not a token id")
		}
		if a.content, err = o.str("content"); err != nil {
			return err
		}
		if a.content == "" {
			return o.refuse("content", "is empty")
		}
		if a.special, err = o.boolean("special", false); err != nil {
			return err
		}
		flags := []struct {
			name string
			to   *bool
			def  bool
		}{{"single_word", &a.singleWord, false}, {"lstrip", &a.lstrip, false}, {"rstrip", &a.rstrip, false}, {"normalized", &a.normalized, !a.special}}
		for _, f := range flags {
			if *f.to, err = o.boolean(f.name, f.def); err != nil {
				return err
			}
		}
		if j, dup := contents[a.content]; dup {
			return o.refuse("content", fmt.Sprintf("is added_tokens[%d]'s content too", j))
		}
		contents[a.content] = i
		if id, ok := t.vocab[a.content]; ok && id != a.id {
			return o.refuse("id", fmt.Sprintf("but model.vocab gives %q the id %d", a.content, id))
		}
		for a.id >= len(t.tokens) {
			t.tokens = append(t.tokens, "")
			t.known = append(t.known, false)
		}
		if t.known[a.id] && t.tokens[a.id] != a.content {
			return o.refuse("id", fmt.Sprintf("is model.vocab's %q", t.tokens[a.id]))
		}
		t.tokens[a.id], t.known[a.id] = a.content, true
		if a.normalized && t.nfc {
			a.match = normalize(a.content)
		} else {
			a.match = a.content
		}
		t.added = append(t.added, a)
	}
	t.buildMatchers()
	return nil
}
