package episode

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"github.com/evosteer/evosteer-go/gpu"
)

// waves batches the network work of the episodes in flight. Each episode asks for one thing at
// a time — the published value head's estimate of its state, or the policy's log-probabilities
// over its legal actions — and waits. A batch is scored when every episode still running has
// asked, so batch n holds exactly the n-th question of every episode still running: the batches,
// and every bit of their results, depend on the episodes alone, never on goroutine timing.
type waves struct {
	learner *gpu.Learner
	engine  *gpu.Engine

	mu      sync.Mutex
	active  int // episodes that still ask
	pending []*question
}

type questionKind int

const (
	askValue  questionKind = iota // v̂ of [f; task-type one-hot]
	askPolicy                     // log π over the legal actions
)

// question is one episode's request; the answer fields are set before done closes.
type question struct {
	order int // the episode's job index: batches are scored in job order
	kind  questionKind
	value []float32     // askValue: the value head's input
	row   gpu.PolicyRow // askPolicy: the network's input
	theta bool          // askPolicy: answer with π_θ (else π_ρ)

	v    float32
	logp []float32 // log π_θ or log π_ρ over the legal actions
	rho  []float32 // log π_ρ over the legal actions
	err  error
	done chan struct{}
}

func newWaves(l *gpu.Learner, e *gpu.Engine, episodes int) *waves {
	return &waves{learner: l, engine: e, active: episodes}
}

// ask submits q and waits for its answer.
func (w *waves) ask(q *question) error {
	q.done = make(chan struct{})
	w.mu.Lock()
	w.pending = append(w.pending, q)
	batch := w.takeIfComplete()
	w.mu.Unlock()
	if batch != nil {
		w.score(batch)
	}
	<-q.done
	return q.err
}

// leave is called once by every episode that asks, when it has finished.
func (w *waves) leave() {
	w.mu.Lock()
	w.active--
	batch := w.takeIfComplete()
	w.mu.Unlock()
	if batch != nil {
		w.score(batch)
	}
}

// takeIfComplete takes the pending questions when every running episode has asked. Call with mu held.
func (w *waves) takeIfComplete() []*question {
	if len(w.pending) == 0 || len(w.pending) < w.active {
		return nil
	}
	b := w.pending
	w.pending = nil
	return b
}

// score answers one batch: the value questions in one call of the published head, the policy
// questions in one call of the network, each in job order.
func (w *waves) score(batch []*question) {
	slices.SortFunc(batch, func(a, b *question) int { return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.order, b.order)) })
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
		v, err := w.learner.Published.Predict(w.engine, x)
		if err != nil {
			fail(values, fmt.Errorf("value head: %w", err))
		} else {
			for i, q := range values {
				q.v = v[i]
			}
		}
	}
	if len(policies) > 0 {
		rows := make([]gpu.PolicyRow, len(policies))
		for i, q := range policies {
			rows[i] = q.row
		}
		s, err := w.learner.Policy.Score(w.engine, rows)
		if err != nil {
			fail(policies, fmt.Errorf("policy network: %w", err))
		} else {
			for i, q := range policies {
				q.logp, q.rho = s.Rho[i], s.Rho[i]
				if q.theta {
					q.logp = s.Theta[i]
				}
			}
		}
	}
	for _, q := range batch {
		close(q.done)
	}
}
