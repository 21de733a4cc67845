package qwen3_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/gpu/qwen3"
	"github.com/evosteer/evosteer-go/gpu/qwen3/qwen3test"
)

func newRef(t *testing.T, cfg qwen3.Config, w qwen3.Weights, a *qwen3.Adapter) *qwen3.Reference {
	t.Helper()
	r, err := qwen3.NewReference(cfg, w, a)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func prefill(t *testing.T, r *qwen3.Reference, tokens []int) [][]float64 {
	t.Helper()
	_, logits, err := r.Prefill(tokens)
	if err != nil {
		t.Fatal(err)
	}
	return logits
}

// maxDiff is the largest |a−b| over all positions and logits.
func maxDiff(t *testing.T, a, b [][]float64) float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d positions against %d", len(a), len(b))
	}
	d := 0.0
	for i := range a {
		for j := range a[i] {
			d = max(d, math.Abs(a[i][j]-b[i][j]))
		}
	}
	return d
}

func randomTokens(seed uint64, n, vocab int) []int {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]int, n)
	for i := range out {
		out[i] = rng.IntN(vocab)
	}
	return out
}

// A prefill and extensions by chunks give the logits of one full recompute at every position,
// and a cloned cache branches: each branch equals the full recompute of its own sequence, and
// the prefix's cache is untouched.
func TestReferenceCacheMatchesFullRecompute(t *testing.T) {
	cfg := qwen3test.Config()
	r := newRef(t, cfg, qwen3test.Weights(cfg, 11), nil)
	tokens := randomTokens(1, 12, cfg.VocabSize)
	full := prefill(t, r, tokens)
	cache, got, err := r.Prefill(tokens[:4])
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range [][2]int{{4, 5}, {5, 8}, {8, 9}, {9, 12}} {
		logits, err := r.Extend(cache, tokens[chunk[0]:chunk[1]])
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, logits...)
	}
	if d := maxDiff(t, got, full); d > 1e-12 {
		t.Errorf("prefill + extensions against the full recompute: max |Δ| %g", d)
	}
	if cache.Len() != 12 {
		t.Errorf("cache length %d", cache.Len())
	}

	prefix, _, _ := r.Prefill(tokens[:5])
	for _, branch := range [][]int{{3, 1, 4}, {270, 9}} {
		c := prefix.Clone()
		logits, err := r.Extend(c, branch)
		if err != nil {
			t.Fatal(err)
		}
		whole := prefill(t, r, append(slices.Clone(tokens[:5]), branch...))
		if d := maxDiff(t, logits, whole[5:]); d > 1e-12 {
			t.Errorf("branch %v: max |Δ| %g", branch, d)
		}
	}
	if prefix.Len() != 5 {
		t.Errorf("the prefix's cache grew to %d", prefix.Len())
	}
	// The logits move with the context (the cache is used, not only the last token).
	if d := maxDiff(t, full[11:], prefill(t, r, tokens[11:])); d < 1e-3 {
		t.Errorf("the last token's logits ignore the context (max |Δ| %g)", d)
	}
}

// A tied model is the untied model whose lm_head is a copy of the embedding; another lm_head
// changes the logits.
func TestReferenceTiedUntied(t *testing.T) {
	cfg := qwen3test.Config()
	w := qwen3test.Weights(cfg, 5)
	tokens := randomTokens(2, 6, cfg.VocabSize)
	tied := prefill(t, newRef(t, cfg, w, nil), tokens)
	ucfg := cfg
	ucfg.TieWordEmbeddings = false
	uw := w
	uw.LMHead = qwen3.Tensor{Shape: slices.Clone(w.Embed.Shape), Data: slices.Clone(w.Embed.Data)}
	if d := maxDiff(t, tied, prefill(t, newRef(t, ucfg, uw, nil), tokens)); d != 0 {
		t.Errorf("untied with lm_head = embedding: max |Δ| %g", d)
	}
	uw.LMHead = qwen3.RandomWeights(ucfg, 6, 0.3).LMHead
	if d := maxDiff(t, tied, prefill(t, newRef(t, ucfg, uw, nil), tokens)); d < 1e-2 {
		t.Errorf("another lm_head: max |Δ| %g", d)
	}
}

