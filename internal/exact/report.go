package exact

import (
	"fmt"
	"strings"

	"github.com/evosteer/evosteer-go/schema"
)

// TargetTV is the distance to P* below which an objective whose fixed point is P* (anchortb, tb)
// is said to reach it.
const TargetTV = 0.05

// Verdict says whether a curve ends where the objective's fixed point lies. For anchortb and tb
// that is P* when rewards are deterministic (last TV below TargetTV) and P_KL when they are noisy
// (World.TargetKL): over the curve's last quarter, θ is on average nearer P_KL than P* and has
// covered more than half of ρ's distance to P_KL (the step-to-step wobble of noisy gradients
// keeps a single step from being the measure). PPO and GRPO go away from P* toward the reward
// maximum (their best expected reward above P*'s, and the last TV to P* above ρ's). ttb has no
// fixed point in P* terms. ok is false when the curve does not end where the fixed point lies.
func Verdict(objective string, curve []Point, rewardNoise bool) (text string, ok bool) {
	last, peak := curve[len(curve)-1], curve[0]
	for _, p := range curve {
		if p.RewardTheta > peak.RewardTheta {
			peak = p
		}
	}
	switch {
	case (objective == "anchortb" || objective == "tb") && rewardNoise:
		late := curve[len(curve)-max(1, len(curve)/4):]
		var kl, star float64
		for _, p := range late {
			kl += p.TVKL / float64(len(late))
			star += p.TV / float64(len(late))
		}
		ok = kl < star && kl < last.TVKLRho/2
		what := "heads for P_KL, not P*"
		if !ok {
			what = "does NOT head for P_KL"
		}
		return fmt.Sprintf("%s: mean TV over steps %d–%d to P_KL %.4f (ρ %.4f), to P* %.4f (ρ %.4f); reward θ %.3f (P* %.3f)",
			what, late[0].Step, last.Step, kl, last.TVKLRho, star, last.TVRho, last.RewardTheta, last.RewardTarget), ok
	case objective == "anchortb" || objective == "tb":
		if last.TV < TargetTV {
			return fmt.Sprintf("reaches P*: TV %.4f < %.2f (ρ %.4f)", last.TV, TargetTV, last.TVRho), true
		}
		return fmt.Sprintf("does NOT reach P*: TV %.4f ≥ %.2f (ρ %.4f)", last.TV, TargetTV, last.TVRho), false
	case objective == "ppo" || objective == "grpo":
		ok = peak.RewardTheta > last.RewardTarget && last.TV > last.TVRho
		what := "goes past P* toward the reward maximum"
		if !ok {
			what = "does NOT go past P* toward the reward maximum"
		}
		return fmt.Sprintf("%s: best reward %.3f at step %d, %.3f at the end (P* %.3f, max %.3f); TV to P* %.4f (ρ %.4f)",
			what, peak.RewardTheta, peak.Step, last.RewardTheta, last.RewardTarget, last.RewardMax, last.TV, last.TVRho), ok
	}
	return fmt.Sprintf("TV to P* %.4f, reward %.3f (P* %.3f, max %.3f)", last.TV, last.RewardTheta, last.RewardTarget, last.RewardMax), true
}

// Rows are a curve as exact_curve rows.
func Rows(objective string, curve []Point) []schema.ExactCurveRow {
	out := make([]schema.ExactCurveRow, len(curve))
	for i, p := range curve {
		out[i] = schema.ExactCurveRow{Objective: objective, Step: int64(p.Step), TV: p.TV, TVKL: p.TVKL, TVRho: p.TVRho, TVKLRho: p.TVKLRho, MissMax: p.MissMax,
			RewardTheta: p.RewardTheta, RewardTarget: p.RewardTarget, RewardRho: p.RewardRho, RewardMax: p.RewardMax,
			Loss: p.Loss, LossRho: p.LossRho, GradNorm: p.GradNorm, AbsLogRatio: p.AbsLogRatio}
	}
	return out
}

// Markdown is the summary table of several objectives' curves: TV to P* (and to P_KL in the noisy
// world) and expected reward at a few steps, and the verdict.
func Markdown(objectives []string, curves [][]Point, rewardNoise bool) string {
	var b strings.Builder
	kl, klRule := "", ""
	if rewardNoise {
		kl, klRule = " TV(θ, P_KL) | TV(ρ, P_KL) |", "---:|---:|"
	}
	fmt.Fprintf(&b, "| objective | step | TV(θ, P*) | TV(ρ, P*) |%s P(below best) | reward θ | reward P* | reward ρ | reward max |\n", kl)
	fmt.Fprintf(&b, "|---|---:|---:|---:|%s---:|---:|---:|---:|---:|\n", klRule)
	for i, obj := range objectives {
		c := curves[i]
		for _, k := range checkpoints(len(c) - 1) {
			p := c[k]
			if rewardNoise {
				kl = fmt.Sprintf(" %.4f | %.4f |", p.TVKL, p.TVKLRho)
			}
			fmt.Fprintf(&b, "| %s | %d | %.4f | %.4f |%s %.3f | %.3f | %.3f | %.3f | %.3f |\n", obj, p.Step, p.TV, p.TVRho, kl, p.MissMax, p.RewardTheta, p.RewardTarget, p.RewardRho, p.RewardMax)
		}
	}
	b.WriteString("\n")
	for i, obj := range objectives {
		v, _ := Verdict(obj, curves[i], rewardNoise)
		fmt.Fprintf(&b, "- **%s**: %s\n", obj, v)
	}
	return b.String()
}

// checkpoints are the steps the table shows: 0, quarters of the run, the last.
func checkpoints(last int) []int {
	var out []int
	for _, k := range []int{0, last / 4, last / 2, 3 * last / 4, last} {
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}
