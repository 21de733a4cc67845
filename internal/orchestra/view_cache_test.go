package orchestra

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
)

// forgetViews drops every part of the controller prompt the runtime keeps written.
func (r *Runtime) forgetViews() {
	r.staticView, r.historyView = nil, nil
	for _, n := range r.nodes {
		n.view, n.viewKey = "", ""
	}
}

// TestControllerPromptKeepsNoStalePart: along random episodes (agents added, skills bound,
// nodes rerun and dropped, outputs changed, a long task prompt with characters JSON escapes),
// the prompt built from the parts the runtime keeps written is byte-identical to one built
// afresh at every decision.
func TestControllerPromptKeepsNoStalePart(t *testing.T) {
	task := qaTask
	task.Prompt = strings.Repeat("Passage \"one\"\\ with\ttabs, é and\nlines. ", 200)
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		sess := newFake()
		r := newTestRuntime(task, sess, defaultOptions())
		for step := 0; step < 40 && !r.Stopped(); step++ {
			kept := r.ControllerPrompt(0.5, 0.1)
			r.forgetViews()
			if fresh := r.ControllerPrompt(0.5, 0.1); kept != fresh {
				t.Fatalf("seed %d decision %d: the kept prompt differs from a fresh one", seed, step)
			}
			legal := r.Legal()
			a := legal[rng.IntN(len(legal))]
			if _, err := r.Apply(context.Background(), a); err != nil {
				t.Fatalf("seed %d decision %d: %s: %v", seed, step, a.JSON(), err)
			}
		}
	}
}
