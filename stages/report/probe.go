package report

import (
	"fmt"
	"strings"

	"github.com/evosteer/evosteer-go/internal/probetable"
	"github.com/evosteer/evosteer-go/internal/rundir"
)

// IDProbe is the probe section's ID; the section is there only when the run was probed.
const IDProbe = "probe"

// probeSection shows every probed step (probe/step-NNNNNN/probe.arrow, summarised by
// probetable.Summarize): the overall row of each step and, for the last, a row per family; the
// caption gives the last step's verdict and family × role interaction.
func probeSection(r *rundir.Folder, steps []int) (f Figure, err error) {
	f = Figure{ID: IDProbe, Title: "Probe: θ against its target π* at the first decision"}
	f.Table = &Table{Header: []string{"step", "family", "tasks", "reward ρ", "gain θ", "gain π*", "best action", "slope",
		"corrected", "noise", "TV(θ,π*)", "TV(ρ,π*)", "coverage", "KL(π*‖θ)", "KL(π*‖ρ)", "loss target", "reach"}, Labels: 2}
	var last probetable.Summary
	for i, step := range steps {
		rows, err := probetable.Read(r, step)
		if err != nil {
			return f, err
		}
		s, err := probetable.Summarize(step, rows)
		if err != nil {
			return f, fmt.Errorf("%s: %w", r.Rel(probetable.StepDir(r, step)), err)
		}
		groups := []probetable.Group{s.Overall}
		if i == len(steps)-1 {
			groups = append(s.Families, s.Overall)
			last = s
		}
		for _, g := range groups {
			f.Table.Rows = append(f.Table.Rows, Row{Bold: g.Family == s.Overall.Family, Cells: []string{fmt.Sprint(step), g.Family,
				fmt.Sprint(g.Tasks), probeNum(g.RewardRho, "%.2f"), probeNum(g.GainTheta, "%+.2f"), probeNum(g.GainPiStar, "%+.2f"),
				probeNum(g.BestActionGain, "%+.2f"), probeNum(g.Slope, "%.3f"), probeNum(g.SlopeCorrected, "%.3f"), probeNum(g.NoiseShare, "%.2f"), probeNum(g.TVTheta, "%.4f"), probeNum(g.TVRho, "%.4f"),
				probeNum(g.Coverage, "%.3f"), probeNum(g.KLTheta, "%.4f"), probeNum(g.KLRho, "%.4f"),
				probeNum(g.LossTargetSlope, "%.3f"), probeNum(g.LossTargetReach, "%.3f")}})
		}
	}
	in := last.Interaction
	f.Caption = fmt.Sprintf("evosteer probe forces every legal first action of sampled training tasks and continues with ρ "+
		"(seeds shared across a task's actions and across steps), estimates U(a) = E[R_β | a] and the one-step target "+
		"π*(a) ∝ ρ(a)·U(a), and compares the learner θ of the step with it. Rewards ×100 are the expected reward when the "+
		"first action is drawn from ρ (then ρ continues); gains are what θ, π* or the best single first action add, in "+
		"points. Slope: of log(θ/ρ) on log(π*/ρ), ρ-weighted and centred per task (1: θ = π*, 0: θ = ρ), diluted toward 0 by the sampling noise of Û; corrected: "+
		"with the dilution removed (split-half covariance in the denominator); noise: the noise share of log(π̂*/ρ); coverage = "+
		"1 − TV(θ,π*)/TV(ρ,π*); loss target: the slope on log(θ/ρ) of the target AnchorTB's own gradient set for the "+
		"action in training (1: θ sits on it), reach: how much of π*'s tilt that target asks for. Steps %s probed; the last, step %d (%d tasks, %d continuations per action, β = %g), per "+
		"family. Family × role interaction of log(θ/ρ) against log(π*/ρ): correlation %s (variance θ %s, π* %s). %s",
		joinInts(steps), last.Step, last.Tasks, last.Continuations, last.Beta, probeNum(in.Correlation, "%.3f"),
		probeNum(in.VarTheta, "%.1e"), probeNum(in.VarPiStar, "%.1e"), last.Verdict)
	return f, nil
}

// probeNum formats a summary number ("—" when undefined), never as negative zero.
func probeNum(x probetable.Num, format string) string {
	v := float64(x)
	if v != v {
		return "—"
	}
	s := fmt.Sprintf(format, v)
	if strings.Trim(s, "+-0.e") == "" { // a zero, whatever its sign
		s = fmt.Sprintf(format, 0.0)
	}
	return s
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
