package episode

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"github.com/evosteer/evosteer-go/gpu"
)

// batches scores the network work of the episodes in flight. Each episode asks for one thing at
// a time — the published value head's estimate of its state, or the policy's log-probabilities
// over its legal actions — and waits. A question is scored at once when the network is idle;
// questions that arrive while a batch is being scored form the next batch. No episode waits
// for another to ask, so a slow executor call delays its own episode only. The batches depend
// on timing, but no answer does: the network scores every row alone (gpu's batch-invariance
// tests: a row's scores are bit-identical alone and in any batch), so outputs are the same for
// any latency order.
type batches struct {
	learner *gpu.Learner
	engine  *gpu.Engine

	mu      sync.Mutex
	busy    bool // a batch is being scored; its scorer takes the pending ones next
	pending []*question
}

type questionKind int

const (
	askValue  questionKind = iota // v̂ of [f; task-type one-hot]
	askPolicy                     // log π over the legal actions
)

// question is one episode's request; the answer fields are set before done closes.
type question struct {
	order int // the episode's job index: a batch is scored in job order
	kind  questionKind
	value []float32     // askValue: the value head's input
	row   gpu.PolicyRow // askPolicy: the network's input
	theta bool          // askPolicy: answer with π_θ (else π_ρ)

	v    float32
	logp []float32 // log π_θ or log π_ρ over the legal actions
	// tokens are the token ids the policy fed its model for the row (the causal-LM policy; 0
	// for the network).
	tokens int64
	err    error
	done   chan struct{}
}

func newBatches(l *gpu.Learner, e *gpu.Engine) *batches { return &batches{learner: l, engine: e} }

// ask submits q and waits for its answer. The asker that finds the network idle scores the
// pending batches until none is left.
func (b *batches) ask(q *question) error {
	q.done = make(chan struct{})
	b.mu.Lock()
	b.pending = append(b.pending, q)
	if b.busy {
		b.mu.Unlock()
		<-q.done
		return q.err
	}
	b.busy = true
	for len(b.pending) > 0 {
		batch := b.pending
		b.pending = nil
		b.mu.Unlock()
		b.score(batch)
		b.mu.Lock()
	}
	b.busy = false
	b.mu.Unlock()
	<-q.done
	return q.err
}

// score answers one batch: the value questions in one call of the published head, the policy
// questions in one call of the network, each in job order.
func (b *batches) score(batch []*question) {
	slices.SortFunc(batch, func(x, y *question) int { return cmp.Or(cmp.Compare(x.kind, y.kind), cmp.Compare(x.order, y.order)) })
	var values, policies []*question
	for _, q := range batch {
		if q.kind == askValue {
			values = append(values, q)
		} else {
			policies = append(policies, q)
		}
	}
	fail := func(qs []*question, err error) {
		for _, q := range qs {
			q.err = err
		}
	}
	if len(values) > 0 {
		x := make([][]float32, len(values))
		for i, q := range values {
			x[i] = q.value
		}
		v, err := b.learner.Published.Predict(b.engine, x)
		if err != nil {
			fail(values, fmt.Errorf("value head: %w", err))
		} else {
			for i, q := range values {
				q.v = v[i]
			}
		}
	}
	if len(policies) > 0 {
		rows, theta := make([]gpu.PolicyRow, len(policies)), make([]bool, len(policies))
		for i, q := range policies {
			rows[i], theta[i] = q.row, q.theta
		}
		logp, tokens, err := b.learner.Policy.Behaviour(b.engine, rows, theta)
		if err != nil {
			fail(policies, fmt.Errorf("policy: %w", err))
		} else {
			for i, q := range policies {
				q.logp = logp[i]
				if tokens != nil {
					q.tokens = tokens[i]
				}
			}
		}
	}
	for _, q := range batch {
		close(q.done)
	}
}
