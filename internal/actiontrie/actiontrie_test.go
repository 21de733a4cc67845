package actiontrie

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

const eos = 0

// model is a random language model over tokens 0..vocab-1 (0 is EOS): its next-token
// log-probabilities depend on the prefix alone, so the rows it gives candidates that share a
// prefix agree exactly, as an ideal server's would.
type model struct {
	seed  uint64
	vocab int
	scale float64
	cache map[string][]float64
}

func newModel(seed uint64, vocab int, scale float64) *model {
	return &model{seed: seed, vocab: vocab, scale: scale, cache: map[string][]float64{}}
}

// next returns log p(· | prefix) over the whole vocabulary (a full log-softmax).
func (m *model) next(prefix []int) []float64 {
	key := fmt.Sprint(prefix)
	if lp, ok := m.cache[key]; ok {
		return lp
	}
	h := m.seed
	for _, t := range prefix {
		h = h*1099511628211 + uint64(t) + 1
	}
	r := rand.New(rand.NewPCG(m.seed, h))
	lp := make([]float64, m.vocab)
	for t := range lp {
		lp[t] = m.scale * r.NormFloat64()
	}
	mx := slices.Max(lp)
	s := 0.0
	for _, v := range lp {
		s += math.Exp(v - mx)
	}
	for t := range lp {
		lp[t] -= mx + math.Log(s)
	}
	m.cache[key] = lp
	return lp
}

// rows is what teacher forcing of every candidate gives: row i, position j is
// log p(paths[i][j] | paths[i][:j]).
func (m *model) rows(paths [][]int) [][]float64 {
	out := make([][]float64, len(paths))
	for i, p := range paths {
		for j, t := range p {
			out[i] = append(out[i], m.next(p[:j])[t])
		}
	}
	return out
}

