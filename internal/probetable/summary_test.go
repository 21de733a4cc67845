package probetable

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/schema"
)

// handTask is a task of two actions (solver, planner) with ρ = (½, ½), β = ln 2 (so R_β = 1 + r
// and U = 1 + m) and the given mean rewards; θ is given by logTheta(log ρ, log π*).
func handTask(id, family string, m [2]float64, sd float64, logTheta func(lr, lp float64) float64) []schema.ProbeRow {
	beta := math.Ln2
	u := [2]float64{1 + m[0], 1 + m[1]}
	z := 0.5*u[0] + 0.5*u[1]
	var rows []schema.ProbeRow
	for a, role := range []string{"solver", "planner"} {
		lr := math.Log(0.5)
		p := 0.5 * u[a] / z
		lt := logTheta(lr, math.Log(p))
		rows = append(rows, schema.ProbeRow{TaskID: id, Family: family, ActionIndex: int32(a), Role: role, Beta: beta,
			Rho: 0.5, Theta: math.Exp(lt), PiStar: p, LogRho: lr, LogTheta: lt, U: u[a], UEven: u[a], UOdd: u[a], MeanReward: m[a], RewardSD: sd, Continuations: 4})
	}
	return rows
}

func near(t *testing.T, what string, got Num, want float64) {
	t.Helper()
	if math.Abs(float64(got)-want) > 1e-12 {
		t.Errorf("%s = %.15g, want %.15g", what, float64(got), want)
	}
}

// One family, two actions with m = (0.2, 0.6): U = (1.2, 1.6), π* = (3/7, 4/7).
func TestSummarizeHandExample(t *testing.T) {
	isPiStar := func(_, lp float64) float64 { return lp }
	isRho := func(lr, _ float64) float64 { return lr }
	tvRho := (math.Abs(0.5-3.0/7) + math.Abs(0.5-4.0/7)) / 2 // 1/14
	klRho := 3.0/7*math.Log(6.0/7) + 4.0/7*math.Log(8.0/7)
	gainPiStar := 100 * (3.0/7 - 0.4) // E_π* m = (0.6 + 2.4)/7 = 3/7 against E_ρ m = 0.4

	s, err := Summarize(5, handTask("t1", "fa", [2]float64{0.2, 0.6}, 0, isPiStar))
	if err != nil {
		t.Fatal(err)
	}
	g := s.Overall
	if s.Step != 5 || s.Tasks != 1 || s.Rows != 2 || s.Continuations != 4 || g.Slope != 1 || g.TVTheta != 0 || g.KLTheta != 0 || g.Coverage != 1 {
		t.Fatalf("θ = π*: %+v", s)
	}
	near(t, "reward ρ", g.RewardRho, 40)
	near(t, "gain π*", g.GainPiStar, gainPiStar)
	near(t, "gain θ", g.GainTheta, gainPiStar)
	near(t, "best action gain", g.BestActionGain, 20)
	near(t, "TV(ρ,π*)", g.TVRho, tvRho)
	near(t, "KL(π*‖ρ)", g.KLRho, klRho)
	if g.NoiseShare != 0 || !strings.HasPrefix(s.Verdict, "θ is limited by its target") {
		t.Errorf("noise %v, verdict %s", g.NoiseShare, s.Verdict)
	}

	s, err = Summarize(0, handTask("t1", "fa", [2]float64{0.2, 0.6}, 0, isRho))
	if err != nil {
		t.Fatal(err)
	}
	g = s.Overall
	if g.Slope != 0 || g.TVTheta != g.TVRho || g.Coverage != 0 || g.GainTheta != 0 || g.KLTheta != g.KLRho {
		t.Fatalf("θ = ρ: %+v", g)
	}
	if !strings.HasPrefix(s.Verdict, "θ is limited by optimisation: it covers 0% of the way to π* (slope 0.00, coverage 0.00") {
		t.Errorf("verdict %s", s.Verdict)
	}

	// Halfway in log space (renormalised): slope ½.
	half := func(lr, lp float64) float64 { return lr + (lp-lr)/2 }
	rows := handTask("t1", "fa", [2]float64{0.2, 0.6}, 0, half)
	lz := math.Log(rows[0].Theta + rows[1].Theta)
	for i := range rows {
		rows[i].LogTheta -= lz
		rows[i].Theta = math.Exp(rows[i].LogTheta)
	}
	if s, err = Summarize(0, rows); err != nil {
		t.Fatal(err)
	}
	near(t, "slope halfway", s.Overall.Slope, 0.5)

	// Every action alike: π* = ρ, nothing to measure.
	if s, err = Summarize(0, handTask("t1", "fa", [2]float64{0.3, 0.3}, 0, isRho)); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(s.Overall.Slope)) || !math.IsNaN(float64(s.Overall.Coverage)) || !strings.HasPrefix(s.Verdict, "No verdict") {
		t.Errorf("π* = ρ: slope %v coverage %v, verdict %s", s.Overall.Slope, s.Overall.Coverage, s.Verdict)
	}
	js, err := json.Marshal(s.Overall)
	if err != nil || !strings.Contains(string(js), `"slope":null`) || !strings.Contains(string(js), `"gain_theta":0,`) {
		t.Errorf("JSON %s: %v", js, err)
	}
}

