package qwen3

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/evosteer/evosteer-go/internal/actiontrie"
)

// Decision is one decision to score: the prompt's token ids and its legal actions, each the token
// ids of the action's canonical JSON with the end-of-turn token appended (internal/actiontrie's
// candidates: prefix-free).
type Decision struct {
	Prompt  []int
	Actions [][]int
	// Shared is the length of a leading part of Prompt that many decisions share (the chat
	// template's system turn): the model keeps its keys and values (Model.prefix) and extends
	// them by the rest of the prompt instead of prefilling the whole. 0: prefill the whole. A
	// decision scores the same way every time it is given the same Shared, but not bit for bit
	// the same as with another (the extension and the prefill round differently).
	Shared int
}

// Scored is a decision's trie-masked log-probabilities and the tree of conditional distributions
// they came from, which Sample walks without the model.
type Scored struct {
	LogProbs []float64 // per action: Σ over its branching positions of log softmax over the allowed tokens
	Last     []float64 // the final-norm hidden state at the prompt's last token (the value head's input)
	Work     Work      // the forward calls this scoring made
	root     *branchNode
	single   bool // one legal action: no branching node
}

// branchNode is a position where several tokens are allowed: their logits (from those rows of the
// output matrix only) and, per token, the candidates through it and the next branching node.
type branchNode struct {
	tokens   []int
	logits   []float64
	logp     []float64 // log softmax of logits
	cands    [][]int
	children []*branchNode // nil where one candidate remains
}

// walk is one decision's trie walk on a model.
type walk struct {
	m       *Model
	adapter bool
	d       Decision
	trie    *actiontrie.Trie
	work    Work
	cache   *Cache
	rows    [][]float64 // per candidate per token: the masked log-probability at branching positions, 0 elsewhere
}

func (m *Model) newWalk(d Decision, adapter bool) (*walk, error) {
	if len(d.Prompt) == 0 {
		return nil, fmt.Errorf("qwen3: decision with an empty prompt")
	}
	t, err := actiontrie.New(d.Actions)
	if err != nil {
		return nil, err
	}
	w := &walk{m: m, adapter: adapter, d: d, trie: t}
	for _, p := range d.Actions {
		w.rows = append(w.rows, make([]float64, len(p)))
	}
	return w, nil
}

// lcp is the length of the common prefix of the candidates' paths.
func (w *walk) lcp(cands []int) int {
	p := w.d.Actions[cands[0]]
	n := len(p)
	for _, c := range cands[1:] {
		q := w.d.Actions[c]
		k := 0
		for k < n && k < len(q) && p[k] == q[k] {
			k++
		}
		n = k
	}
	return n
}

// start prefills the prompt and the candidates' common prefix in one call and returns the first
// branching node's depth with the logits of its allowed tokens, and the prompt's last hidden
// state. With one candidate there is no branching node: depth −1.
func (w *walk) start() (depth int, logits, last []float64, err error) {
	all := make([]int, len(w.d.Actions))
	for i := range all {
		all[i] = i
	}
	P := len(w.d.Prompt)
	q := Query{Hidden: [][]int{{P - 1}}, Adapter: w.adapter}
	seq := w.d.Prompt
	depth = -1
	if len(all) > 1 {
		depth = w.lcp(all)
		seq = append(slices.Clone(w.d.Prompt), w.d.Actions[0][:depth]...)
		q.Candidates = [][]int{w.trie.Allowed(w.d.Actions[0][:depth])}
	}
	var c *Cache
	var out *Output
	if s := w.d.Shared; s > 0 && s < P {
		base, err := w.m.prefix(w.d.Prompt[:s], w.adapter)
		if err != nil {
			return 0, nil, nil, err
		}
		q.Hidden = [][]int{{P - 1 - s}}
		if c, out, err = base.Extend([][]int{seq[s:]}, q); err != nil {
			return 0, nil, nil, err
		}
		w.work.Extensions++
		w.work.Tokens += int64(len(seq) - s)
	} else {
		if c, out, err = w.m.Prefill([][]int{seq}, q); err != nil {
			return 0, nil, nil, err
		}
		w.work.Prefills++
		w.work.Tokens += int64(len(seq))
	}
	w.work.Calls++
	w.cache = c
	if depth >= 0 {
		logits = out.Candidates[0]
	}
	return depth, logits, out.Hidden[0][0], nil
}

