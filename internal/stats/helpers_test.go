package stats

import (
	"math"
	"testing"
)

// paperAnchor are the configured constants (Table tab:config): β = 2, κ = (2, 4, 0.5), cap 20,
// cold start 1/2.
var paperAnchor = AnchorParams{Beta: 2, KappaGlobal: 2, KappaCategory: 4, KappaTask: 0.5, PriorCountCap: 20, ColdStart: 0.5}

// paperBuckets are the configured bucket constants: minimum 8, n0 = 8, c_max = 0.25.
var paperBuckets = BucketParams{Beta: 2, Minimum: 8, Pseudocount: 8, CorrectionBound: 0.25, SourceMode: SourceModeReferenceWithPaired}

func ep(id, task, family, source string, reward float64) Episode {
	return Episode{ID: id, Step: 1, TaskID: task, Family: family, TaskType: "tt-" + family, Source: source, Healthy: true, Reward: reward}
}

// withStates gives e one decision per key (T = 0, 1, ...) with coarse key "c:"+key, and a
// terminal state with key term (coarse "c:"+term).
func withStates(e Episode, term string, keys ...string) Episode {
	e.Decisions = nil
	for t, k := range keys {
		var f [30]float32
		f[0] = float32(t)
		f[1] = float32(len(e.ID))
		e.Decisions = append(e.Decisions, Decision{T: t, Key: k, CoarseKey: "c:" + k, Nodes: len(k), Edges: t, Features: f})
	}
	e.TerminalKey, e.TerminalCoarseKey = term, "c:"+term
	e.TerminalNodes, e.TerminalEdges, e.TerminalStopped = len(term), 7, true
	return e
}

func rate(r float64) *float64 { return &r }

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s = %.17g, want %.17g (tol %g)", what, got, want, tol)
	}
}

const tight = 1e-14