// π* = ρ up to rounding (every action's continuations scored 0) is no signal: no slope, no
// coverage, not a slope of a million from dividing rounding by rounding.
func TestSummarizeRoundingIsNoSignal(t *testing.T) {
	logits := []float64{0.1, 0.5, 1.3}
	z := 0.0
	for _, l := range logits {
		z += math.Exp(l)
	}
	var rows []schema.ProbeRow
	for a, l := range logits {
		lr := l - math.Log(z)
		rho := math.Exp(lr)
		rows = append(rows, schema.ProbeRow{TaskID: "t", Family: "fa", ActionIndex: int32(a), Role: fmt.Sprint("r", a), Beta: 2,
			Rho: rho, Theta: rho, PiStar: rho / (math.Exp(logits[0]-math.Log(z)) + math.Exp(logits[1]-math.Log(z)) + math.Exp(logits[2]-math.Log(z))),
			LogRho: lr, LogTheta: lr, U: 1, UEven: 1, UOdd: 1, Continuations: 2})
	}
	s, err := Summarize(1, rows)
	if err != nil {
		t.Fatal(err)
	}
	g := s.Families[0]
	if !math.IsNaN(float64(g.Slope)) || !math.IsNaN(float64(g.Coverage)) || !strings.HasPrefix(s.Verdict, "No verdict") {
		t.Errorf("π* = ρ up to rounding: slope %v coverage %v, verdict %s", g.Slope, g.Coverage, s.Verdict)
	}
}

// The loss target τ: its slope on log(θ/ρ) says whether θ sits on the target its loss sets, its
// corrected slope on log(π*/ρ) how far that target reaches toward π*; the verdict names which
// limits θ. A task whose rows lack targets changes neither.
func TestSummarizeLossTarget(t *testing.T) {
	half := func(lr, lp float64) float64 { return lr + (lp-lr)/2 } // log(θ/ρ) = ½ log(π*/ρ) + const
	tasks := func(target func(r schema.ProbeRow) float64) []schema.ProbeRow {
		var rows []schema.ProbeRow
		for i, m := range [][2]float64{{0.2, 0.6}, {0.5, 0.1}, {0.3, 0.4}} {
			task := handTask(fmt.Sprint("t", i), "fa", m, 0, half)
			for k := range task {
				if i < 2 { // the third task's actions were never taken often enough
					v := target(task[k])
					task[k].LossTarget = &v
				}
			}
			rows = append(rows, task...)
		}
		return rows
	}
	logPiStar := func(r schema.ProbeRow) float64 { return math.Log(r.PiStar) - r.LogRho }
	logTheta := func(r schema.ProbeRow) float64 { return r.LogTheta - r.LogRho }

	// The loss asks for 0.7 of π*'s tilt and θ has half of it: θ is short of its own target.
	s, err := Summarize(9, tasks(func(r schema.ProbeRow) float64 { return 0.7*logPiStar(r) + 0.3 }))
	if err != nil {
		t.Fatal(err)
	}
	near(t, "loss-target slope", s.Overall.LossTargetSlope, 1.4)
	near(t, "reach", s.Overall.LossTargetReach, 0.7)
	if !strings.HasPrefix(s.Verdict, "θ is limited by optimisation") || !strings.Contains(s.Verdict, "short of its loss's own target too (loss-target slope 1.40; the target asks for 70% of π*'s tilt)") {
		t.Errorf("verdict %s", s.Verdict)
	}
	// θ sits on its loss's target, which asks for half of π*'s tilt: the target limits θ.
	if s, err = Summarize(9, tasks(func(r schema.ProbeRow) float64 { return logTheta(r) - 2 })); err != nil {
		t.Fatal(err)
	}
	near(t, "loss-target slope", s.Overall.LossTargetSlope, 1)
	near(t, "reach", s.Overall.LossTargetReach, 0.5)
	if !strings.HasPrefix(s.Verdict, "θ is limited by the target its loss sets: θ has reached AnchorTB's own first-decision target (loss-target slope 1.00), which asks for 50% of π*'s tilt") {
		t.Errorf("verdict %s", s.Verdict)
	}
	// θ moved against its loss's target: not on it, whatever the slope's size.
	if s, err = Summarize(9, tasks(func(r schema.ProbeRow) float64 { return -logTheta(r) })); err != nil {
		t.Fatal(err)
	}
	near(t, "loss-target slope", s.Overall.LossTargetSlope, -1)
	if !strings.HasPrefix(s.Verdict, "θ is limited by optimisation") || !strings.Contains(s.Verdict, "off its loss's own target too (loss-target slope -1.00, 1 on it") {
		t.Errorf("verdict %s", s.Verdict)
	}
	// No targets at all: both undefined, and the verdict is the plain one.
	if s, err = Summarize(9, handTask("t0", "fa", [2]float64{0.2, 0.6}, 0, half)); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(s.Overall.LossTargetSlope)) || !math.IsNaN(float64(s.Overall.LossTargetReach)) || strings.Contains(s.Verdict, "loss") {
		t.Errorf("no targets: %v %v, verdict %s", s.Overall.LossTargetSlope, s.Overall.LossTargetReach, s.Verdict)
	}
}