// node makes the branching node at depth of cands from its allowed tokens' logits, recording the
// candidates' masked log-probabilities at that position.
func (w *walk) node(depth int, cands []int, logits []float64) *branchNode {
	n := &branchNode{tokens: w.trie.Allowed(w.d.Actions[cands[0]][:depth]), logits: logits, logp: logSoftmax(logits, 1)}
	n.cands = make([][]int, len(n.tokens))
	n.children = make([]*branchNode, len(n.tokens))
	for _, c := range cands {
		tok := w.d.Actions[c][depth]
		k, _ := slices.BinarySearch(n.tokens, tok)
		n.cands[k] = append(n.cands[k], c)
		w.rows[c][depth] = n.logp[k]
	}
	return n
}

// descend extends cache c (holding prompt + the path to the node at depth) by the tokens to the
// next branching node of cands, the candidates through one of the node's tokens, and returns that
// node's depth, logits and cache.
func (w *walk) descend(c *Cache, depth int, cands []int) (int, []float64, *Cache, error) {
	next := w.lcp(cands)
	p := w.d.Actions[cands[0]]
	c2, out, err := c.Extend([][]int{p[depth:next]}, Query{Candidates: [][]int{w.trie.Allowed(p[:next])}, Adapter: w.adapter})
	if err != nil {
		return 0, nil, nil, err
	}
	w.work.Extensions++
	w.work.Calls++
	w.work.Tokens += int64(next - depth)
	return next, out.Candidates[0], c2, nil
}

// expandAll builds the tree below the root branching node at depth (c, of one row, holds the
// path to it) level by level: the branching nodes at one level of the tree are extended in one
// batched call, the cache's rows selected (Select) so that each child continues its parent's row.
func (w *walk) expandAll(c *Cache, depth int, cands []int, logits []float64) (*branchNode, error) {
	type item struct {
		row, depth int
		cands      []int
		logits     []float64
		slot       **branchNode
	}
	var root *branchNode
	level := []item{{0, depth, cands, logits, &root}}
	for len(level) > 0 {
		var next []item
		for _, it := range level {
			n := w.node(it.depth, it.cands, it.logits)
			*it.slot = n
			for k, cs := range n.cands {
				if len(cs) > 1 {
					next = append(next, item{row: it.row, depth: it.depth, cands: cs, slot: &n.children[k]})
				}
			}
		}
		if len(next) == 0 {
			break
		}
		rows := make([]int, len(next))
		tokens := make([][]int, len(next))
		q := Query{Candidates: make([][]int, len(next)), Adapter: w.adapter}
		for i, it := range next {
			rows[i] = it.row
			d := w.lcp(it.cands)
			p := w.d.Actions[it.cands[0]]
			tokens[i], q.Candidates[i] = p[it.depth:d], w.trie.Allowed(p[:d])
			next[i].row, next[i].depth = i, d
			w.work.Extensions++
			w.work.Tokens += int64(d - it.depth)
		}
		var err error
		if len(rows) > 1 || c.Rows() > 1 {
			if c, err = c.Select(rows); err != nil {
				return nil, err
			}
		}
		c2, out, err := c.Extend(tokens, q)
		if err != nil {
			return nil, err
		}
		w.work.Calls++
		c = c2
		for i := range next {
			next[i].logits = out.Candidates[i]
		}
		level = next
	}
	return root, nil
}

