package update

import (
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/evosteer/evosteer-go/gpu"
	"github.com/evosteer/evosteer-go/internal/learner"
	"github.com/evosteer/evosteer-go/internal/rundir"
)

func TestZZDiag(t *testing.T) {
	dir := os.Getenv("DIAG_RUN")
	if dir == "" {
		t.Skip()
	}
	r, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var batches []*batch
	for step := 1; step <= 20; step++ {
		f, err := findInputs(r, step)
		if err != nil {
			t.Fatal(err)
		}
		b, err := loadBatch(r.Config, f, int64(step))
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	l0, err := learner.Load(r, 0)
	if err != nil {
		t.Fatal(err)
	}
	o := l0.Options()
	fmt.Sscan(os.Getenv("DIAG_LR"), &o.Optimizer.AdapterLR)
	l := gpu.NewLearner(o, nil)
	e, _ := gpu.OpenEngine("simplego")
	// probe: the fatal STOP decisions (state flag "output states an answer" = 0) of batch 0
	probe := func() (float64, float64) {
		var rows []gpu.PolicyRow
		var ch []int
		var fatal []bool
		for _, tr := range batches[0].in.Trajectories {
			for _, s := range tr.Steps {
				rows = append(rows, s.Row)
				ch = append(ch, s.Chosen)
				fatal = append(fatal, tr.Reward == 0)
			}
		}
		sc, _ := l.Policy.Score(e, rows)
		var bad, good float64
		var nb, ng int
		for i := range rows {
			d := float64(sc.Theta[i][ch[i]] - sc.Rho[i][ch[i]])
			if fatal[i] {
				bad += d
				nb++
			} else {
				good += d
				ng++
			}
		}
		return bad / float64(nb), good / float64(ng)
	}
	for it := 0; it < 100; it++ {
		b := batches[it%len(batches)]
		var rows []gpu.PolicyRow
		for _, tr := range b.in.Trajectories {
			for _, s := range tr.Steps {
				rows = append(rows, s.Row)
			}
		}
		sc, err := l.Policy.Score(e, rows)
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for bi := range b.in.Trajectories {
			tr := &b.in.Trajectories[bi]
			for si := range tr.Steps {
				s := &tr.Steps[si]
				s.LogpTheta = float64(sc.Theta[k][s.Chosen])
				s.DeltaL = s.LogpTheta - float64(sc.Rho[k][s.Chosen])
				k++
			}
		}
		res, err := l.Update(e, b.in)
		if err != nil {
			t.Fatal(err)
		}
		if it%10 == 9 {
			bad, good := probe()
			fmt.Printf("iter %2d: loss %.4f rho %.4f |dl| %.3f g %.3f  mean Δℓ in failed eps (batch 0) %+.4f, in successful %+.4f\n", it, res.Metrics.Loss, res.Metrics.LossRho, res.Metrics.PolicyAbsLogRatio, res.Metrics.GradNorm, bad, good)
		}
	}
	_ = math.Abs
}
