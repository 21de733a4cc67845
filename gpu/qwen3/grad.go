package qwen3

import (
	"fmt"
	"slices"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/evosteer/evosteer-go/internal/actiontrie"
)

// Example is one term of the objective: a decision, the index of its chosen legal action and the
// term's weight w_t.
type Example struct {
	Decision Decision
	Action   int
	Weight   float64
}

// AdapterGradient is the objective J = Σ_t w_t · log θ(a_t|s_t) (trie-masked log-probabilities
// under the adapted model) and its gradient with respect to the adapter's A and B; the base is
// frozen.
type AdapterGradient struct {
	Objective float64
	LogProbs  []float64  // log θ(a_t|s_t) per example
	Grads     []PairGrad // per adapted projection, in layer then ModuleNames order
}

// PairGrad is ∂J/∂A and ∂J/∂B of one adapted projection, row-major as the adapter's A [r, in] and
// B [out, r], in the graphs' dtype (float64 values, exact for either).
type PairGrad struct {
	Layer  int
	Module string
	A, B   []float64
}

type gradKey struct{}

// Gradient returns the objective of examples and its gradient with respect to the model's adapter
// (SetAdapter): one teacher-forced forward of prompt + action per example (batched, right-padded),
// at each branching position of the action a log softmax over the allowed tokens' rows of the
// output matrix only, and the reverse pass through the adapter's A and B.
func (m *Model) Gradient(examples []Example) (*AdapterGradient, error) {
	ad := m.adapter
	if ad == nil {
		return nil, fmt.Errorf("qwen3: gradient of no adapter")
	}
	if len(examples) == 0 {
		return nil, fmt.Errorf("qwen3: gradient of no examples")
	}
	type entry struct {
		pos     int   // index of the hidden state that predicts the token
		allowed []int // allowed tokens there, sorted
		target  int   // index of the action's token in allowed
	}
	seqs := make([][]int, len(examples))
	entries := make([][]entry, len(examples))
	L, J, K := 1, 1, 1
	for i, ex := range examples {
		d := ex.Decision
		if len(d.Prompt) == 0 {
			return nil, fmt.Errorf("qwen3: example %d has an empty prompt", i)
		}
		if ex.Action < 0 || ex.Action >= len(d.Actions) {
			return nil, fmt.Errorf("qwen3: example %d chose action %d of %d", i, ex.Action, len(d.Actions))
		}
		t, err := actiontrie.New(d.Actions)
		if err != nil {
			return nil, fmt.Errorf("qwen3: example %d: %w", i, err)
		}
		path := d.Actions[ex.Action]
		br := t.Branching(ex.Action)
		seqs[i] = slices.Clone(d.Prompt)
		if len(br) > 0 {
			seqs[i] = append(seqs[i], path[:br[len(br)-1]]...)
		}
		for _, j := range br {
			al := t.Allowed(path[:j])
			k, _ := slices.BinarySearch(al, path[j])
			entries[i] = append(entries[i], entry{len(d.Prompt) + j - 1, al, k})
			K = max(K, len(al))
		}
		L, J = max(L, len(seqs[i])), max(J, len(br))
	}
	N := pow2(len(examples), 1)
	L, J, K = pow2(L, 1), pow2(J, 1), pow2(K, 1)
	tok := make([]int32, N*L)
	posn := make([]int32, N*L)
	valid := make([]bool, N*L)
	gidx := make([]int32, N*J*2)
	allowed := make([]int32, N*J*K)
	amask := make([]bool, N*J*K)
	target := make([]bool, N*J*K)
	weight := make([]float64, N*J)
	for i, s := range seqs {
		for j, id := range s {
			if id < 0 || id >= m.cfg.VocabSize {
				return nil, fmt.Errorf("qwen3: example %d has token %d outside the vocabulary", i, id)
			}
			tok[i*L+j], posn[i*L+j], valid[i*L+j] = int32(id), int32(j), true
		}
		for j, e := range entries[i] {
			gidx[(i*J+j)*2], gidx[(i*J+j)*2+1] = int32(i), int32(e.pos)
			for k, id := range e.allowed {
				allowed[(i*J+j)*K+k], amask[(i*J+j)*K+k] = int32(id), true
			}
			target[(i*J+j)*K+e.target] = true
			weight[i*J+j] = examples[i].Weight
		}
	}
	for i := len(seqs); i < N; i++ {
		valid[i*L] = true // a padding row: one token, no entries
	}
	args := []*tensors.Tensor{
		tensors.FromFlatDataAndDimensions(tok, N, L),
		tensors.FromFlatDataAndDimensions(posn, N, L),
		tensors.FromFlatDataAndDimensions(valid, N, L),
		tensors.FromFlatDataAndDimensions(gidx, N, J, 2),
		tensors.FromFlatDataAndDimensions(allowed, N, J, K),
		tensors.FromFlatDataAndDimensions(amask, N, J, K),
		tensors.FromFlatDataAndDimensions(target, N, J, K),
		m.tensor(weight, N, J),
	}
	args = append(args, m.weights...)
	args = append(args, ad.tensors...)
	e, err := m.exec(gradKey{}, m.gradGraph(ad))
	if err != nil {
		return nil, err
	}
	res, err := e.Call(args)
	if err != nil {
		return nil, fmt.Errorf("qwen3: gradient: %w", err)
	}
	out := &AdapterGradient{}
	obj, err := floats(res[0])
	if err != nil {
		return nil, err
	}
	out.Objective = obj[0]
	lp, err := floats(res[1])
	if err != nil {
		return nil, err
	}
	out.LogProbs = lp[:len(examples)]
	for i, sl := range ad.slots {
		g := PairGrad{Layer: sl.layer, Module: sl.name}
		if g.A, err = floats(res[2+2*i]); err != nil {
			return nil, err
		}
		if g.B, err = floats(res[3+2*i]); err != nil {
			return nil, err
		}
		out.Grads = append(out.Grads, g)
	}
	return out, nil
}

// gradGraph is the objective's graph: inputs tokens, positions, valid [N, L], gather index [N, J,
// 2], allowed tokens, their mask and the one-hot target [N, J, K], weights [N, J], the weights and
// the adapter; outputs J, log θ per example [N] and the gradient per adapter tensor.
func (m *Model) gradGraph(ad *deviceAdapter) func([]*graph.Node) []*graph.Node {
	return func(in []*graph.Node) []*graph.Node {
		tokens, positions, valid, gidx, allowed, amask, target, weight := in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7]
		w, rest := m.splitWeights(in[8:])
		an := ad.nodes(rest)
		L := tokens.Shape().Dimensions[1]
		zero := graph.Const(tokens.Graph(), int32(0))
		h, _ := m.decoder(tokens, positions, attendMask(valid, zero, L), nil, nil, 0, w, an)
		hg := graph.Gather(h, gidx)                                 // [N, J, hidden]
		rows := graph.Gather(w.head, graph.ExpandAxes(allowed, -1)) // [N, J, K, hidden]
		lp := maskedLogSoftmax(graph.Einsum("njh,njkh->njk", hg, rows), amask)
		tl := graph.ReduceSum(graph.Where(target, lp, graph.ZerosLike(lp)), -1) // [N, J]
		obj := graph.ReduceAllSum(graph.Mul(tl, weight))
		out := []*graph.Node{obj, graph.ReduceSum(tl, -1)}
		return append(out, graph.Gradient(obj, an.flat...)...)
	}
}
