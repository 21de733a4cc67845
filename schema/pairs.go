package schema

// Pairs has one row per paired comparison of a candidate skill (written by
// aggregate).
var Pairs = declare("pairs", 1,
	field("pair_id", utf8),
	field("comparison_id", utf8),
	field("skill_id", utf8),
	field("task_id", utf8),
	field("family", utf8),
	field("b_plus", boolean),      // treatment (with skill) succeeded
	field("b_minus", boolean),     // control (without skill) succeeded
	field("outcome", utf8),        // win | loss | tie
	field("eligible", boolean),    // counts toward the sign test
	nullable("skip_reason", utf8), // why not eligible
).with(
	oneOf("outcome", "win", "loss", "tie"),
)

// PairRow is a row of the pairs table.
type PairRow struct {
	PairID       string  `arrow:"pair_id"`
	ComparisonID string  `arrow:"comparison_id"`
	SkillID      string  `arrow:"skill_id"`
	TaskID       string  `arrow:"task_id"`
	Family       string  `arrow:"family"`
	BPlus        bool    `arrow:"b_plus"`
	BMinus       bool    `arrow:"b_minus"`
	Outcome      string  `arrow:"outcome"`
	Eligible     bool    `arrow:"eligible"`
	SkipReason   *string `arrow:"skip_reason"`
}
