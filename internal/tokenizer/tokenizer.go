package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"golang.org/x/text/unicode/norm"
)

// Tokenizer is a loaded tokenizer.json. It is safe for concurrent use.
type Tokenizer struct {
	file    string
	timeout time.Duration

	nfc         bool
	splits      []*splitter // the Split steps, in order
	prefixSpace bool        // ByteLevel's add_prefix_space
	byteSplit   *splitter   // ByteLevel's own regex (use_regex), or nil

	vocab        map[string]int // the model's byte-level token strings
	tokens       []string       // by id: the model's tokens and the added ones
	known        []bool         // by id: whether the id is a token
	byteID       [256]int32     // the token of each single byte
	merges       map[uint64]merge
	ignoreMerges bool

	added      []addedToken
	raw, normd *matcher // the added tokens matched before (normalized false) and after normalization
	special    map[int]bool

	cache *cache
}

type merge struct{ rank, id int32 }

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

type splitter struct {
	re    *regexp2.Regexp
	field string // where the pattern is, for errors
}

type addedToken struct {
	id                         int
	content, match             string // match: the content as it is looked for (normalized when normalized)
	special, singleWord        bool
	lstrip, rstrip, normalized bool
}

// VocabSize is one more than the largest token id.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// TokenID is the id of a token: an added token's content or a model token (byte-level string).
func (t *Tokenizer) TokenID(token string) (int, bool) {
	for _, a := range t.added {
		if a.content == token {
			return a.id, true
		}
	}
	id, ok := t.vocab[token]
	return id, ok
}

// Token is the string of a token id (an added token's content, or the model's byte-level string).
func (t *Tokenizer) Token(id int) (string, bool) {
	if id < 0 || id >= len(t.tokens) || !t.known[id] {
		return "", false
	}
	return t.tokens[id], true
}

// IsSpecial reports whether id is a special added token.
func (t *Tokenizer) IsSpecial(id int) bool { return t.special[id] }

