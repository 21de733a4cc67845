package schema

// Losses has one row per episode (written by update).
var Losses = declare("losses", 1,
	field("episode_id", utf8),
	field("objective", utf8), // anchortb, tb, ...
	field("T", i32),
	field("loss", f64),
	field("loss_rho", f64), // same loss with every Δℓ = 0
)
