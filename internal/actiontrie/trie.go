package actiontrie

import (
	"fmt"
	"math"
	"slices"
)

// Tolerance is how far (absolute, in nats) two candidates may disagree about the log-probability
// of the same token after the same prefix. A server scores each candidate as its own batch item,
// and batch composition changes the reduction order of a bf16 model's matrix products (vLLM's
// default for the executors' models, docs/LLM-EXECUTORS.md); bf16 holds a logit between 8 and 16
// to a multiple of 1/16, so honest reports of one token can differ by a few hundredths of a nat,
// far more than the 1e-4 an fp32 server would need. The check exists to catch inputs that do not
// belong together — a row from another prompt or model, a row shifted by one token — which are
// off by nats, so it sits above the rounding and well below those. It does not govern accuracy:
// LogProbs uses one report per token (the first candidate's), so Σ ρ(a) = 1 whatever the
// disagreement, and ρ(a) carries only the server's own noise.
const Tolerance = 0.1

// Trie is the prefix-free trie of one legal set's token paths. It is immutable after New, so
// one trie may score several requests concurrently.
type Trie struct {
	paths [][]int
	nodes []node
	// branch[i] lists, in increasing position, the positions of candidate i whose prefix has
	// more than one allowed next token, and child[i] the node each such position's token leads
	// to (whose first candidate supplies that token's canonical log-probability).
	branch [][]int
	child  [][]int32
}

type node struct {
	children []edge // sorted by token, so Allowed and the logsumexp order are fixed
	parent   int32
	depth    int // tokens from the root: the position its children's tokens occupy
	first    int // the first candidate (in input order) through this node
	end      int // the candidate whose path ends here, or -1
}

type edge struct {
	token int
	node  int32
}

// New builds the trie of paths, each a candidate's token ids with EOS already appended. It
// refuses an empty path, a negative token id, a duplicate and a path that is a prefix of
// another, naming the candidates by index: any of these would make some action's probability
// ill-defined or give two actions one probability mass.
func New(paths [][]int) (*Trie, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("actiontrie: no candidates")
	}
	t := &Trie{
		paths:  make([][]int, len(paths)),
		nodes:  []node{{parent: -1, end: -1}},
		branch: make([][]int, len(paths)),
		child:  make([][]int32, len(paths)),
	}
	for i, p := range paths {
		if len(p) == 0 {
			return nil, fmt.Errorf("actiontrie: candidate %d is empty (a path holds at least EOS)", i)
		}
		// The caller's slices are copied so that a later change to them cannot break the
		// trie's invariants.
		t.paths[i] = slices.Clone(p)
		n := int32(0)
		for j, tok := range p {
			if tok < 0 {
				return nil, fmt.Errorf("actiontrie: candidate %d has token id %d at position %d", i, tok, j)
			}
			if k := t.nodes[n].end; k >= 0 {
				return nil, fmt.Errorf("actiontrie: candidate %d is a prefix of candidate %d (not prefix-free: is EOS appended?)", k, i)
			}
			n = t.step(n, tok, i)
		}
		switch nd := &t.nodes[n]; {
		case nd.end >= 0:
			return nil, fmt.Errorf("actiontrie: candidates %d and %d are the same token path", nd.end, i)
		case len(nd.children) > 0:
			return nil, fmt.Errorf("actiontrie: candidate %d is a prefix of candidate %d (not prefix-free: is EOS appended?)", i, nd.first)
		default:
			nd.end = i
		}
	}
	for i, p := range t.paths {
		n := int32(0)
		for j, tok := range p {
			c := t.find(n, tok)
			if len(t.nodes[n].children) > 1 {
				t.branch[i] = append(t.branch[i], j)
				t.child[i] = append(t.child[i], c)
			}
			n = c
		}
	}
	return t, nil
}

// step returns the child of n through tok, adding it (first reached by candidate i) if absent.
func (t *Trie) step(n int32, tok, i int) int32 {
	cs := t.nodes[n].children
	k, found := slices.BinarySearchFunc(cs, tok, func(e edge, tok int) int { return e.token - tok })
	if found {
		return cs[k].node
	}
	c := int32(len(t.nodes))
	t.nodes = append(t.nodes, node{parent: n, depth: t.nodes[n].depth + 1, first: i, end: -1})
	t.nodes[n].children = slices.Insert(cs, k, edge{token: tok, node: c})
	return c
}

