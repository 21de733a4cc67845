package calibrate

import (
	"context"
	"testing"
)

// BenchmarkEvaluateEveryCell plays one run of every cell of the paper's table, each baseline policy
// on each benchmark (128 test tasks, AIME's 30 played five times), with the committed searched
// workflows: the fit's failure block and each round's closing evaluation play this once per run
// of the fit sample (two), the check once per check run (five). It reports episodes/s. Under
// -short (make test) 4 tasks per benchmark.
func BenchmarkEvaluateEveryCell(b *testing.B) {
	cfg := defaultConfig(b)
	tg, err := ReadTargets(paperTargets)
	if err != nil {
		b.Fatal(err)
	}
	n := 128
	if testing.Short() {
		n = 4
	}
	s, err := NewSample(cfg, tg.Benchmarks(), "test", n, 1, 7)
	if err != nil {
		b.Fatal(err)
	}
	s.MinEpisodes = n
	wf := committedWorkflows(b)
	episodes := 0
	for _, bm := range tg.Benchmarks() {
		episodes += len(s.Tasks[bm]) * s.plays(bm) * len(Policies)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := Evaluate(context.Background(), cfg, s, tg.Benchmarks(), Policies, wf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(episodes*b.N)/b.Elapsed().Seconds(), "episodes/s")
}
