package schema

// UpdateMetrics has one row per update (written by update): the batch summaries of
// METHOD.md §8 (the release's metric keys), for training curves and the report. The step is the
// file's (a column of every table in `evosteer sql`).
var UpdateMetrics = declare("update_metrics", 2,
	field("objective", utf8),
	field("trajectories", i64),
	field("decisions", i64),
	field("branch_decisions", i64),     // decisions with more than one legal action
	field("mean_reward", f64),          // over the trajectories of the update
	field("loss", f64),                 // batch mean of losses.loss
	field("loss_rho", f64),             // batch mean with every Δℓ = 0
	field("loss_anchor", f64),          // batch mean with Δℓ = 0 and b_ψ = 0
	field("gain", f64),                 // loss_rho − loss
	field("policy_kl_current", f64),    // mean Δℓ over current branch decisions
	field("policy_abs_log_ratio", f64), // mean |Δℓ| over all branch decisions
	field("trained_trajectories", i64), // those the objective trains on (ppo, grpo: current only)
	field("grad_norm", f64),            // policy clip group (adapter + b_ψ or the objective's parameters), before the clip
	field("value_grad_norm", f64),      // value head joint step, before the clip
	field("outcome_grad_norm", f64),    // outcome heads, before the clip
	field("value_states", i64),         // this step's supervised value states
	field("value_loss", f64),           // value MSE on this step's states before fitting
	field("value_fit_loss", f64),       // value MSE on the replay window after fitting
	field("value_fit_states", i64),     // states in the replay window
	field("value_fit_steps", i64),      // AdamW steps the value head took
	field("outcome_loss", f64),         // mean MSE of the two outcome heads before their step
	field("rescore_mismatch", f64),     // max |log π_θ recomputed − scores.logp_theta|
	field("policy_steps", i64),         // optimizer steps of the policy group (ppo, grpo: epochs)
	field("critic_loss", f64),          // ppo: critic MSE on the current states before its steps
	field("critic_grad_norm", f64),     // ppo: critic gradient norm of its last step, before the clip
	// Update compute as deterministic work (wall time is not reproducible and stays in the log):
	field("policy_forward_rows", i64), // decisions scored by the policy network without a gradient
	field("policy_grad_rows", i64),    // decisions differentiated through it, once per pass
	field("head_rows", i64),           // rows through an MLP head: predictions, rows × heads × fit steps
	field("rows_per_episode", f64),    // (policy_forward_rows + policy_grad_rows + head_rows) / trajectories
	field("policy_version", i64),      // the version the updated policy gets
	field("value_version", i64),       // the version the published value head gets
).with(
	within(0, 1, "mean_reward"),
	atLeast(0, "trajectories", "decisions", "branch_decisions", "trained_trajectories", "grad_norm",
		"value_grad_norm", "outcome_grad_norm", "value_states", "value_fit_states", "value_fit_steps",
		"policy_steps", "critic_grad_norm", "policy_forward_rows", "policy_grad_rows", "head_rows",
		"policy_version", "value_version"),
)

// UpdateMetricsRow is a row of the update_metrics table.
type UpdateMetricsRow struct {
	Objective           string  `arrow:"objective"`
	Trajectories        int64   `arrow:"trajectories"`
	TrainedTrajectories int64   `arrow:"trained_trajectories"`
	Decisions           int64   `arrow:"decisions"`
	BranchDecisions     int64   `arrow:"branch_decisions"`
	MeanReward          float64 `arrow:"mean_reward"`
	Loss                float64 `arrow:"loss"`
	LossRho             float64 `arrow:"loss_rho"`
	LossAnchor          float64 `arrow:"loss_anchor"`
	Gain                float64 `arrow:"gain"`
	PolicyKLCurrent     float64 `arrow:"policy_kl_current"`
	PolicyAbsLogRatio   float64 `arrow:"policy_abs_log_ratio"`
	GradNorm            float64 `arrow:"grad_norm"`
	ValueGradNorm       float64 `arrow:"value_grad_norm"`
	OutcomeGradNorm     float64 `arrow:"outcome_grad_norm"`
	ValueStates         int64   `arrow:"value_states"`
	ValueLoss           float64 `arrow:"value_loss"`
	ValueFitLoss        float64 `arrow:"value_fit_loss"`
	ValueFitStates      int64   `arrow:"value_fit_states"`
	ValueFitSteps       int64   `arrow:"value_fit_steps"`
	OutcomeLoss         float64 `arrow:"outcome_loss"`
	RescoreMismatch     float64 `arrow:"rescore_mismatch"`
	PolicySteps         int64   `arrow:"policy_steps"`
	CriticLoss          float64 `arrow:"critic_loss"`
	CriticGradNorm      float64 `arrow:"critic_grad_norm"`
	PolicyForwardRows   int64   `arrow:"policy_forward_rows"`
	PolicyGradRows      int64   `arrow:"policy_grad_rows"`
	HeadRows            int64   `arrow:"head_rows"`
	RowsPerEpisode      float64 `arrow:"rows_per_episode"`
	PolicyVersion       int64   `arrow:"policy_version"`
	ValueVersion        int64   `arrow:"value_version"`
}
