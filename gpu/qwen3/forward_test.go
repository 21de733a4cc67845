package qwen3

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/compute/dtypes"
)

// full runs seq in one prefill and returns the hidden states and logits at every position.
func full(t *testing.T, m *Model, seq []int, adapter bool) ([][]float64, [][]float64) {
	t.Helper()
	all := iota(len(seq))
	_, out, err := m.Prefill([][]int{seq}, Query{Hidden: [][]int{all}, Logits: [][]int{all}, Adapter: adapter})
	if err != nil {
		t.Fatal(err)
	}
	return out.Hidden[0], out.Logits[0]
}

// TestExtendEqualsRecompute: a prefill then extensions of 3, 1, 40 (growing the cache) and 2
// tokens give the hidden states and logits of one prefill of the whole sequence at every
// position, and a cache extended twice (a branch) gives both continuations' values.
func TestExtendEqualsRecompute(t *testing.T) {
	const tol = 1e-5
	m := tinyModel(t, dtypes.Float32, 1)
	r := rand.New(rand.NewPCG(1, 2))
	prompt := randTokens(r, 5, 300)
	chunks := [][]int{randTokens(r, 3, 300), randTokens(r, 1, 300), randTokens(r, 60, 300), randTokens(r, 2, 300)}
	seq := slices.Clone(prompt)
	for _, c := range chunks {
		seq = append(seq, c...)
	}
	wantH, wantL := full(t, m, seq, false)
	c, out, err := m.Prefill([][]int{prompt}, Query{Hidden: [][]int{iota(len(prompt))}, Logits: [][]int{iota(len(prompt))}})
	if err != nil {
		t.Fatal(err)
	}
	gotH, gotL := out.Hidden[0], out.Logits[0]
	if d := maxDiff(out.Last[0], wantH[len(prompt)-1]); d > tol {
		t.Errorf("last hidden state of the prefill differs by %g", d)
	}
	caches := []*Cache{c}
	for _, ch := range chunks {
		c, out, err = c.Extend([][]int{ch}, Query{Hidden: [][]int{iota(len(ch))}, Logits: [][]int{iota(len(ch))}})
		if err != nil {
			t.Fatal(err)
		}
		gotH, gotL = append(gotH, out.Hidden[0]...), append(gotL, out.Logits[0]...)
		caches = append(caches, c)
	}
	if c.Capacity() <= 64 {
		t.Errorf("capacity %d: the 60-token extension should have grown the cache", c.Capacity())
	}
	dh, dl := maxDiff2(gotH, wantH), maxDiff2(gotL, wantL)
	t.Logf("max |Δ| over %d positions: hidden %.2g, logits %.2g", len(seq), dh, dl)
	if dh > tol || dl > tol {
		t.Errorf("prefill+extensions differ from a full recompute: hidden %g, logits %g (tolerance %g)", dh, dl, tol)
	}
	// Branch: continue the cache after the second chunk another way.
	alt := randTokens(r, 4, 300)
	_, out, err = caches[2].Extend([][]int{alt}, Query{Logits: [][]int{iota(4)}})
	if err != nil {
		t.Fatal(err)
	}
	_, wantAlt := full(t, m, append(slices.Clone(seq[:len(prompt)+4]), alt...), false)
	if d := maxDiff2(out.Logits[0], wantAlt[len(prompt)+4:]); d > tol {
		t.Errorf("a branch of a used cache differs from its recompute by %g", d)
	}
}

// TestBatchedEqualsSingle: prompts of lengths 3, 9 and 6 prefilled together and extended by 2, 0
// and 5 tokens give each row's values alone; Select copies rows to continue one prefix two ways.
func TestBatchedEqualsSingle(t *testing.T) {
	const tol = 1e-5
	m := tinyModel(t, dtypes.Float32, 2)
	r := rand.New(rand.NewPCG(3, 4))
	prompts := [][]int{randTokens(r, 3, 300), randTokens(r, 9, 300), randTokens(r, 6, 300)}
	ext := [][]int{randTokens(r, 2, 300), nil, randTokens(r, 5, 300)}
	var hq, eq [][]int
	for i := range prompts {
		hq, eq = append(hq, iota(len(prompts[i]))), append(eq, iota(len(ext[i])))
	}
	c, out, err := m.Prefill(prompts, Query{Hidden: hq})
	if err != nil {
		t.Fatal(err)
	}
	c2, out2, err := c.Extend(ext, Query{Logits: eq, Candidates: [][]int{{5, 7}, {1}, {299, 0, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i := range prompts {
		wantH, wantL := full(t, m, append(slices.Clone(prompts[i]), ext[i]...), false)
		worst = max(worst, maxDiff2(out.Hidden[i], wantH[:len(prompts[i])]))
		worst = max(worst, maxDiff2(out2.Logits[i], wantL[len(prompts[i]):]))
		if len(ext[i]) == 0 {
			if out2.Last[i] != nil {
				t.Errorf("row %d was given no tokens but has a last hidden state", i)
			}
			continue
		}
		lastL := wantL[len(wantL)-1]
		for k, id := range [][]int{{5, 7}, {1}, {299, 0, 3}}[i] {
			worst = max(worst, maxDiff([]float64{out2.Candidates[i][k]}, []float64{lastL[id]}))
		}
	}
	t.Logf("batched vs single: max |Δ| %.2g", worst)
	if worst > tol {
		t.Errorf("batched rows differ from one at a time by %g", worst)
	}
	if c2.Len(1) != 9 || c2.Len(2) != 11 {
		t.Errorf("lengths %d, %d, want 9, 11", c2.Len(1), c2.Len(2))
	}
	// Select row 2 twice and row 0 once, continue each differently in one batch.
	sel, err := c2.Select([]int{2, 2, 0})
	if err != nil {
		t.Fatal(err)
	}
	cont := [][]int{randTokens(r, 3, 300), randTokens(r, 1, 300), randTokens(r, 2, 300)}
	_, out3, err := sel.Extend(cont, Query{Logits: [][]int{iota(3), iota(1), iota(2)}})
	if err != nil {
		t.Fatal(err)
	}
	for j, src := range []int{2, 2, 0} {
		seq := append(append(slices.Clone(prompts[src]), ext[src]...), cont[j]...)
		_, wantL := full(t, m, seq, false)
		if d := maxDiff2(out3.Logits[j], wantL[len(seq)-len(cont[j]):]); d > tol {
			t.Errorf("selected row %d (from %d) differs by %g", j, src, d)
		}
	}
}

// TestFloat64Graphs: the float64 graphs run and agree with the float32 ones to float32 rounding.
func TestFloat64Graphs(t *testing.T) {
	m32, m64 := tinyModel(t, dtypes.Float32, 5), tinyModel(t, dtypes.Float64, 5)
	seq := randTokens(rand.New(rand.NewPCG(5, 6)), 12, 300)
	_, l32 := full(t, m32, seq, false)
	_, l64 := full(t, m64, seq, false)
	d := maxDiff2(l32, l64)
	t.Logf("float32 vs float64 logits: max |Δ| %.2g", d)
	if d > 1e-4 || d == 0 {
		t.Errorf("float32 and float64 logits differ by %g", d)
	}
}