// Grouped-query attention: 4 query heads over 2 key/value heads equal 4 over 4 whose key and
// value heads 2g and 2g+1 are copies of head g (query head h reads kv head h / 2); pairing them
// the other way (h mod 2) gives other logits.
func TestReferenceGQA(t *testing.T) {
	cfg := qwen3test.Config() // 4 heads, 2 kv heads, head_dim 8
	w := qwen3test.Weights(cfg, 9)
	tokens := randomTokens(3, 7, cfg.VocabSize)
	gqa := prefill(t, newRef(t, cfg, w, nil), tokens)
	expand := func(p qwen3.Tensor, kvOf func(j int) int) qwen3.Tensor {
		hd, in := cfg.HeadDim, p.Shape[1]
		out := qwen3.Tensor{Shape: []int{4 * hd, in}}
		for j := range 4 {
			g := kvOf(j)
			out.Data = append(out.Data, p.Data[g*hd*in:(g+1)*hd*in]...)
		}
		return out
	}
	mha := cfg
	mha.NumKeyValueHeads = 4
	for _, c := range []struct {
		kvOf func(int) int
		same bool
	}{{func(j int) int { return j / 2 }, true}, {func(j int) int { return j % 2 }, false}} {
		ew := w
		ew.Layers = slices.Clone(w.Layers)
		for i, l := range ew.Layers {
			l.KProj, l.VProj = expand(l.KProj, c.kvOf), expand(l.VProj, c.kvOf)
			ew.Layers[i] = l
		}
		d := maxDiff(t, gqa, prefill(t, newRef(t, mha, ew, nil), tokens))
		if c.same && d > 1e-12 || !c.same && d < 1e-3 {
			t.Errorf("kv heads expanded (same grouping %v): max |Δ| %g", c.same, d)
		}
	}
}

