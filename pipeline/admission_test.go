package pipeline

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/runtest"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/schema"
)

// TestNoCandidateOutlivesItsTasks trains a run with few training tasks per family under
// admission.undecided_when_exhausted and checks, from the run's own files, the rule of issue 42:
// once a comparison's eligible pairs have used every training task of its family, it is closed
// in that step's ledger segment and gets no later pair, and a comparison that is still open has
// tasks left.
func TestNoCandidateOutlivesItsTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: trains 10 steps of a small run")
	}
	const perFamily, steps = 4, 10
	r := runtest.SimRun(t, t.TempDir(), perFamily, func(c *config.Config) {
		c.Admission.UndecidedWhenExhausted = true
		c.Author.StartStep = 2
	})
	defer r.Unlock()
	if err := Train(context.Background(), r, steps, false, nil); err != nil {
		t.Fatal(err)
	}
	used := map[string]map[string]bool{} // comparison -> tasks of its eligible pairs so far
	exhaustedAt := map[string]int{}
	closedAt := map[string]int{}
	for k := 1; k <= steps; k++ {
		pairs, err := schema.ReadFile[schema.PairRow](schema.Pairs, filepath.Join(r.StageDir(k, layout.Aggregate), layout.PairsFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pairs {
			if !p.Eligible {
				continue
			}
			if at, ok := closedAt[p.ComparisonID]; ok {
				t.Errorf("step %d: pair %s of comparison %s, closed at step %d", k, p.PairID, p.ComparisonID, at)
			}
			if used[p.ComparisonID] == nil {
				used[p.ComparisonID] = map[string]bool{}
			}
			used[p.ComparisonID][p.TaskID] = true
			if _, ok := exhaustedAt[p.ComparisonID]; !ok && len(used[p.ComparisonID]) == perFamily {
				exhaustedAt[p.ComparisonID] = k
			}
		}
		events, err := schema.ReadFile[schema.LedgerRow](schema.Ledger, filepath.Join(r.StageDir(k, layout.Validate), layout.LedgerFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			if e.Event == skills.EventClose {
				closedAt[*e.ComparisonID] = k
			}
		}
	}
	if len(exhaustedAt) == 0 {
		t.Fatalf("no comparison used every task of its family in %d steps (%d comparisons): the test needs one", steps, len(used))
	}
	for id, k := range exhaustedAt {
		if at, ok := closedAt[id]; !ok || at > k {
			t.Errorf("comparison %s used its family's %d tasks at step %d but closed at step %d (closed: %v)", id, perFamily, k, at, ok)
		}
	}
	for id, tasks := range used {
		if _, closed := closedAt[id]; !closed && len(tasks) >= perFamily {
			t.Errorf("comparison %s is open with every task used", id)
		}
	}
}