// Two families whose best first role is opposite. θ = π* has the whole interaction
// (correlation 1); a θ that learned one shift for every family has none.
func TestSummarizeInteraction(t *testing.T) {
	isPiStar := func(_, lp float64) float64 { return lp }
	rows := append(handTask("t1", "fa", [2]float64{0.2, 0.6}, 0, isPiStar), handTask("t2", "fb", [2]float64{0.6, 0.2}, 0, isPiStar)...)
	s, err := Summarize(3, rows)
	if err != nil {
		t.Fatal(err)
	}
	h := math.Log(4.0/3) / 2 // |centred log(π*/ρ)| of each action
	in := s.Interaction
	if len(in.Cells) != 4 || in.Cells[0].Family != "fa" || in.Cells[0].Role != "solver" || in.Cells[3].Family != "fb" || in.Cells[3].Role != "planner" {
		t.Fatalf("cells %+v", in.Cells)
	}
	for i, want := range []float64{-h, h, h, -h} {
		near(t, "cell π*", in.Cells[i].PiStar, want)
		near(t, "cell θ", in.Cells[i].Theta, want)
	}
	near(t, "correlation", in.Correlation, 1)
	near(t, "variance π*", in.VarPiStar, h*h)
	if len(s.Families) != 2 || s.Families[1].Family != "fb" || s.Overall.Tasks != 2 || s.Overall.Slope != 1 {
		t.Fatalf("families %+v overall %+v", s.Families, s.Overall)
	}

	// One shift for all families: less solver, more planner, wherever.
	shift := func(i int) float64 { return []float64{-0.1, 0.1}[i%2] }
	for i := range rows {
		rows[i].LogTheta = rows[i].LogRho + shift(i)
	}
	if s, err = Summarize(3, rows); err != nil {
		t.Fatal(err)
	}
	if in := s.Interaction; !math.IsNaN(float64(in.Correlation)) || math.Abs(float64(in.VarTheta)) > 1e-30 {
		t.Errorf("a global shift has an interaction: %+v", in)
	}
	near(t, "slope of a global shift (half the tasks go each way)", s.Overall.Slope, 0)
}

func TestSummarizeRejects(t *testing.T) {
	good := handTask("t1", "fa", [2]float64{0.2, 0.6}, 0, func(lr, _ float64) float64 { return lr })
	for name, edit := range map[string]func([]schema.ProbeRow){
		"probability":   func(r []schema.ProbeRow) { r[0].PiStar = 1.5 },
		"beta":          func(r []schema.ProbeRow) { r[1].Beta = 3 },
		"family":        func(r []schema.ProbeRow) { r[1].Family = "fb" },
		"continuations": func(r []schema.ProbeRow) { r[0].Continuations = 1 },
		"u_odd":         func(r []schema.ProbeRow) { r[1].UOdd = 0.5 },
		"u_even":        func(r []schema.ProbeRow) { r[0].UEven = math.NaN() },
	} {
		rows := append([]schema.ProbeRow{}, good...)
		edit(rows)
		if _, err := Summarize(0, rows); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := Summarize(0, nil); err == nil {
		t.Error("no rows accepted")
	}
}
