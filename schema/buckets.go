package schema

// Buckets is the cumulative bucket state after step k commits (written by
// aggregate, read by the next step).
var Buckets = declare("buckets", 2,
	field("kind", utf8), // exact | coarse
	field("key", utf8),  // structure key
	field("n_nodes", i32),
	field("n_edges", i32),
	field("stopped", boolean),
	field("visits", i64),           // cumulative visits
	field("excess_sum", f64),       // Σ excess over visits
	field("log_pooled_ratio", f64), // log A_g = log1p(excess_sum/(visits+n0)), before the clip
	field("correction", f64),       // c(g) = clamp(log_pooled_ratio, ±c_max)
).with(
	oneOf("kind", "exact", "coarse"),
	atLeast(0, "n_nodes", "n_edges", "visits"),
)

// BucketRow is a row of the buckets table.
type BucketRow struct {
	Kind           string  `arrow:"kind"`
	Key            string  `arrow:"key"`
	NNodes         int32   `arrow:"n_nodes"`
	NEdges         int32   `arrow:"n_edges"`
	Stopped        bool    `arrow:"stopped"`
	Visits         int64   `arrow:"visits"`
	ExcessSum      float64 `arrow:"excess_sum"`
	LogPooledRatio float64 `arrow:"log_pooled_ratio"`
	Correction     float64 `arrow:"correction"`
}
