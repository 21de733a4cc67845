package schema

// Probe has one row per (task, legal first action) of a probe of θ against its target (written
// by `evosteer probe` into probe/step-NNNNNN/probe.arrow, lineage step = the probed learner's
// step): at the task's first decision, the reference's and the learner's probabilities of the
// action, the action's value U(a) = E_ρ[R_β | first action a] estimated by forcing it and
// continuing with ρ, the one-step tilted target π*(a) ∝ ρ(a)·U(a), and the first-decision
// target AnchorTB itself set for the action in training (loss_target).
var Probe = declare("probe", 3,
	field("task_id", utf8),
	field("family", utf8),
	field("action_index", i32), // position among the first decision's legal actions
	field("action_json", utf8), // the action, canonical JSON
	field("role", utf8),        // the ADD_AGENT role, or the action kind for other actions
	field("beta", f64),         // the run's anchortb.beta
	field("rho", f64),          // π_ρ(a) over the legal actions
	field("theta", f64),        // π_θ(a) over the legal actions
	field("pistar", f64),       // π*(a) = ρ(a)·U(a) / Σ_b ρ(b)·U(b)
	field("log_rho", f64),      // log π_ρ(a) from the network
	field("log_theta", f64),    // log π_θ(a) from the network
	field("u", f64),            // mean of R_β(r) = 1 + (e^β − 1)·r over the continuations
	field("u_even", f64),       // the same over the even-numbered continuations (0, 2, …)
	field("u_odd", f64),        // and over the odd-numbered ones: two independent halves
	field("mean_reward", f64),  // mean reward r over the continuations
	field("reward_sd", f64),    // sample standard deviation of r (0 for one continuation)
	field("continuations", i32),
	field("unhealthy", i32), // continuations that ended unhealthy (their reward counts as stored)
	// AnchorTB's target for log(θ/ρ) of this first action: the mean over the trained episodes
	// of the training window that took it in this family of Δℓ_0 − (T+1)·Γ_0/4 (null: fewer
	// than the minimum episodes, or not AnchorTB); loss_target_episodes is how many.
	nullable("loss_target", f64),
	field("loss_target_episodes", i32),
).with(
	within(0, 1, "rho", "theta", "pistar", "mean_reward"),
	atLeast(0, "action_index", "reward_sd", "continuations", "unhealthy", "loss_target_episodes"),
)

// ProbeRow is a row of the probe table.
type ProbeRow struct {
	TaskID        string   `arrow:"task_id"`
	Family        string   `arrow:"family"`
	ActionIndex   int32    `arrow:"action_index"`
	ActionJSON    string   `arrow:"action_json"`
	Role          string   `arrow:"role"`
	Beta          float64  `arrow:"beta"`
	Rho           float64  `arrow:"rho"`
	Theta         float64  `arrow:"theta"`
	PiStar        float64  `arrow:"pistar"`
	LogRho        float64  `arrow:"log_rho"`
	LogTheta      float64  `arrow:"log_theta"`
	U             float64  `arrow:"u"`
	UEven         float64  `arrow:"u_even"`
	UOdd          float64  `arrow:"u_odd"`
	MeanReward    float64  `arrow:"mean_reward"`
	RewardSD      float64  `arrow:"reward_sd"`
	Continuations int32    `arrow:"continuations"`
	Unhealthy     int32    `arrow:"unhealthy"`
	LossTarget    *float64 `arrow:"loss_target"`
	LossTargetN   int32    `arrow:"loss_target_episodes"`
}
