package calibrate

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/paradigms"
)

func defaultConfig(t testing.TB) *config.Config {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func subsetTargets(t *testing.T, benchmarks ...string) *Targets {
	t.Helper()
	all, err := ReadTargets(paperTargets)
	if err != nil {
		t.Fatal(err)
	}
	out := &Targets{Path: all.Path, SHA256: all.SHA256}
	for _, c := range all.Cells {
		for _, b := range benchmarks {
			if c.Benchmark == b {
				out.Cells = append(out.Cells, c)
			}
		}
	}
	return out
}

// TestFitIsDeterministic: the same inputs give the same world file byte for byte, whatever the
// base configuration holds in the fitted and the held parameters, and the fit at least halves the loss of its
// starting point.
func TestFitIsDeterministic(t *testing.T) {
	tg := subsetTargets(t, "nq_open", "webshop")
	o := Options{Rounds: 2, PerBenchmark: 6, Runs: 1, SearchPerType: 2, FinalSearch: 3, MaxEvals: 5, Seed: 3}
	base := defaultConfig(t)
	a, err := Fit(context.Background(), base, tg, o)
	if err != nil {
		t.Fatal(err)
	}
	moved := base.Clone()
	moved.Sim.Families.NQOpen.BaseLogit = -2 // a fitted value: the fit starts from Param.Start instead
	moved.Prior.AddToolAgentToEmptyTeam = 5
	moved.Sim.Families.NQOpen.UnsolvableShare = 0.3 // held: the fit sets HeldShare
	b, err := Fit(context.Background(), moved, tg, o)
	if err != nil {
		t.Fatal(err)
	}
	wa, err := WorldFile(a.Config, tg, o)
	if err != nil {
		t.Fatal(err)
	}
	wb, _ := WorldFile(b.Config, tg, o)
	if !bytes.Equal(wa, wb) {
		t.Fatal("two fits from the same inputs wrote different world files")
	}
	// A round searches the workflow afresh, so its loss may rise over the last round's; the fit
	// as a whole must beat its starting point, played on the fit's own sample and workflows.
	start := base.Clone()
	for _, p := range AllParams(tg.Benchmarks()) {
		p.Set(start, p.Start)
	}
	holdShares(start, tg.Benchmarks())
	sample, err := fitSample(start, tg.Benchmarks(), o)
	if err != nil {
		t.Fatal(err)
	}
	s0, err := Evaluate(context.Background(), start, sample, tg.Benchmarks(), Policies, a.Workflows)
	if err != nil {
		t.Fatal(err)
	}
	l0 := loss(tg, s0, allKeys(tg.Benchmarks()))
	t.Logf("loss per round %v, at the start %.1f", a.Loss, l0)
	if len(a.Loss) != 2 || a.Loss[1] >= l0/2 {
		t.Errorf("loss per round %v against %.1f at the start: the fit must at least halve it", a.Loss, l0)
	}
	if len(a.Params) != len(AllParams(tg.Benchmarks())) || a.Evaluations == 0 {
		t.Fatalf("%d params, %d evaluations", len(a.Params), a.Evaluations)
	}
	for _, p := range a.Params {
		if p.Value != Round(p.Value) || p.Value < p.Lo || p.Value > p.Hi {
			t.Errorf("%s = %v: not rounded or outside its bounds", p.Name, p.Value)
		}
	}
}

// TestWorldFileIsAnOverlay: a world file read as a configuration overlay gives back exactly the
// fitted world, and leaves everything outside sim: and reference_prior: at the defaults.
func TestWorldFileIsAnOverlay(t *testing.T) {
	cfg := defaultConfig(t)
	cfg.Sim.Families.MATHHard.BaseLogit = 3.1416
	cfg.Sim.Families.WebShop.BareLogit = -1.25
	cfg.Prior.AddVerifierToCheckOutput = 2.5
	tg := subsetTargets(t, "math_hard")
	data, err := WorldFile(cfg, tg, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	back, err := config.Parse("world.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Sim, cfg.Sim) || back.Prior != cfg.Prior {
		t.Fatal("the world file does not read back as the world it was written from")
	}
	def := defaultConfig(t)
	back.Sim, back.Prior = def.Sim, def.Prior
	if back.SHA256() != def.SHA256() {
		t.Fatal("the world file changed values outside sim: and reference_prior:")
	}
	if !bytes.Contains(data, []byte(tg.SHA256)) || !bytes.Contains(data, []byte("paper-table2-baselines.csv")) {
		t.Fatal("the world file's header lacks the targets' name and sha256")
	}
}

// TestEvaluationSharesRandomNumbers: every evaluation plays the same tasks with the same seeds,
// so a parameter moves only the cells whose episodes it changes: bare_logit moves direct and no
// other policy, and a lower one never raises direct.
func TestEvaluationSharesRandomNumbers(t *testing.T) {
	cfg := defaultConfig(t)
	s, err := NewSample(cfg, []string{"hotpotqa"}, "train", 40, 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	pols := []string{paradigms.Direct, paradigms.SingleAgent, Reference}
	a, err := Evaluate(context.Background(), cfg, s, []string{"hotpotqa"}, pols, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Evaluate(context.Background(), cfg, s, []string{"hotpotqa"}, pols, nil)
	if !reflect.DeepEqual(a, again) {
		t.Fatalf("the same evaluation gave %v then %v", a, again)
	}
	low := cfg.Clone()
	low.Sim.Families.HotpotQA.BareLogit -= 2
	b, err := Evaluate(context.Background(), low, s, []string{"hotpotqa"}, pols, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b[Key{"hotpotqa", paradigms.Direct}] >= a[Key{"hotpotqa", paradigms.Direct}] {
		t.Errorf("direct %v with a lower bare_logit, %v before: want lower", b[Key{"hotpotqa", paradigms.Direct}], a[Key{"hotpotqa", paradigms.Direct}])
	}
	for _, p := range []string{paradigms.SingleAgent, Reference} {
		if b[Key{"hotpotqa", p}] != a[Key{"hotpotqa", p}] {
			t.Errorf("%s moved from %v to %v with bare_logit, which only the executor alone pays", p, a[Key{"hotpotqa", p}], b[Key{"hotpotqa", p}])
		}
	}
}