// find returns the child of n through tok, or -1.
func (t *Trie) find(n int32, tok int) int32 {
	cs := t.nodes[n].children
	if k, found := slices.BinarySearchFunc(cs, tok, func(e edge, tok int) int { return e.token - tok }); found {
		return cs[k].node
	}
	return -1
}

// Allowed returns the tokens allowed after prefix, sorted: what a sampler renormalises over at
// that position. It is nil when prefix is a complete candidate or no candidate's prefix.
func (t *Trie) Allowed(prefix []int) []int {
	n := int32(0)
	for _, tok := range prefix {
		if n = t.find(n, tok); n < 0 {
			return nil
		}
	}
	var out []int
	for _, e := range t.nodes[n].children {
		out = append(out, e.token)
	}
	return out
}

// Branching returns the positions of candidate i where more than one token is allowed, in
// increasing order: the only positions whose log-probabilities LogProbs reads, so a sampler need
// call the model only there. The slice is the trie's own; callers must not change it.
func (t *Trie) Branching(i int) []int {
	return t.branch[i]
}

// LogProbs returns each candidate's masked log-likelihood, in input order. tokenLogProbs[i][j]
// is log p(paths[i][j] | prompt, paths[i][:j]) under the model's full vocabulary, as teacher
// forcing of prompt + candidate i gives it.
//
// Every entry must be a log-probability (not NaN, not above 0; −Inf is a probability of 0). At
// a branching position, candidates through the same token after the same prefix must agree
// within Tolerance; the first of them in input order supplies the value used for all, so the
// result is a deterministic function of the input and sums to 1 in probability. Values at
// forced positions are checked for being log-probabilities but otherwise unused: they need not
// agree, and an in-process caller that skips the model there may pass 0.
func (t *Trie) LogProbs(tokenLogProbs [][]float64) ([]float64, error) {
	if len(tokenLogProbs) != len(t.paths) {
		return nil, fmt.Errorf("actiontrie: %d rows of log-probabilities for %d candidates", len(tokenLogProbs), len(t.paths))
	}
	for i, row := range tokenLogProbs {
		if len(row) != len(t.paths[i]) {
			return nil, fmt.Errorf("actiontrie: candidate %d has %d log-probabilities for %d tokens", i, len(row), len(t.paths[i]))
		}
		for j, v := range row {
			if math.IsNaN(v) || v > 0 {
				return nil, fmt.Errorf("actiontrie: candidate %d position %d: %v is not a log-probability", i, j, v)
			}
		}
	}
	for i, cs := range t.child {
		for k, c := range cs {
			f, j := t.nodes[c].first, t.branch[i][k]
			a, b := tokenLogProbs[f][j], tokenLogProbs[i][j]
			// a == b admits two −Inf reports, whose difference is NaN.
			if f != i && a != b && !(math.Abs(a-b) <= Tolerance) {
				return nil, fmt.Errorf("actiontrie: candidates %d and %d share the token path to position %d but report log-probabilities %v and %v (more than %g apart)",
					f, i, j, a, b, Tolerance)
			}
		}
	}
	// The normaliser of each branching node, over its children in token order.
	lse := make([]float64, len(t.nodes))
	for n := range t.nodes {
		cs := t.nodes[n].children
		if len(cs) < 2 {
			continue
		}
		j := t.nodes[n].depth
		m := math.Inf(-1)
		for _, e := range cs {
			m = max(m, tokenLogProbs[t.nodes[e.node].first][j])
		}
		if math.IsInf(m, -1) {
			return nil, fmt.Errorf("actiontrie: every token allowed at position %d of candidate %d has log-probability -Inf", j, t.nodes[n].first)
		}
		s := 0.0
		for _, e := range cs {
			s += math.Exp(tokenLogProbs[t.nodes[e.node].first][j] - m)
		}
		lse[n] = m + math.Log(s)
	}
	out := make([]float64, len(t.paths))
	for i, cs := range t.child {
		for k, c := range cs {
			nd := t.nodes[c]
			out[i] += tokenLogProbs[nd.first][t.branch[i][k]] - lse[nd.parent]
		}
	}
	return out, nil
}
