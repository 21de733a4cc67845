package rollout

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
)

// BenchmarkRolloutBatch runs the whole stage (schedule, 32 tasks x 4 episodes on the simulated
// world with the default worker pool, Arrow writing) and reports episodes/s and decisions/s.
// Under -short (make test) it rolls out 4 tasks x 3 episodes instead.
func BenchmarkRolloutBatch(b *testing.B) {
	r := smallRun(b, b.TempDir(), func(c *config.Config) {
		if testing.Short() {
			c.Batch = config.Batch{Tasks: 4, CurrentRollouts: 2, ReferenceRollouts: 1}
			return
		}
		def, _ := config.Default()
		c.Batch, c.Rollout = def.Batch, def.Rollout
	})
	episodes, decisions := 0, 0
	for i := 0; i < b.N; i++ {
		_, err := r.RunStage(context.Background(), 1, Stage{}, true)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		eps := readEpisodesB(b, filepath.Join(r.StageDir(1, layout.Rollout), "episodes.arrow"))
		for _, e := range eps {
			episodes++
			decisions += int(e.T)
		}
		b.StartTimer()
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(episodes)/sec, "episodes/s")
	b.ReportMetric(float64(decisions)/sec, "decisions/s")
	b.ReportMetric(sec/float64(b.N), "s/batch")
}