// Encode is the ids of text, its added tokens (special ones included) recognised as the Hugging
// Face library's encode does (no post-processor tokens: Qwen3 adds none). text must be UTF-8.
func (t *Tokenizer) Encode(text string) ([]int, error) {
	if !utf8.ValidString(text) {
		i := 0
		for i < len(text) {
			r, n := utf8.DecodeRuneInString(text[i:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			i += n
		}
		return nil, fmt.Errorf("tokenizer: %s: the text is not UTF-8 (byte %d)", t.file, i)
	}
	ids := make([]int, 0, len(text)/3+1)
	var err error
	t.raw.split(text, func(piece string, id int) bool {
		if id >= 0 {
			ids = append(ids, id)
			return true
		}
		if t.nfc {
			piece = normalize(piece)
		}
		t.normd.split(piece, func(piece string, id int) bool {
			if id >= 0 {
				ids = append(ids, id)
				return true
			}
			ids, err = t.encodePiece(ids, piece)
			return err == nil
		})
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// normalize is NFC, cheap on ASCII.
func normalize(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return norm.NFC.String(s)
		}
	}
	return s
}

// encodePiece appends the ids of one normalized piece between added tokens.
func (t *Tokenizer) encodePiece(ids []int, piece string) ([]int, error) {
	pieces := []string{piece}
	for _, s := range t.splits {
		var err error
		if pieces, err = t.split(s, pieces); err != nil {
			return nil, err
		}
	}
	for _, p := range pieces {
		if t.prefixSpace && !strings.HasPrefix(p, " ") {
			p = " " + p
		}
		words := []string{p}
		if t.byteSplit != nil {
			var err error
			if words, err = t.split(t.byteSplit, words); err != nil {
				return nil, err
			}
		}
		for _, w := range words {
			ids = t.word(ids, w)
		}
	}
	return ids, nil
}

// split cuts every piece at the matches of s (behavior Isolated: a match is a piece of its own);
// no piece is empty.
func (t *Tokenizer) split(s *splitter, pieces []string) ([]string, error) {
	var out []string
	for _, p := range pieces {
		if p == "" {
			continue
		}
		matches, err := s.re.FindAllStringIndex(p, -1)
		if err != nil {
			if errors.Is(err, regexp2.ErrMatchTimeout) {
				return nil, fmt.Errorf("tokenizer: %s: %s: the pattern took over %v on a %d-byte piece (it backtracks: a hostile pattern?)", t.file, s.field, t.timeout, len(p))
			}
			return nil, fmt.Errorf("tokenizer: %s: %s: %w", t.file, s.field, err)
		}
		prev := 0
		for _, m := range matches {
			if m[0] == m[1] {
				continue
			}
			if prev < m[0] {
				out = append(out, p[prev:m[0]])
			}
			out = append(out, p[m[0]:m[1]])
			prev = m[1]
		}
		if prev < len(p) {
			out = append(out, p[prev:])
		}
	}
	return out, nil
}

// word appends the ids of one pre-token (its bytes, byte-level BPE).
func (t *Tokenizer) word(ids []int, w string) []int {
	if w == "" {
		return ids
	}
	if len(w) == 1 {
		return append(ids, int(t.byteID[w[0]]))
	}
	if t.cache != nil {
		if got, ok := t.cache.get(w); ok {
			return append(ids, got...)
		}
	}
	var got []int
	if id, ok := t.wholeWord(w); ok {
		got = []int{id}
	} else {
		got = t.bpe(w)
	}
	if t.cache != nil {
		t.cache.put(w, got)
	}
	return append(ids, got...)
}

// wholeWord is the id of the whole word under ignore_merges.
func (t *Tokenizer) wholeWord(w string) (int, bool) {
	if !t.ignoreMerges {
		return 0, false
	}
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		b.WriteRune(byteChar[w[i]])
	}
	id, ok := t.vocab[b.String()]
	return id, ok
}

// symbol is one symbol of a word being merged: a linked list over the word's bytes.
type symbol struct {
	id         int32
	prev, next int32 // −1 at the ends
	alive      bool
}

// candidate is a merge waiting in the queue: the pair starting at pos, by (rank, pos).
type candidate struct{ rank, pos, id int32 }

func (a candidate) less(b candidate) bool {
	return a.rank < b.rank || a.rank == b.rank && a.pos < b.pos
}

// bpe merges the bytes of w: always the pair of lowest rank, the leftmost among equals, as the
// Hugging Face library's BPE does.
func (t *Tokenizer) bpe(w string) []int {
	syms := make([]symbol, len(w))
	for i := range syms {
		syms[i] = symbol{id: t.byteID[w[i]], prev: int32(i - 1), next: int32(i + 1), alive: true}
	}
	syms[len(syms)-1].next = -1
	var q heap
	for i := 0; i+1 < len(syms); i++ {
		if m, ok := t.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			q.push(candidate{rank: m.rank, pos: int32(i), id: m.id})
		}
	}
	for len(q) > 0 {
		c := q.pop()
		s := &syms[c.pos]
		if !s.alive || s.next < 0 {
			continue
		}
		right := syms[s.next]
		if m, ok := t.merges[pairKey(s.id, right.id)]; !ok || m.id != c.id {
			continue // stale: one side has merged since
		}
		s.id = c.id
		syms[s.next].alive = false
		s.next = right.next
		if right.next >= 0 {
			syms[right.next].prev = c.pos
		}
		if s.prev >= 0 {
			if m, ok := t.merges[pairKey(syms[s.prev].id, s.id)]; ok {
				q.push(candidate{rank: m.rank, pos: s.prev, id: m.id})
			}
		}
		if s.next >= 0 {
			if m, ok := t.merges[pairKey(s.id, syms[s.next].id)]; ok {
				q.push(candidate{rank: m.rank, pos: c.pos, id: m.id})
			}
		}
	}
	var out []int
	for i := int32(0); i >= 0; i = syms[i].next {
		out = append(out, int(syms[i].id))
	}
	return out
}

// heap is a binary min-heap of candidates.
type heap []candidate

func (h *heap) push(c candidate) {
	*h = append(*h, c)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q[i].less(q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *heap) pop() candidate {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	for i := 0; ; {
		l, r, min := 2*i+1, 2*i+2, i
		if l < len(q) && q[l].less(q[min]) {
			min = l
		}
		if r < len(q) && q[r].less(q[min]) {
			min = r
		}
		if min == i {
			break
		}
		q[i], q[min] = q[min], q[i]
		i = min
	}
	*h = q
	return top
}

// Decode is the text of ids, as the ByteLevel decoder writes it: the tokens' bytes, each invalid
// UTF-8 sequence replaced by U+FFFD. skipSpecial leaves the special tokens out.
func (t *Tokenizer) Decode(ids []int, skipSpecial bool) (string, error) {
	var buf []byte
	for i, id := range ids {
		tok, ok := t.Token(id)
		if !ok {
			return "", fmt.Errorf("tokenizer: %s: ids[%d] = %d is no token", t.file, i, id)
		}
		if skipSpecial && t.special[id] {
			continue
		}
		start := len(buf)
		for _, r := range tok {
			b, ok := charByte(r)
			if !ok { // not byte-level text (an added token's content): its own bytes
				buf = append(buf[:start], tok...)
				break
			}
			buf = append(buf, b)
		}
	}
	return lossy(buf), nil
}

// lossy is buf as UTF-8 with each maximal invalid subsequence replaced by U+FFFD (as Rust's
// String::from_utf8_lossy).
func lossy(buf []byte) string {
	if utf8.Valid(buf) {
		return string(buf)
	}
	var b strings.Builder
	for i := 0; i < len(buf); {
		r, n := utf8.DecodeRune(buf[i:])
		if r != utf8.RuneError || n > 1 {
			b.Write(buf[i : i+n])
			i += n
			continue
		}
		b.WriteRune(utf8.RuneError)
		i += invalidPrefix(buf[i:])
	}
	return b.String()
}

// invalidPrefix is the length of the maximal prefix of b that starts a valid UTF-8 sequence but
// does not complete one (at least 1).
func invalidPrefix(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC || c == 0xEE || c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
		n++
	}
	return n
}

// byteChar is the byte-level alphabet: the printable character that stands for each byte (the
// printable Latin-1 bytes for themselves, the others from U+0100 on).
var byteChar = func() [256]rune {
	var out [256]rune
	n := 0
	for b := range 256 {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			out[b] = rune(b)
		} else {
			out[b] = rune(256 + n)
			n++
		}
	}
	return out
}()