// A model small enough to follow by hand: 1 layer, hidden 4, one head of width 2, MLP 1,
// vocabulary 2; the logit of token 1 after the tokens [0, 1], computed here step by step.
func TestReferenceByHand(t *testing.T) {
	const eps = 1e-6
	cfg := qwen3.Config{ModelType: "qwen3", VocabSize: 2, HiddenSize: 4, IntermediateSize: 1, NumHiddenLayers: 1,
		NumAttentionHeads: 1, NumKeyValueHeads: 1, HeadDim: 2, HiddenAct: "silu", MaxPositionEmbeddings: 8,
		RMSNormEps: eps, RopeTheta: 10000, TieWordEmbeddings: false}
	m := func(rows, cols int, d ...float32) qwen3.Tensor {
		return qwen3.Tensor{Shape: []int{rows, cols}, Data: d}
	}
	ones := func(n int) qwen3.Tensor { return qwen3.Tensor{Shape: []int{n}, Data: slices.Repeat([]float32{1}, n)} }
	pick01 := m(2, 4, 1, 0, 0, 0, 0, 1, 0, 0) // the first two dimensions
	w := qwen3.Weights{
		Embed: m(2, 4, 1, 0, 0, 0, 0, 1, 0, 0), // token 0 = e0, token 1 = e1
		Layers: []qwen3.Layer{{
			InputNorm: ones(4), QProj: pick01, KProj: pick01, VProj: pick01,
			OProj: m(4, 2, 0, 0, 0, 0, 1, 0, 0, 1), // the head's output into dimensions 2, 3
			QNorm: ones(2), KNorm: ones(2), PostAttnNorm: ones(4),
			GateProj: m(1, 4, 0, 1, 0, 0), UpProj: m(1, 4, 0, 0, 1, 0), DownProj: m(4, 1, 0, 0, 0, 1),
		}},
		Norm:   ones(4),
		LMHead: m(2, 4, 0, 0, 1, 0, 0, 0, 0, 1),
	}
	logits := prefill(t, newRef(t, cfg, w, nil), []int{0, 1})

	// By hand. Input norm of a unit vector in 4 dimensions: a = 1/√(1/4 + ε); q and k of
	// position 0 are [a, 0], of position 1 [0, a]; the head norm makes them [b, 0] and [0, b]
	// with b = a/√(a²/2 + ε); values are [a, 0] and [0, a].
	a := 1 / math.Sqrt(0.25+eps)
	b := a / math.Sqrt(a*a/2+eps)
	// Rotary: position 0 is unrotated; position 1 turns (x0, x1) by 1 radian (θ^0 = 1):
	// (0, b) → (−b sin 1, b cos 1), for the query and the key alike.
	q1 := [2]float64{-b * math.Sin(1), b * math.Cos(1)}
	s0 := (q1[0]*b + q1[1]*0) / math.Sqrt(2) // q1·k0 / √head_dim
	s1 := (q1[0]*q1[0] + q1[1]*q1[1]) / math.Sqrt(2)
	p0 := math.Exp(s0) / (math.Exp(s0) + math.Exp(s1))
	p1 := 1 - p0
	// Attention output p0·v0 + p1·v1 = [p0 a, p1 a], written by o_proj into dimensions 2 and 3.
	x := [4]float64{0, 1, p0 * a, p1 * a}
	r := 1 / math.Sqrt((x[0]*x[0]+x[1]*x[1]+x[2]*x[2]+x[3]*x[3])/4+eps)
	gate, up := x[1]*r, x[2]*r
	x[3] += gate / (1 + math.Exp(-gate)) * up // down_proj writes silu(gate)·up into dimension 3
	f := 1 / math.Sqrt((x[0]*x[0]+x[1]*x[1]+x[2]*x[2]+x[3]*x[3])/4+eps)
	want := x[3] * f // lm_head's row 1 reads dimension 3
	if math.Abs(logits[1][1]-want) > 1e-12 || math.Abs(want-1.7763) > 1e-3 {
		t.Errorf("logit of token 1 at position 1: %.15g, by hand %.15g (≈ 1.7763)", logits[1][1], want)
	}
	// At position 0 attention sees itself only: x = [1, 0, a, 0], no MLP (gate reads 0).
	r0 := 1 / math.Sqrt((1+a*a)/4+eps)
	if want0 := a * r0; math.Abs(logits[0][0]-want0) > 1e-12 {
		t.Errorf("logit of token 0 at position 0: %.15g, by hand %.15g", logits[0][0], want0)
	}
}