// randomLegalSet draws up to n distinct token paths over 1..vocab-1 of length 1..maxLen, with
// EOS appended (so they are prefix-free), in random order. Short paths and a small vocabulary
// make shared prefixes, and so branching positions, common.
func randomLegalSet(r *rand.Rand, n, vocab, maxLen int) [][]int {
	seen := map[string]bool{}
	var out [][]int
	for range n {
		p := make([]int, 1+r.IntN(maxLen))
		for j := range p {
			p[j] = 1 + r.IntN(vocab-1)
		}
		p = append(p, eos)
		if k := fmt.Sprint(p); !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out
}

// bruteForce is the masked likelihood from its definition, without a trie: at every position
// of candidate i, the siblings are the tokens that the candidates sharing i's prefix have there,
// found by scanning all paths. It also returns the branching positions and each position's
// sorted sibling set.
func bruteForce(paths [][]int, m *model) (logp []float64, branching [][]int, siblings [][][]int) {
	logp = make([]float64, len(paths))
	branching = make([][]int, len(paths))
	siblings = make([][][]int, len(paths))
	for i, p := range paths {
		for j := range p {
			var sib []int
			for _, q := range paths {
				if len(q) > j && slices.Equal(q[:j], p[:j]) && !slices.Contains(sib, q[j]) {
					sib = append(sib, q[j])
				}
			}
			slices.Sort(sib)
			siblings[i] = append(siblings[i], sib)
			if len(sib) < 2 {
				continue
			}
			branching[i] = append(branching[i], j)
			lp := m.next(p[:j])
			mx := math.Inf(-1)
			for _, t := range sib {
				mx = max(mx, lp[t])
			}
			s := 0.0
			for _, t := range sib {
				s += math.Exp(lp[t] - mx)
			}
			logp[i] += lp[p[j]] - (mx + math.Log(s))
		}
	}
	return logp, branching, siblings
}

func TestLogProbsMatchesBruteForce(t *testing.T) {
	branched := 0
	for seed := range uint64(400) {
		r := rand.New(rand.NewPCG(seed, 7))
		vocab := 3 + r.IntN(5)
		paths := randomLegalSet(r, 1+r.IntN(24), vocab, 1+r.IntN(7))
		m := newModel(seed, vocab, 0.5+4*r.Float64())
		tr, err := New(paths)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		got, err := tr.LogProbs(m.rows(paths))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		want, branching, siblings := bruteForce(paths, m)
		total := 0.0
		for i := range paths {
			if math.Abs(got[i]-want[i]) > 1e-12 {
				t.Fatalf("seed %d candidate %d %v: log ρ = %.17g, brute force %.17g", seed, i, paths[i], got[i], want[i])
			}
			if b := tr.Branching(i); !slices.Equal(b, branching[i]) {
				t.Fatalf("seed %d candidate %d: branching %v, brute force %v", seed, i, b, branching[i])
			}
			branched += len(branching[i])
			for j := range paths[i] {
				if a := tr.Allowed(paths[i][:j]); !slices.Equal(a, siblings[i][j]) {
					t.Fatalf("seed %d candidate %d position %d: allowed %v, brute force %v", seed, i, j, a, siblings[i][j])
				}
			}
			total += math.Exp(got[i])
		}
		if math.Abs(total-1) > 1e-12 {
			t.Fatalf("seed %d: Σ ρ(a) = %.17g over %d candidates", seed, total, len(paths))
		}
		again, _ := tr.LogProbs(m.rows(paths))
		if !slices.Equal(again, got) {
			t.Fatalf("seed %d: a second call gave %v, the first %v", seed, again, got)
		}
	}
	// Guard the test against a generator that stops making shared prefixes.
	if branched < 2000 {
		t.Fatalf("only %d branching positions over all seeds", branched)
	}
}

func TestAllowedOutsideTheTrie(t *testing.T) {
	tr, err := New([][]int{{5, 3, eos}, {5, 1, eos}, {2, eos}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		prefix []int
		want   []int
	}{
		{nil, []int{2, 5}},
		{[]int{5}, []int{1, 3}},
		{[]int{5, 3}, []int{eos}},
		{[]int{5, 3, eos}, nil}, // a complete candidate
		{[]int{4}, nil},         // no candidate's prefix
		{[]int{5, 3, eos, 1}, nil},
	} {
		if got := tr.Allowed(c.prefix); !slices.Equal(got, c.want) {
			t.Errorf("Allowed(%v) = %v, want %v", c.prefix, got, c.want)
		}
	}
}

func TestSingleActionIsZero(t *testing.T) {
	tr, err := New([][]int{{7, 3, 9, eos}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tr.LogProbs([][]float64{{-2.5, -0.1, -13, -0.7}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != 0 || math.Signbit(got[0]) {
		t.Fatalf("single legal action: log ρ = %v, want 0 exactly", got[0])
	}
	if b := tr.Branching(0); len(b) != 0 {
		t.Fatalf("single legal action has branching positions %v", b)
	}
}

func TestForcedPositionsContributeZero(t *testing.T) {
	// Candidates 0 and 1 share the forced prefix 4 4 and branch at position 2; candidate 2 has a
	// forced tail 8 eos after the root's branch.
	paths := [][]int{{4, 4, 1, eos}, {4, 4, 2, eos}, {6, 8, eos}}
	m := newModel(3, 10, 2)
	tr, err := New(paths)
	if err != nil {
		t.Fatal(err)
	}
	rows := m.rows(paths)
	want, err := tr.LogProbs(rows)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range paths {
		forced := 0
		for j := range p {
			if slices.Contains(tr.Branching(i), j) {
				continue
			}
			forced++
			changed := m.rows(paths)
			changed[i][j] = -30 * rand.New(rand.NewPCG(uint64(i), uint64(j))).Float64()
			got, err := tr.LogProbs(changed)
			if err != nil {
				t.Fatalf("candidate %d position %d changed: %v", i, j, err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("candidate %d forced position %d changed: %v, want %v", i, j, got, want)
			}
		}
		if forced == 0 {
			t.Fatalf("candidate %d has no forced position to test", i)
		}
	}
}

// Reports within Tolerance of each other are accepted, the first candidate's is used for all,
// so the result is the same as the noiseless one and still sums to 1.
func TestSharedReportsWithinTolerance(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	paths := randomLegalSet(r, 30, 4, 4)
	m := newModel(11, 4, 2)
	tr, err := New(paths)
	if err != nil {
		t.Fatal(err)
	}
	want, err := tr.LogProbs(m.rows(paths))
	if err != nil {
		t.Fatal(err)
	}
	noisy := m.rows(paths)
	for i := range noisy {
		for j := range noisy[i] {
			noisy[i][j] = min(0, noisy[i][j]+Tolerance*0.99*(2*r.Float64()-1))
		}
	}
	// The first candidate through each node keeps its exact report.
	seen := map[string]bool{}
	for i, p := range paths {
		for j := range p {
			if k := fmt.Sprint(p[:j+1]); !seen[k] {
				seen[k] = true
				noisy[i][j] = m.rows(paths)[i][j]
			}
		}
	}
	got, err := tr.LogProbs(noisy)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("noisy reports: %v, want the first reports' %v", got, want)
	}
}

// A token of log-probability −Inf (probability 0 under the model) gives its candidate ρ = 0;
// the others still sum to 1.
func TestNegativeInfinity(t *testing.T) {
	paths := [][]int{{1, eos}, {2, eos}, {3, eos}}
	tr, err := New(paths)
	if err != nil {
		t.Fatal(err)
	}
	inf := math.Inf(-1)
	got, err := tr.LogProbs([][]float64{{math.Log(0.2), 0}, {inf, 0}, {math.Log(0.6), inf}})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(got[1], -1) || math.Abs(math.Exp(got[0])-0.25) > 1e-15 || math.Abs(math.Exp(got[2])-0.75) > 1e-15 {
		t.Fatalf("log ρ = %v, want [log 0.25, -Inf, log 0.75]", got)
	}
}

func TestNewRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		paths [][]int
		want  string
	}{
		{"no candidates", nil, "no candidates"},
		{"empty", [][]int{{1, eos}, {}}, "candidate 1 is empty"},
		{"duplicate", [][]int{{1, eos}, {2, eos}, {1, eos}}, "candidates 0 and 2 are the same"},
		{"earlier is a prefix", [][]int{{1, 2}, {3, eos}, {1, 2, eos}}, "candidate 0 is a prefix of candidate 2"},
		{"later is a prefix", [][]int{{3, eos}, {1, 2, eos}, {1, 2}}, "candidate 2 is a prefix of candidate 1"},
		{"no EOS", [][]int{{1}, {1, 1}}, "candidate 0 is a prefix of candidate 1"},
		{"negative token", [][]int{{1, eos}, {1, -1, eos}}, "candidate 1 has token id -1 at position 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := New(c.paths)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New(%v) = %v, %v; want an error containing %q", c.paths, tr, err, c.want)
			}
		})
	}
}

func TestLogProbsRefuses(t *testing.T) {
	// Candidates 0 and 1 share token 1 at position 0 and branch at position 1; candidate 2
	// branches from them at position 0.
	paths := [][]int{{1, 2, eos}, {1, 3, eos}, {4, eos}}
	good := func() [][]float64 {
		return [][]float64{{-0.5, -1, -0.1}, {-0.5, -2, -0.2}, {-1, -0.3}}
	}
	tr, err := New(paths)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.LogProbs(good()); err != nil {
		t.Fatalf("the good rows: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(rows [][]float64) [][]float64
		want string
	}{
		{"too few rows", func(r [][]float64) [][]float64 { return r[:2] }, "2 rows of log-probabilities for 3 candidates"},
		{"short row", func(r [][]float64) [][]float64 { r[1] = r[1][:2]; return r }, "candidate 1 has 2 log-probabilities for 3 tokens"},
		{"long row", func(r [][]float64) [][]float64 { r[2] = append(r[2], -1); return r }, "candidate 2 has 3 log-probabilities for 2 tokens"},
		{"NaN", func(r [][]float64) [][]float64 { r[1][2] = math.NaN(); return r }, "candidate 1 position 2: NaN"},
		{"+Inf", func(r [][]float64) [][]float64 { r[0][1] = math.Inf(1); return r }, "candidate 0 position 1: +Inf"},
		{"positive", func(r [][]float64) [][]float64 { r[2][0] = 1e-9; return r }, "candidate 2 position 0: 1e-09"},
		{"disagreeing shared prefix", func(r [][]float64) [][]float64 { r[1][0] = -0.5 - 1.01*Tolerance; return r },
			"candidates 0 and 1 share the token path to position 0"},
		{"-Inf against a finite report", func(r [][]float64) [][]float64 { r[1][0] = math.Inf(-1); return r },
			"candidates 0 and 1 share the token path to position 0"},
		{"every allowed token -Inf", func(r [][]float64) [][]float64 { r[0][1], r[1][1] = math.Inf(-1), math.Inf(-1); return r },
			"every token allowed at position 1 of candidate 0 has log-probability -Inf"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := tr.LogProbs(c.edit(good()))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("LogProbs = %v, %v; want an error containing %q", got, err, c.want)
			}
		})
	}
}

// BenchmarkLogProbs scores a legal set shaped like canonical JSON actions: every candidate
// opens with the same tokens, then a few kinds and many targets diverge. Under -short (make
// test) the set is 4 candidates of 8 tokens instead of 64 of 40.
func BenchmarkLogProbs(b *testing.B) {
	n, length := 64, 40
	if testing.Short() {
		n, length = 4, 8
	}
	// A real vocabulary is ~150k tokens; 1,000 keeps the random model's setup cheap and the
	// trie's work (which never sees the vocabulary) is the same.
	const vocab = 1000
	r := rand.New(rand.NewPCG(1, 2))
	shared := make([]int, length/4)
	for j := range shared {
		shared[j] = 1 + r.IntN(vocab-1)
	}
	paths := make([][]int, n)
	for i := range paths {
		p := slices.Clone(shared)
		p = append(p, 1+i%4) // the kind
		for len(p) < length-1 {
			p = append(p, 1+r.IntN(vocab-1))
		}
		paths[i] = append(p, eos)
	}
	tr, err := New(paths)
	if err != nil {
		b.Fatal(err)
	}
	rows := newModel(1, vocab, 2).rows(paths)
	for b.Loop() {
		if _, err := tr.LogProbs(rows); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "candidates/s")
}
