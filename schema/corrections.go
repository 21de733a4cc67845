package schema

// Corrections has one row per decision state of a step: the structure correction c(g(s_t))
// looked up in the buckets committed by the previous step (one-batch lag, Def. B.3), and which
// bucket supplied it, with that bucket's log A_g before the clip, so what the clip removed can be
// queried (written by aggregate, read by update).
var Corrections = declare("corrections", 2,
	field("episode_id", utf8),
	field("t", i32),
	field("kind", utf8),            // exact | coarse | none (no bucket had enough visits: 0)
	field("log_pooled_ratio", f64), // log A_g of that bucket (0 for none)
	field("correction", f64),       // c(g) of that bucket, in [-c_max, c_max]
).with(
	oneOf("kind", "exact", "coarse", "none"),
	atLeast(0, "t"),
)

// CorrectionRow is a row of the corrections table.
type CorrectionRow struct {
	EpisodeID      string  `arrow:"episode_id"`
	T              int32   `arrow:"t"`
	Kind           string  `arrow:"kind"`
	LogPooledRatio float64 `arrow:"log_pooled_ratio"`
	Correction     float64 `arrow:"correction"`
}
