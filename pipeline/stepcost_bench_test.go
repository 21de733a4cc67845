package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/runtest"
)

// BenchmarkStepCost trains one real run on the simulated world (8 tasks a step, 256 training
// tasks per family, the released configuration otherwise) for 1,000 steps and times the stages
// that carry the run's history — aggregate, validate and author, each with the stage runner's
// verification and hashing of its inputs — at step 10 and at step 1,000, and over the windows
// of steps 10–19 and 991–1,000. Their ratio is what issue 43 bounds (≤ 1.5): a step must cost
// the same at any depth of a run. -short trains 12 steps (windows 10–11 and 11–12), so the
// benchmark cannot rot; its ratio says nothing at that size. The full size takes about 20
// minutes on 2 cores (`make bench`).
func BenchmarkStepCost(b *testing.B) {
	steps, early, window := 1000, 10, 10
	if testing.Short() {
		steps, early, window = 12, 10, 2 // the author starts at step 9 (author.start_step)
	}
	history := map[string]bool{layout.Aggregate: true, layout.Validate: true, layout.Author: true}
	for range b.N {
		r := runtest.SimRun(b, b.TempDir(), 256, func(c *config.Config) { c.Batch.Tasks = 8 })
		walls := make([]time.Duration, steps+1)
		err := Train(context.Background(), r, steps, false, func(d StageDone) {
			if history[d.Stage] {
				walls[d.Step] += d.Wall
			}
		})
		r.Unlock()
		if err != nil {
			b.Fatal(err)
		}
		mean := func(from int) float64 {
			var sum time.Duration
			for k := from; k < from+window; k++ {
				sum += walls[k]
			}
			return float64(sum.Microseconds()) / 1e3 / float64(window)
		}
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
		first, last := mean(early), mean(steps-window+1)
		b.ReportMetric(ms(walls[early]), "ms/early-step")
		b.ReportMetric(ms(walls[steps]), "ms/last-step")
		b.ReportMetric(ms(walls[steps])/ms(walls[early]), "last/early")
		b.ReportMetric(first, "ms/early-window")
		b.ReportMetric(last, "ms/last-window")
		b.ReportMetric(last/first, "window-ratio")
	}
}