// charByte is the byte a byte-level character stands for.
func charByte(r rune) (byte, bool) {
	switch {
	case r < 256 && byteChar[r] == r:
		return byte(r), true
	case r >= 256 && r < 256+68:
		return byte(charBytes[r-256]), true
	}
	return 0, false
}

var charBytes = func() []byte {
	var out []byte
	for b := range 256 {
		if byteChar[b] >= 256 {
			out = append(out, byte(b))
		}
	}
	return out
}()

// matcher finds added tokens leftmost-longest, as the Hugging Face library's Aho-Corasick
// automaton does, then applies their single_word, lstrip and rstrip flags.
type matcher struct {
	first  [256]bool
	byByte [256][]*addedToken // by first byte, longest first
}

func (t *Tokenizer) buildMatchers() {
	t.special = map[int]bool{}
	for i := range t.added {
		a := &t.added[i]
		if a.special {
			t.special[a.id] = true
		}
		m := &t.raw
		if a.normalized {
			m = &t.normd
		}
		if *m == nil {
			*m = &matcher{}
		}
		b := a.match[0]
		(*m).first[b] = true
		(*m).byByte[b] = append((*m).byByte[b], a)
	}
	for _, m := range []*matcher{t.raw, t.normd} {
		if m == nil {
			continue
		}
		for b := range m.byByte {
			slices.SortStableFunc(m.byByte[b], func(x, y *addedToken) int { return len(y.match) - len(x.match) })
		}
	}
}

// split calls yield with the pieces of s in order: each added token with its id, the text between
// with id −1 (never empty). yield returns false to stop.
func (m *matcher) split(s string, yield func(piece string, id int) bool) {
	if m == nil {
		if s != "" {
			yield(s, -1)
		}
		return
	}
	done := 0 // the end of the last accepted token
	for i := 0; i < len(s); {
		if !m.first[s[i]] {
			i++
			continue
		}
		var hit *addedToken
		for _, a := range m.byByte[s[i]] {
			if strings.HasPrefix(s[i:], a.match) {
				hit = a
				break
			}
		}
		if hit == nil {
			i++
			continue
		}
		start, stop := i, i+len(hit.match)
		i = stop // the search goes on after this match, accepted or not
		if hit.singleWord && (start > 0 && endsWithWord(s[:start]) || stop < len(s) && startsWithWord(s[stop:])) {
			continue
		}
		if hit.lstrip {
			start = max(len(strings.TrimRightFunc(s[:start], isWhiteSpace)), done)
		}
		if hit.rstrip {
			stop = len(s) - len(strings.TrimLeftFunc(s[stop:], isWhiteSpace))
		}
		if done < start && !yield(s[done:start], -1) {
			return
		}
		if !yield(s[start:stop], hit.id) {
			return
		}
		done = stop
	}
	if done < len(s) {
		yield(s[done:], -1)
	}
}

func isWhiteSpace(r rune) bool { return unicode.Is(unicode.White_Space, r) }

// isWord is Unicode \w as Rust's regex crate has it.
func isWord(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Pc, r) ||
		unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_Alphabetic, r) || r == 0x200C || r == 0x200D
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return isWord(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return isWord(r)
}

// cache keeps the ids of pre-tokens; once full it takes no more (as the Hugging Face library's).
type cache struct {
	mu   sync.RWMutex
	size int
	m    map[string][]int
}

func newCache(size int) *cache {
	return &cache{size: size, m: make(map[string][]int, min(size, 1<<12))}
}

func (c *cache) get(w string) ([]int, bool) {
	c.mu.RLock()
	ids, ok := c.m[w]
	c.mu.RUnlock()
	return ids, ok
}

func (c *cache) put(w string, ids []int) {
	if len(w) > 256 {
		return
	}
	c.mu.Lock()
	if len(c.m) < c.size {
		c.m[strings.Clone(w)] = ids
	}
	c.mu.Unlock()
}
