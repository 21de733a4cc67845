package schema

// PairsUsed is every (comparison, task) an eligible pair of steps 1..k used, after step k
// commits (written by aggregate, read by the next step's repeated-task rule, METHOD.md §5.5).
// Rows are sorted by comparison_id, task_id.
var PairsUsed = declare("pairs_used", 1,
	field("comparison_id", utf8),
	field("task_id", utf8),
	field("first_step", i64), // the step of the first eligible pair of the key
).with(
	atLeast(1, "first_step"),
)

// PairsUsedRow is a row of the pairs_used table.
type PairsUsedRow struct {
	ComparisonID string `arrow:"comparison_id"`
	TaskID       string `arrow:"task_id"`
	FirstStep    int64  `arrow:"first_step"`
}
