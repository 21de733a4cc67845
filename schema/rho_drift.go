package schema

// RhoDrift has one row per decision rescore re-queried from a served reference
// (served_reference.rescore_sample of the decisions the prompts table holds): the legal action
// whose log ρ moved most between the rollout's request and rescore's, so a batch's drift (servers
// are not bit-deterministic) is kept with the step. Written by rescore only when
// served_reference is set. requests and tokens_sent are what the re-query cost the server (sql/costs.sql
// prices them as the payer rescore).
var RhoDrift = declare("rho_drift", 2,
	field("episode_id", utf8),
	field("t", i32),
	field("action_json", utf8),   // the legal action of the decision's largest drift, canonical JSON
	field("logp_recorded", f64),  // its log ρ as the rollout stored it (prior_logits)
	field("logp_requeried", f64), // its log ρ as rescore's request scored it
	field("drift", f64),          // |logp_requeried − logp_recorded|, the largest over the legal actions
	field("requests", i32),       // scoring requests the re-query sent: 1, or 0 when rescore's scorer cache answered
	field("tokens_sent", i64),    // token ids that request carried (prompt + path, for each legal action)
).with(
	atLeast(0, "t", "drift", "requests", "tokens_sent"),
	within(-1e300, 0, "logp_recorded", "logp_requeried"),
)

// RhoDriftRow is a row of the rho_drift table.
type RhoDriftRow struct {
	EpisodeID     string  `arrow:"episode_id"`
	T             int32   `arrow:"t"`
	ActionJSON    string  `arrow:"action_json"`
	LogpRecorded  float64 `arrow:"logp_recorded"`
	LogpRequeried float64 `arrow:"logp_requeried"`
	Drift         float64 `arrow:"drift"`
	Requests      int32   `arrow:"requests"`
	TokensSent    int64   `arrow:"tokens_sent"`
}
