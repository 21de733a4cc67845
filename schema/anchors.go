package schema

// Anchors has one row per scored episode: the measured anchor u_{q,x} and
// its parts (written by aggregate).
var Anchors = declare("anchors", 1,
	field("episode_id", utf8),
	field("task_id", utf8),
	field("family", utf8),
	field("m_global", f64),   // mean reward of all natural_reference observations
	field("m_category", f64), // family mean shrunk toward m_global
	field("m_prior", f64),    // task prior (= m_category when tasks carry no prior)
	field("p_hat", f64),      // task success rate shrunk toward m_prior, in [0,1]
	field("loo", boolean),    // p_hat excludes this episode (natural_reference only)
	field("anchor", f64),     // u_{q,x} = log(1 + (e^β − 1)·p_hat)
).with(
	within(0, 1, "m_global", "m_category", "m_prior", "p_hat"),
	atLeast(0, "anchor"),
)

// AnchorRow is a row of the anchors table.
type AnchorRow struct {
	EpisodeID string  `arrow:"episode_id"`
	TaskID    string  `arrow:"task_id"`
	Family    string  `arrow:"family"`
	MGlobal   float64 `arrow:"m_global"`
	MCategory float64 `arrow:"m_category"`
	MPrior    float64 `arrow:"m_prior"`
	PHat      float64 `arrow:"p_hat"`
	LOO       bool    `arrow:"loo"`
	Anchor    float64 `arrow:"anchor"`
}