// A LoRA adapter is W + s·B·A: with B = 0 it changes nothing; otherwise it equals the base model
// whose projections hold the merged weights (merged here in float64, stored in float32).
func TestReferenceLoRA(t *testing.T) {
	cfg := qwen3test.Config()
	w := qwen3test.Weights(cfg, 13)
	tokens := randomTokens(4, 6, cfg.VocabSize)
	base := prefill(t, newRef(t, cfg, w, nil), tokens)
	rank := 2
	lcfg := qwen3.LoRAConfig{Rank: rank, Alpha: 4, TargetModules: []string{"q_proj", "down_proj"}}
	rng := rand.New(rand.NewPCG(5, 5))
	randT := func(rows, cols int, scale float64) qwen3.Tensor {
		t := qwen3.Tensor{Shape: []int{rows, cols}}
		for range rows * cols {
			t.Data = append(t.Data, float32(rng.NormFloat64()*scale))
		}
		return t
	}
	zeroB := &qwen3.Adapter{Config: lcfg}
	adapter := &qwen3.Adapter{Config: lcfg}
	merged := w
	merged.Layers = slices.Clone(w.Layers)
	for i := range cfg.NumHiddenLayers {
		qa, da := randT(rank, cfg.HiddenSize, 0.3), randT(rank, cfg.IntermediateSize, 0.3)
		zeroB.Layers = append(zeroB.Layers, map[string]qwen3.LoRAPair{"q_proj": {A: qa, B: randT(cfg.QDim(), rank, 0)}})
		qb, db := randT(cfg.QDim(), rank, 0.3), randT(cfg.HiddenSize, rank, 0.3)
		adapter.Layers = append(adapter.Layers, map[string]qwen3.LoRAPair{"q_proj": {A: qa, B: qb}, "down_proj": {A: da, B: db}})
		l := merged.Layers[i]
		l.QProj, l.DownProj = mergeLoRA(l.QProj, qa, qb, lcfg.Scale()), mergeLoRA(l.DownProj, da, db, lcfg.Scale())
		merged.Layers[i] = l
	}
	if d := maxDiff(t, base, prefill(t, newRef(t, cfg, w, zeroB), tokens)); d != 0 {
		t.Errorf("B = 0: max |Δ| %g", d)
	}
	lora := prefill(t, newRef(t, cfg, w, adapter), tokens)
	if d := maxDiff(t, lora, prefill(t, newRef(t, cfg, merged, nil), tokens)); d > 1e-5 {
		t.Errorf("adapter against merged weights: max |Δ| %g", d)
	}
	if d := maxDiff(t, lora, base); d < 1e-2 {
		t.Errorf("the adapter does not move the logits: max |Δ| %g", d)
	}
	if s := (qwen3.LoRAConfig{Rank: 4, Alpha: 8, RSLoRA: true}).Scale(); s != 4 {
		t.Errorf("rsLoRA scale α/√r = %v", s)
	}
	bad := &qwen3.Adapter{Config: lcfg, Layers: slices.Clone(adapter.Layers)}
	bad.Layers[1] = map[string]qwen3.LoRAPair{"v_proj": adapter.Layers[1]["q_proj"]}
	if _, err := qwen3.NewReference(cfg, w, bad); err == nil || !strings.Contains(err.Error(), `layer 1: "v_proj" is not one of its target modules`) {
		t.Errorf("untargeted module: %v", err)
	}
	bad.Layers[1] = map[string]qwen3.LoRAPair{"down_proj": adapter.Layers[1]["q_proj"]}
	if _, err := qwen3.NewReference(cfg, w, bad); err == nil || !strings.Contains(err.Error(), "layer 1: down_proj.lora_A: shape [2 16], want [2 24]") {
		t.Errorf("misshapen A: %v", err)
	}
}

func mergeLoRA(wt, a, b qwen3.Tensor, s float64) qwen3.Tensor {
	out, in, r := wt.Shape[0], wt.Shape[1], a.Shape[0]
	m := qwen3.Tensor{Shape: wt.Shape, Data: slices.Clone(wt.Data)}
	for o := range out {
		for i := range in {
			sum := 0.0
			for k := range r {
				sum += float64(b.Data[o*r+k]) * float64(a.Data[k*in+i])
			}
			m.Data[o*in+i] = float32(float64(wt.Data[o*in+i]) + s*sum)
		}
	}
	return m
}

// Bad tokens and positions past max_position_embeddings are errors that leave the cache as it was.
func TestReferenceErrors(t *testing.T) {
	cfg := qwen3test.Config()
	cfg.MaxPositionEmbeddings = 4
	r := newRef(t, cfg, qwen3test.Weights(cfg, 1), nil)
	c, _, err := r.Prefill([]int{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Extend(c, []int{300}); err == nil || !strings.Contains(err.Error(), "token 300 at 0 is outside the vocabulary [0, 300)") {
		t.Errorf("bad token: %v", err)
	}
	if _, err := r.Extend(c, []int{1, 2}); err == nil || !strings.Contains(err.Error(), "positions up to 5, past max_position_embeddings 4") {
		t.Errorf("past the positions: %v", err)
	}
	if c.Len() != 3 {
		t.Errorf("cache length %d after errors", c.Len())
	}
}
