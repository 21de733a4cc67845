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
)
