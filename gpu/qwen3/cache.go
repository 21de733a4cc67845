package qwen3

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// Query says what a forward call returns besides the updated cache. Indices in Hidden and Logits
// are into that call's tokens of each row (0 is the row's first token of the call).
type Query struct {
	Hidden     [][]int // per row: positions whose final-norm hidden states to return
	Logits     [][]int // per row: positions whose full-vocabulary logits to return
	Candidates [][]int // per row: token ids whose logits at the row's last token to return, computed from those rows of the output matrix only
	Adapter    bool    // run with the model's LoRA adapter (θ); false: the base model (ρ)
}

// Output is what a forward call returns, per row of the batch.
type Output struct {
	Last       [][]float64   // [row][hidden]: the final-norm hidden state at the row's last token of the call (nil for a row given no tokens)
	Hidden     [][][]float64 // [row][k][hidden] at Query.Hidden[row][k]
	Logits     [][][]float64 // [row][k][vocab] at Query.Logits[row][k]
	Candidates [][]float64   // [row][k]: the logit of Query.Candidates[row][k] at the row's last token
}

// Cache is the keys and values of a batch of token sequences, one row each, on the backend. It is
// immutable: Extend returns a new cache and leaves this one valid, so one prefix can be continued
// several ways (branching costs nothing), and Select copies rows (one prefix to several rows).
//
// Rows are laid out in shared columns: a prefill writes the prompts right-padded from column 0 and
// each extension writes its tokens (right-padded to the longest row's) at the next free column;
// a mask of valid columns and per-row positions make the padding invisible.
type Cache struct {
	m     *Model
	kv    []*tensors.Tensor // 2 per layer: [rows, kv_heads, capacity, head_dim]
	used  int               // columns written
	valid [][]bool          // [row][capacity]
	lens  []int             // [row] tokens so far: the next token's position
}

// Rows is the cache's batch size.
func (c *Cache) Rows() int { return len(c.lens) }

// Len is the number of tokens of row r so far.
func (c *Cache) Len(r int) int { return c.lens[r] }

// Capacity is the number of columns the cache holds before Extend grows it.
func (c *Cache) Capacity() int { return len(c.valid[0]) }

func shapeOf(dt dtypes.DType, dims ...int) shapes.Shape { return shapes.Make(dt, dims...) }

// pow2 is the least power of two ≥ max(x, lo).
func pow2(x, lo int) int {
	x = max(x, lo, 1)
	return 1 << bits.Len(uint(x-1))
}

// bucket is max(x, 1) rounded up to a multiple of 1/32 of its power of two (exact up to 32, then
// 34, 36, … 64, 68, …): the padded lengths the graphs are compiled for, at most 1/16 above the
// length (a power of two could nearly double it), at most 16 sizes per octave. A new size costs a
// compilation (~0.1 s a graph on the CPU backend at 42M parameters).
func bucket(x int) int {
	x = max(x, 1)
	step := max(pow2(x, 1)/32, 1)
	return (x + step - 1) / step * step
}

// Prefill runs prompts (one per row, of any lengths ≥ 1) through the model in one call and returns
// their cache.
func (m *Model) Prefill(prompts [][]int, q Query) (*Cache, *Output, error) {
	if len(prompts) == 0 {
		return nil, nil, fmt.Errorf("qwen3: prefill of no prompts")
	}
	longest := 0
	for i, p := range prompts {
		if len(p) == 0 {
			return nil, nil, fmt.Errorf("qwen3: prompt %d is empty", i)
		}
		longest = max(longest, len(p))
	}
	n := bucket(longest)
	c := &Cache{m: m, lens: make([]int, len(prompts)), valid: make([][]bool, len(prompts))}
	capacity := pow2(n+32, 64)
	for r := range c.valid {
		c.valid[r] = make([]bool, capacity)
	}
	return c.step(prompts, n, q, true)
}

// Extend feeds tokens[r] (possibly none) after row r's tokens and returns the extended cache; c
// itself is unchanged.
func (c *Cache) Extend(tokens [][]int, q Query) (*Cache, *Output, error) {
	if len(tokens) != c.Rows() {
		return nil, nil, fmt.Errorf("qwen3: %d rows of tokens for a cache of %d rows", len(tokens), c.Rows())
	}
	longest := 0
	for _, t := range tokens {
		longest = max(longest, len(t))
	}
	if longest == 0 {
		return nil, nil, fmt.Errorf("qwen3: extension by no tokens")
	}
	n := bucket(longest)
	if c.used+n > c.Capacity() {
		g, err := c.grow(pow2(c.used+n+32, 2*c.Capacity()))
		if err != nil {
			return nil, nil, err
		}
		c = g
	}
	return c.step(tokens, n, q, false)
}

