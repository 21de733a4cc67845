package schema

// Coefficients has one row per decision (written by update): what an
// external trainer needs to apply the same update.
var Coefficients = declare("coefficients", 1,
	field("episode_id", utf8),
	field("t", i32),
	field("flow", f64),        // F_t
	field("measured", f64),    // measured part clip(anchor + c(g_t), 0, β)
	field("residual", f64),    // learned residual b_ψ(s_t)
	field("coefficient", f64), // Γ_t = ∂L/∂ℓ_θ(a_t)
).with(
	atLeast(0, "t"),
)

// CoefficientRow is a row of the coefficients table.
type CoefficientRow struct {
	EpisodeID   string  `arrow:"episode_id"`
	T           int32   `arrow:"t"`
	Flow        float64 `arrow:"flow"`
	Measured    float64 `arrow:"measured"`
	Residual    float64 `arrow:"residual"`
	Coefficient float64 `arrow:"coefficient"`
}
