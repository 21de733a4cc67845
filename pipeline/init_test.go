package pipeline

import (
	"path/filepath"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/rundir"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

// The simulated test split has tasks.test_per_family tasks per benchmark, except AIME 2026,
// which has its 30 problems (paper appendix D); MATH-Hard, mapped to AIME's task type, keeps
// the full count. Fewer than 30 asked gives fewer.
func TestSimTestSplitSizes(t *testing.T) {
	for _, per := range []int{128, 10} {
		cfg, err := config.Default()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Tasks.TrainPerFamily, cfg.Tasks.TestPerFamily = 2, per
		r, err := rundir.Init(filepath.Join(t.TempDir(), "demo"), cfg, "test", WriteSimTasks)
		if err != nil {
			t.Fatal(err)
		}
		test, err := tasks.ReadFile(r.TasksPath("test"))
		if err != nil {
			t.Fatal(err)
		}
		n := map[string]int{}
		for _, task := range test {
			n[task.Family]++
		}
		if len(n) != len(cfg.Families)+len(cfg.OODFamilies) {
			t.Fatalf("test split covers %d benchmarks: %v", len(n), n)
		}
		for f, got := range n {
			want := per
			if f == "aime_2026" {
				want = min(per, 30)
			}
			if got != want {
				t.Errorf("test_per_family %d: %s has %d test tasks, want %d", per, f, got, want)
			}
		}
	}
}