// Select returns the cache of rows rows[0], rows[1], … of c (a row may repeat): a prefix copied
// to several rows to be continued differently in one batch.
func (c *Cache) Select(rows []int) (*Cache, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("qwen3: selection of no rows")
	}
	idx := make([]int32, len(rows))
	out := &Cache{m: c.m, used: c.used}
	for i, r := range rows {
		if r < 0 || r >= c.Rows() {
			return nil, fmt.Errorf("qwen3: row %d of a cache of %d rows", r, c.Rows())
		}
		idx[i] = int32(r)
		out.valid = append(out.valid, slices.Clone(c.valid[r]))
		out.lens = append(out.lens, c.lens[r])
	}
	e, err := c.m.exec("select", func(in []*graph.Node) []*graph.Node {
		var res []*graph.Node
		for _, t := range in[1:] {
			res = append(res, graph.Gather(t, in[0]))
		}
		return res
	})
	if err != nil {
		return nil, err
	}
	args := append([]*tensors.Tensor{tensors.FromFlatDataAndDimensions(idx, len(rows), 1)}, c.kv...)
	if out.kv, err = e.Call(args); err != nil {
		return nil, fmt.Errorf("qwen3: selecting rows: %w", err)
	}
	return out, nil
}

// grow returns c with capacity columns.
func (c *Cache) grow(capacity int) (*Cache, error) {
	extra := capacity - c.Capacity()
	e, err := c.m.exec(growKey(extra), func(in []*graph.Node) []*graph.Node {
		var res []*graph.Node
		for _, t := range in {
			d := t.Shape().Dimensions
			z := graph.Zeros(t.Graph(), shapeOf(t.DType(), d[0], d[1], extra, d[3]))
			res = append(res, graph.Concatenate([]*graph.Node{t, z}, 2))
		}
		return res
	})
	if err != nil {
		return nil, err
	}
	out := &Cache{m: c.m, used: c.used, lens: slices.Clone(c.lens)}
	for _, v := range c.valid {
		out.valid = append(out.valid, append(slices.Clone(v), make([]bool, extra)...))
	}
	if out.kv, err = e.Call(c.kv); err != nil {
		return nil, fmt.Errorf("qwen3: growing the cache: %w", err)
	}
	return out, nil
}

type growKey int

// stepKey is one forward graph's structure; the executor compiles one graph per shape.
type stepKey struct {
	fresh, hidden, logits, cands, adapter bool
	capacity                              int // a prefill's cache columns (0 for an extension: its cache's)
}

