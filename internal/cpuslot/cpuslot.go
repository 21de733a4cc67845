package cpuslot

import (
	"context"
	"sync"
)

// Pool is n CPU slots.
type Pool struct{ slots chan struct{} }

// NewPool returns a pool of n slots (at least one).
func NewPool(n int) *Pool { return &Pool{slots: make(chan struct{}, max(1, n))} }

// Hold takes a slot for the caller's work and returns the context that carries it, for Wait
// to find, and the function that gives the slot back.
func (p *Pool) Hold(ctx context.Context) (context.Context, func()) {
	h := &holder{pool: p}
	p.slots <- struct{}{}
	return context.WithValue(ctx, holderKey{}, h), func() { <-p.slots }
}

// holder is one Hold: its slot is given back while any of its calls waits.
type holder struct {
	pool    *Pool
	mu      sync.Mutex
	waiting int
}

type holderKey struct{}

// Wait gives back the slot ctx holds (if any) while the caller waits on the network, and
// returns the function that takes one again; calls that wait at once under one Hold give the
// slot back once and take it again when the last of them resumes.
func Wait(ctx context.Context) (resume func()) {
	h, _ := ctx.Value(holderKey{}).(*holder)
	if h == nil {
		return func() {}
	}
	h.mu.Lock()
	if h.waiting++; h.waiting == 1 {
		<-h.pool.slots
	}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.waiting--; h.waiting == 0 {
			h.pool.slots <- struct{}{}
		}
	}
}