// Score returns each legal action's trie-masked log-probability under the base model (adapter
// false: ρ) or the adapted one (true: θ): one prefill of the prompt with the actions' common
// prefix, then one cached extension per further branching node, fed the tokens from its parent
// branching node (forced tokens cost no forward of their own), those of one level of the tree in
// one batched call (a row each), and at each branching position a
// softmax over the allowed tokens' logits alone, the hidden state times those rows of the output
// matrix. The per-token log-probabilities go through actiontrie's LogProbs.
func (m *Model) Score(d Decision, adapter bool) (*Scored, error) {
	w, err := m.newWalk(d, adapter)
	if err != nil {
		return nil, err
	}
	depth, logits, last, err := w.start()
	if err != nil {
		return nil, err
	}
	s := &Scored{Last: last, single: depth < 0}
	if depth >= 0 {
		all := make([]int, len(d.Actions))
		for i := range all {
			all[i] = i
		}
		if s.root, err = w.expandAll(w.cache, depth, all, logits); err != nil {
			return nil, err
		}
	}
	if s.LogProbs, err = w.trie.LogProbs(w.rows); err != nil {
		return nil, err
	}
	s.Work = w.work
	return s, nil
}

// Sample draws an action from the tree at temperature (the allowed tokens' logits divided by it;
// 0 is greedy) with rng, without the model: the same walk and the same draws as Model.Sample. It
// returns the action and its log-probability at temperature 1, as Score gives it.
func (s *Scored) Sample(rng *rand.Rand, temperature float64) (int, float64) {
	if s.single {
		return 0, 0
	}
	n, lp := s.root, 0.0
	for {
		k := choose(rng, n.logits, temperature)
		lp += n.logp[k]
		if n.children[k] == nil {
			return n.cands[k][0], lp
		}
		n = n.children[k]
	}
}

// Sampled is one action drawn by Model.Sample.
type Sampled struct {
	Action  int
	LogProb float64   // its trie-masked log-probability at temperature 1 (what Score gives it)
	Last    []float64 // the final-norm hidden state at the prompt's last token
	Work    Work
}

// Sample draws one legal action at temperature (0: greedy) with rng, walking the trie as Score
// does but extending the cache only along the drawn path: one prefill, then one extension per
// further branching node on the path.
func (m *Model) Sample(d Decision, adapter bool, temperature float64, rng *rand.Rand) (*Sampled, error) {
	if temperature < 0 || math.IsNaN(temperature) {
		return nil, fmt.Errorf("qwen3: temperature %v", temperature)
	}
	w, err := m.newWalk(d, adapter)
	if err != nil {
		return nil, err
	}
	depth, logits, last, err := w.start()
	if err != nil {
		return nil, err
	}
	s := &Sampled{Last: last}
	if depth >= 0 {
		cands := make([]int, len(d.Actions))
		for i := range cands {
			cands[i] = i
		}
		c := w.cache
		for {
			n := w.node(depth, cands, logits)
			k := choose(rng, n.logits, temperature)
			s.LogProb += n.logp[k]
			cands = n.cands[k]
			if len(cands) == 1 {
				break
			}
			if depth, logits, c, err = w.descend(c, depth, cands); err != nil {
				return nil, err
			}
		}
		s.Action = cands[0]
	}
	s.Work = w.work
	return s, nil
}

// choose draws an index with probabilities softmax(logits/temperature) from one uniform of rng,
// walking the cumulative sum in order; temperature 0 takes the first largest logit, drawing
// nothing.
func choose(rng *rand.Rand, logits []float64, temperature float64) int {
	if temperature == 0 {
		k := 0
		for i, l := range logits {
			if l > logits[k] {
				k = i
			}
		}
		return k
	}
	lp := logSoftmax(logits, temperature)
	u := rng.Float64()
	acc := 0.0
	for i, l := range lp {
		acc += math.Exp(l)
		if u < acc {
			return i
		}
	}
	return len(lp) - 1
}

// logSoftmax is log softmax(x/t) in float64.
func logSoftmax(x []float64, t float64) []float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = max(mx, v/t)
	}
	s := 0.0
	for _, v := range x {
		s += math.Exp(v/t - mx)
	}
	lse := mx + math.Log(s)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v/t - lse
	}
	return out
}