// step feeds tokens (padded to n per row) at column c.used and returns the new cache. Attention
// reads the first U columns only: the used ones, c.used + n, bucketed (a prefill's n).
func (c *Cache) step(tokens [][]int, n int, q Query, fresh bool) (*Cache, *Output, error) {
	m := c.m
	B, C := c.Rows(), c.Capacity()
	U := min(bucket(c.used+n), C)
	if fresh {
		U = n
	}
	if err := q.check(B, tokens, m.cfg.VocabSize); err != nil {
		return nil, nil, err
	}
	key := stepKey{fresh: fresh, hidden: q.Hidden != nil, logits: q.Logits != nil, cands: q.Candidates != nil, adapter: q.Adapter}
	if fresh {
		key.capacity = C
	}
	if q.Adapter && m.adapter == nil {
		return nil, nil, fmt.Errorf("qwen3: adapter asked for but none set")
	}
	next := &Cache{m: m, used: c.used + n, lens: slices.Clone(c.lens)}
	tok := make([]int32, B*n)
	posn := make([]int32, B*n)
	valid := make([]bool, B*U)
	last := make([]int32, 2*B)
	fed := 0
	for r, t := range tokens {
		v := slices.Clone(c.valid[r])
		for i, id := range t {
			tok[r*n+i] = int32(id)
			posn[r*n+i] = int32(c.lens[r] + i)
			v[c.used+i] = true
		}
		copy(valid[r*U:(r+1)*U], v)
		next.valid = append(next.valid, v)
		next.lens[r] += len(t)
		last[2*r], last[2*r+1] = int32(r), int32(max(len(t)-1, 0))
		fed += len(t)
	}
	args := []*tensors.Tensor{
		tensors.FromFlatDataAndDimensions(tok, B, n),
		tensors.FromFlatDataAndDimensions(posn, B, n),
		tensors.FromFlatDataAndDimensions(valid, B, U),
		tensors.FromScalar(int32(c.used)),
		tensors.FromFlatDataAndDimensions(last, B, 2),
	}
	if key.hidden {
		args = append(args, gatherIndex(q.Hidden))
	}
	if key.logits {
		args = append(args, gatherIndex(q.Logits))
	}
	if key.cands {
		k := 0
		for _, cs := range q.Candidates {
			k = max(k, len(cs))
		}
		k = pow2(k, 1)
		ids := make([]int32, B*k)
		for r, cs := range q.Candidates {
			for j, id := range cs {
				ids[r*k+j] = int32(id)
			}
		}
		args = append(args, tensors.FromFlatDataAndDimensions(ids, B, k))
	}
	if !fresh {
		args = append(args, c.kv...)
	}
	args = append(args, m.weights...)
	if q.Adapter {
		args = append(args, m.adapter.tensors...)
	}
	e, err := m.exec(key, m.stepGraph(key))
	if err != nil {
		return nil, nil, err
	}
	res, err := e.Call(args)
	if err != nil {
		return nil, nil, fmt.Errorf("qwen3: forward: %w", err)
	}
	L := 2 * m.cfg.NumHiddenLayers
	next.kv, res = res[:L], res[L:]
	rowsFed := int64(0)
	for _, t := range tokens {
		if len(t) > 0 {
			rowsFed++
		}
	}
	if fresh {
		m.prefills.Add(1)
	} else {
		m.extensions.Add(rowsFed)
	}
	m.calls.Add(1)
	m.tokens.Add(int64(fed))
	out, err := q.read(res, tokens, m.cfg)
	return next, out, err
}

// gatherIndex is the [rows, k, 2] index of (row, position) pairs, k the bucketed longest list.
func gatherIndex(lists [][]int) *tensors.Tensor {
	k := 0
	for _, l := range lists {
		k = max(k, len(l))
	}
	k = pow2(k, 1)
	idx := make([]int32, len(lists)*k*2)
	for r, l := range lists {
		for j := range k {
			idx[(r*k+j)*2] = int32(r)
			if j < len(l) {
				idx[(r*k+j)*2+1] = int32(l[j])
			}
		}
	}
	return tensors.FromFlatDataAndDimensions(idx, len(lists), k, 2)
}

func (q Query) check(B int, tokens [][]int, vocab int) error {
	for _, l := range [][][]int{q.Hidden, q.Logits, q.Candidates} {
		if l != nil && len(l) != B {
			return fmt.Errorf("qwen3: query of %d rows for %d rows", len(l), B)
		}
	}
	for r, t := range tokens {
		for _, id := range t {
			if id < 0 || id >= vocab {
				return fmt.Errorf("qwen3: row %d has token %d outside the vocabulary of %d", r, id, vocab)
			}
		}
		for _, l := range [][][]int{q.Hidden, q.Logits} {
			if l != nil {
				for _, i := range l[r] {
					if i < 0 || i >= len(t) {
						return fmt.Errorf("qwen3: row %d: position %d outside its %d tokens", r, i, len(t))
					}
				}
			}
		}
		if q.Candidates != nil {
			for _, id := range q.Candidates[r] {
				if id < 0 || id >= vocab {
					return fmt.Errorf("qwen3: row %d: candidate %d outside the vocabulary of %d", r, id, vocab)
				}
			}
		}
	}
	return nil
}

