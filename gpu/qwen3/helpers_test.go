package qwen3

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/gobackend"
)

// tinyConfig is a model of the real architecture small enough for tests of seconds.
func tinyConfig() Config {
	return Config{
		ModelType: "qwen3", VocabSize: 300, HiddenSize: 32, IntermediateSize: 64, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 8, HiddenAct: "silu", MaxPositionEmbeddings: 4096,
		RMSNormEps: 1e-6, RopeTheta: 10000,
	}
}

var testBackendOnce compute.Backend

// testBackend is the pure-Go CPU backend, or the one GOMLX_BACKEND names (among those linked).
func testBackend(tb testing.TB) compute.Backend {
	tb.Helper()
	if testBackendOnce == nil {
		b, err := gobackend.New("")
		if err != nil {
			tb.Fatal(err)
		}
		testBackendOnce = b
	}
	return testBackendOnce
}

func tinyModel(tb testing.TB, dt dtypes.DType, seed uint64) *Model {
	tb.Helper()
	cfg := tinyConfig()
	m, err := New(testBackend(tb), cfg, RandomWeights(cfg, seed, 0.2), Options{DType: dt})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func randTokens(r *rand.Rand, n, vocab int) []int {
	t := make([]int, n)
	for i := range t {
		t[i] = r.IntN(vocab)
	}
	return t
}

func iota(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

const eos = 299

// randDecision is a prompt and k distinct legal actions over a small alphabet (so that they share
// prefixes and branch at several depths), each ending with EOS.
func randDecision(r *rand.Rand, k int) Decision {
	d := Decision{Prompt: randTokens(r, 3+r.IntN(6), 290)}
	seen := map[string]bool{}
	for len(d.Actions) < k {
		p := randTokens(r, 1+r.IntN(5), 4)
		for i := range p {
			p[i] += 40
		}
		p = append(p, eos)
		key := string(rune(len(p))) + slicesString(p)
		if seen[key] {
			continue
		}
		seen[key] = true
		d.Actions = append(d.Actions, p)
	}
	return d
}

func slicesString(p []int) string {
	b := make([]byte, 0, 2*len(p))
	for _, v := range p {
		b = append(b, byte(v), byte(v>>8))
	}
	return string(b)
}

// nextTokens maps each prefix of the actions (slicesString) to the tokens that may follow it.
func nextTokens(actions [][]int) map[string]map[int]bool {
	next := map[string]map[int]bool{}
	for _, p := range actions {
		for j := range p {
			k := slicesString(p[:j])
			if next[k] == nil {
				next[k] = map[int]bool{}
			}
			next[k][p[j]] = true
		}
	}
	return next
}

// branchingNodes counts the prefixes after which more than one token is allowed, and the tokens a
// walk must feed: every trie node on the way to a branching node.
func branchingNodes(actions [][]int) (nodes, fed int) {
	next := nextTokens(actions)
	onWay := map[string]bool{}
	for _, p := range actions {
		for j := range p {
			if len(next[slicesString(p[:j])]) > 1 {
				for i := 1; i <= j; i++ {
					onWay[slicesString(p[:i])] = true
				}
			}
		}
	}
	for _, v := range next {
		if len(v) > 1 {
			nodes++
		}
	}
	return nodes, len(onWay)
}

func maxDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

func maxDiff2(a, b [][]float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = max(d, maxDiff(a[i], b[i]))
	}
	return d
}

// branchingLevels is the depth of the tree of branching nodes: the most branching nodes on one
// action's path.
func branchingLevels(actions [][]int) int {
	next := nextTokens(actions)
	most := 0
	for _, p := range actions {
		n := 0
		for j := range p {
			if len(next[slicesString(p[:j])]) > 1 {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}
