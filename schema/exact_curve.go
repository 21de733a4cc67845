package schema

// ExactCurve has one row per (objective, step) of a training run on the enumerable world of
// internal/exact (written by `evosteer exact`): θ's exact distance to the tilted target
// P* ∝ ρ·E[R_β], to the KL-regularised optimum P_KL ∝ ρ·exp(E[log R_β]) (the same distribution
// when rewards are deterministic) and to the reward maximum, averaged over the world's tasks.
// Step 0 is before training.
var ExactCurve = declare("exact_curve", 2,
	field("objective", utf8),
	field("step", i64),
	field("tv", f64),            // total variation between θ's terminal distribution and P*
	field("tv_kl", f64),         // between θ's and P_KL
	field("tv_rho", f64),        // the same for ρ: the distance training has to cover
	field("tv_kl_rho", f64),     // between ρ's and P_KL
	field("miss_max", f64),      // θ's probability of histories below the task's best expected reward
	field("reward_theta", f64),  // expected reward under θ
	field("reward_target", f64), // under P*
	field("reward_rho", f64),    // under ρ
	field("reward_max", f64),    // of the best history (expected, in the noisy world)
	field("loss", f64),          // the update's batch-mean loss (0 at step 0)
	field("loss_rho", f64),      // with every Δℓ = 0
	field("grad_norm", f64),     // policy clip group, before the clip
	field("abs_log_ratio", f64), // mean |Δℓ| over the batch's branch decisions
).with(
	within(0, 1, "tv", "tv_kl", "tv_rho", "tv_kl_rho", "miss_max", "reward_theta", "reward_target", "reward_rho", "reward_max"),
	atLeast(0, "step", "grad_norm", "abs_log_ratio"),
)

// ExactCurveRow is a row of the exact_curve table.
type ExactCurveRow struct {
	Objective    string  `arrow:"objective"`
	Step         int64   `arrow:"step"`
	TV           float64 `arrow:"tv"`
	TVKL         float64 `arrow:"tv_kl"`
	TVRho        float64 `arrow:"tv_rho"`
	TVKLRho      float64 `arrow:"tv_kl_rho"`
	MissMax      float64 `arrow:"miss_max"`
	RewardTheta  float64 `arrow:"reward_theta"`
	RewardTarget float64 `arrow:"reward_target"`
	RewardRho    float64 `arrow:"reward_rho"`
	RewardMax    float64 `arrow:"reward_max"`
	Loss         float64 `arrow:"loss"`
	LossRho      float64 `arrow:"loss_rho"`
	GradNorm     float64 `arrow:"grad_norm"`
	AbsLogRatio  float64 `arrow:"abs_log_ratio"`
}