// read turns the graph's outputs (last, then hidden, logits, candidates as asked) into an Output.
func (q Query) read(res []*tensors.Tensor, tokens [][]int, cfg Config) (*Output, error) {
	B, h := len(tokens), cfg.HiddenSize
	out := &Output{}
	next := func() ([]float64, int, error) {
		t := res[0]
		res = res[1:]
		f, err := floats(t)
		d := t.Shape().Dimensions
		k := 0
		if len(d) > 1 {
			k = d[1]
		}
		return f, k, err
	}
	f, _, err := next()
	if err != nil {
		return nil, err
	}
	for r := range B {
		if len(tokens[r]) > 0 {
			out.Last = append(out.Last, f[r*h:(r+1)*h])
		} else {
			out.Last = append(out.Last, nil)
		}
	}
	rows := func(lists [][]int, w int) ([][][]float64, error) {
		f, k, err := next()
		if err != nil {
			return nil, err
		}
		o := make([][][]float64, B)
		for r, l := range lists {
			for j := range l {
				o[r] = append(o[r], f[(r*k+j)*w:(r*k+j+1)*w])
			}
		}
		return o, nil
	}
	if q.Hidden != nil {
		if out.Hidden, err = rows(q.Hidden, h); err != nil {
			return nil, err
		}
	}
	if q.Logits != nil {
		if out.Logits, err = rows(q.Logits, cfg.VocabSize); err != nil {
			return nil, err
		}
	}
	if q.Candidates != nil {
		f, k, err := next()
		if err != nil {
			return nil, err
		}
		for r, cs := range q.Candidates {
			out.Candidates = append(out.Candidates, f[r*k:r*k+len(cs)])
		}
	}
	return out, nil
}

// stepGraph builds the forward graph of key: inputs tokens [B, n], positions [B, n], valid
// columns [B, U] (the first U of the cache's, the new tokens' included; U = n when fresh),
// offset, last [B, 2], then the optional hidden [B, P, 2], logits [B, Q, 2] and candidates [B, K]
// indices, the caches (unless fresh: then they are the new keys and values and zeros, of
// key.capacity columns), the weights and the adapter's tensors. Outputs: the caches, last hidden [B, hidden],
// then hidden [B, P, hidden], logits [B, Q, vocab], candidate logits [B, K] as asked.
func (m *Model) stepGraph(key stepKey) func([]*graph.Node) []*graph.Node {
	return func(in []*graph.Node) []*graph.Node {
		take := func() *graph.Node {
			x := in[0]
			in = in[1:]
			return x
		}
		tokens, positions, valid, offset, last := take(), take(), take(), take(), take()
		var hidIdx, logIdx, cands *graph.Node
		if key.hidden {
			hidIdx = take()
		}
		if key.logits {
			logIdx = take()
		}
		if key.cands {
			cands = take()
		}
		n := tokens.Shape().Dimensions[1]
		cfg := m.cfg
		var caches []*graph.Node
		if !key.fresh {
			caches = in[:2*cfg.NumHiddenLayers]
			in = in[2*cfg.NumHiddenLayers:]
		}
		w, rest := m.splitWeights(in)
		var ad *adapterNodes
		if key.adapter {
			ad = m.adapter.nodes(rest)
		}
		h, out := m.decoder(tokens, positions, attendMask(valid, offset, n), caches, offset, key.capacity, w, ad)
		lastH := graph.Gather(h, last) // [B, hidden]
		out = append(out, lastH)
		if key.hidden {
			out = append(out, graph.Gather(h, hidIdx))
		}
		if key.logits {
			out = append(out, graph.Einsum("bqh,vh->bqv", graph.Gather(h, logIdx), w.head))
		}
		if key.cands {
			rows := graph.Gather(w.head, graph.ExpandAxes(cands, -1)) // [B, K, hidden]
			out = append(out, graph.Einsum("bh,bkh->bk", lastH, rows))
		}
		return out
	}
}

// prefixKey names a shared prefix's cache: its tokens' hash and whether the adapter ran.
type prefixKey struct {
	sum     [sha256.Size]byte
	adapter bool
}

// maxPrefixes bounds the shared prefixes a model keeps (one per system prompt and adapter state
// in practice).
const maxPrefixes = 16

// prefix returns the cache of tokens prefilled alone, with or without the adapter, computing it
// on first use; SetAdapter forgets the adapter's.
func (m *Model) prefix(tokens []int, adapter bool) (*Cache, error) {
	buf := make([]byte, 0, 4*len(tokens))
	for _, t := range tokens {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(t))
	}
	k := prefixKey{sha256.Sum256(buf), adapter}
	m.mu.Lock()
	c, ok := m.prefixes[k]
	m.mu.Unlock()
	if ok {
		return c, nil
	}
	c, _, err := m.Prefill([][]int{tokens}, Query{Adapter: adapter})
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.prefixes == nil || len(m.prefixes) >= maxPrefixes {
		m.prefixes = map[prefixKey]*Cache{}
	}
	m.prefixes[k] = c
	return c, nil
}

// dropAdapterPrefixes forgets the shared prefixes computed with the adapter (m.mu held).
func (m *Model) dropAdapterPrefixes() {
	for k := range m.prefixes {
		if k.adapter {
			delete(m.prefixes, k)
		}
	}
}
