package schema

// Scores has one row per decision, rescored under the current policy θ and
// the frozen reference ρ (written by rescore).
var Scores = declare("scores", 1,
	field("episode_id", utf8),
	field("t", i32),
	field("logp_theta", f64),    // log π_θ(a_t|s_t)
	field("logp_rho", f64),      // log π_ρ(a_t|s_t)
	field("delta_l", f64),       // logp_theta - logp_rho
	field("legal_count", i32),   // number of legal actions at s_t
	field("theta_version", i64), // checkpoint step of θ
).with(
	atLeast(0, "t", "theta_version"),
	atLeast(1, "legal_count"),
)

// ScoreRow is a row of the scores table.
type ScoreRow struct {
	EpisodeID    string  `arrow:"episode_id"`
	T            int32   `arrow:"t"`
	LogpTheta    float64 `arrow:"logp_theta"`
	LogpRho      float64 `arrow:"logp_rho"`
	DeltaL       float64 `arrow:"delta_l"`
	LegalCount   int32   `arrow:"legal_count"`
	ThetaVersion int64   `arrow:"theta_version"`
}
