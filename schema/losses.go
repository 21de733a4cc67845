package schema

// Losses has one row per trajectory of the update (written by update), all at the parameters
// before the step's gradient update and with the Δℓ of the scores file.
var Losses = declare("losses", 2,
	field("episode_id", utf8),
	field("objective", utf8), // anchortb, tb, ...
	field("T", i32),
	field("loss", f64),
	field("loss_rho", f64),    // same loss with every Δℓ = 0 (the reference level)
	field("loss_anchor", f64), // every Δℓ = 0 and b_ψ = 0: each flow is its measured part (paper's anchor-only level)
).with(
	atLeast(0, "T"),
)

// LossRow is a row of the losses table.
type LossRow struct {
	EpisodeID  string  `arrow:"episode_id"`
	Objective  string  `arrow:"objective"`
	T          int32   `arrow:"T"`
	Loss       float64 `arrow:"loss"`
	LossRho    float64 `arrow:"loss_rho"`
	LossAnchor float64 `arrow:"loss_anchor"`
}
