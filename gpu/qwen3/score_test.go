package qwen3

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/evosteer/evosteer-go/internal/actiontrie"
)

// bruteForce is each action's masked likelihood from one full forward of prompt + action and
// the full vocabulary's log-softmax, turned into ρ by actiontrie.LogProbs.
func bruteForce(t *testing.T, m *Model, d Decision, adapter bool) []float64 {
	t.Helper()
	tr, err := actiontrie.New(d.Actions)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]float64
	for _, a := range d.Actions {
		seq := append(slices.Clone(d.Prompt), a...)
		_, logits := full(t, m, seq, adapter)
		row := make([]float64, len(a))
		for j, tok := range a {
			row[j] = logSoftmax(logits[len(d.Prompt)+j-1], 1)[tok]
		}
		rows = append(rows, row)
	}
	lp, err := tr.LogProbs(rows)
	if err != nil {
		t.Fatal(err)
	}
	return lp
}

func checkScore(t *testing.T, m *Model, tol float64) {
	r := rand.New(rand.NewPCG(7, 8))
	worst := 0.0
	for _, k := range []int{1, 2, 5, 12, 40} {
		d := randDecision(r, k)
		s, err := m.Score(d, false)
		if err != nil {
			t.Fatal(err)
		}
		want := bruteForce(t, m, d, false)
		worst = max(worst, maxDiff(s.LogProbs, want))
		sum := 0.0
		for _, lp := range s.LogProbs {
			sum += math.Exp(lp)
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("%d actions: Σ exp(log-prob) = %.15f", k, sum)
		}
		wantLast, _ := full(t, m, d.Prompt, false)
		if dl := maxDiff(s.Last, wantLast[len(d.Prompt)-1]); dl > tol {
			t.Errorf("%d actions: prompt's last hidden state differs by %g", k, dl)
		}
	}
	t.Logf("%s: trie-masked vs brute force max |Δ| %.2g", m.DType(), worst)
	if worst > tol {
		t.Errorf("trie-masked log-probs differ from brute-force masked likelihoods by %g (tolerance %g)", worst, tol)
	}
}

// TestScoreEqualsBruteForce: Score's log-probs equal masked likelihoods from full forwards of
// prompt + action, to 1e-5 in float32 and 1e-9 in float64, and sum to 1 in probability.
func TestScoreEqualsBruteForce(t *testing.T) {
	t.Run("float32", func(t *testing.T) { checkScore(t, tinyModel(t, dtypes.Float32, 3), 1e-5) })
	t.Run("float64", func(t *testing.T) { checkScore(t, tinyModel(t, dtypes.Float64, 3), 1e-9) })
}

// TestScoreWork: one prefill and one extension per branching node beyond the first, feeding each
// trie node on the way to a branching node once, whatever the number of legal actions; the
// extensions of one level of the tree of branching nodes go in one call.
func TestScoreWork(t *testing.T) {
	m := tinyModel(t, dtypes.Float32, 4)
	r := rand.New(rand.NewPCG(9, 10))
	for _, k := range []int{1, 2, 3, 8, 30, 60} {
		d := randDecision(r, k)
		before := m.Work()
		s, err := m.Score(d, false)
		if err != nil {
			t.Fatal(err)
		}
		nodes, fed := branchingNodes(d.Actions)
		want := Work{Prefills: 1, Extensions: int64(max(nodes-1, 0)), Tokens: int64(len(d.Prompt) + fed), Calls: int64(max(branchingLevels(d.Actions), 1))}
		if s.Work != want {
			t.Errorf("%d actions (%d branching nodes): work %+v, want %+v", k, nodes, s.Work, want)
		}
		if got := m.Work().Sub(before); got != s.Work {
			t.Errorf("%d actions: the model counted %+v, the scoring %+v", k, got, s.Work)
		}
	}
}

// TestSampleMatchesProbabilities: 20,000 draws at temperature 1 follow exp(log-prob) (chi-square
// p > 0.001), each draw's log-prob is its action's.
func TestSampleMatchesProbabilities(t *testing.T) {
	m := tinyModel(t, dtypes.Float32, 5)
	d := randDecision(rand.New(rand.NewPCG(11, 12)), 7)
	s, err := m.Score(d, false)
	if err != nil {
		t.Fatal(err)
	}
	const N = 20000
	rng := rand.New(rand.NewPCG(13, 14))
	counts := make([]float64, len(d.Actions))
	for range N {
		a, lp := s.Sample(rng, 1)
		if lp != s.LogProbs[a] && math.Abs(lp-s.LogProbs[a]) > 1e-12 {
			t.Fatalf("draw of action %d has log-prob %v, its score %v", a, lp, s.LogProbs[a])
		}
		counts[a]++
	}
	chi := 0.0
	for i, c := range counts {
		e := N * math.Exp(s.LogProbs[i])
		chi += (c - e) * (c - e) / e
	}
	p := distuv.ChiSquared{K: float64(len(counts) - 1)}.Survival(chi)
	t.Logf("probabilities %.3f, χ² %.2f, p %.3f", expAll(s.LogProbs), chi, p)
	if p < 0.001 {
		t.Errorf("draws do not follow the probabilities: χ² %.2f with %d df, p %g", chi, len(counts)-1, p)
	}
}

func expAll(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = math.Exp(v)
	}
	return out
}

// TestSampleDeterministic: the model's lazy walk and the scored tree's draw the same actions for a
// seed at temperatures 1, 0.5 and 0 (greedy), with Score's log-probs; a seed repeats itself, and
// the lazy walk extends only along its path.
func TestSampleDeterministic(t *testing.T) {
	m := tinyModel(t, dtypes.Float32, 6)
	d := randDecision(rand.New(rand.NewPCG(15, 16)), 10)
	s, err := m.Score(d, false)
	if err != nil {
		t.Fatal(err)
	}
	nodes, _ := branchingNodes(d.Actions)
	for _, temp := range []float64{1, 0.5, 0} {
		var seq1, seq2 []int
		for seed := range uint64(12) {
			got, err := m.Sample(d, false, temp, rand.New(rand.NewPCG(seed, 99)))
			if err != nil {
				t.Fatal(err)
			}
			a, lp := s.Sample(rand.New(rand.NewPCG(seed, 99)), temp)
			if got.Action != a || math.Abs(got.LogProb-lp) > 1e-12 || math.Abs(lp-s.LogProbs[a]) > 1e-12 {
				t.Errorf("T=%v seed %d: model drew %d (%v), tree %d (%v), score %v", temp, seed, got.Action, got.LogProb, a, lp, s.LogProbs[a])
			}
			if got.Work.Prefills != 1 || got.Work.Extensions > int64(nodes-1) {
				t.Errorf("T=%v seed %d: work %+v for %d branching nodes", temp, seed, got.Work, nodes)
			}
			seq1 = append(seq1, a)
			b, _ := s.Sample(rand.New(rand.NewPCG(seed, 99)), temp)
			seq2 = append(seq2, b)
		}
		if !slices.Equal(seq1, seq2) {
			t.Errorf("T=%v: one seed drew %v then %v", temp, seq1, seq2)
		}
	}
	rng1, rng2 := rand.New(rand.NewPCG(1, 1)), rand.New(rand.NewPCG(1, 1))
	for range 200 {
		a, _ := s.Sample(rng1, 1)
		b, _ := s.Sample(rng2, 1)
		if a != b {
			t.Fatal("two generators of one seed drew differently")
		}
	}
}
