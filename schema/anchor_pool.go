package schema

// AnchorPool is the anchor pool after step k commits (written by aggregate, read by the next
// step's): the healthy natural_reference episodes of steps 1..k summed per task, the state from
// which the task anchors' task, family and global levels are computed (METHOD.md §4.2). Rows
// are sorted by task_id; a task without a pooled episode has none.
var AnchorPool = declare("anchor_pool", 1,
	field("task_id", utf8),
	field("family", utf8),
	field("reward_sum", f64), // Σ reward, summed per step (fsum) and then step after step
	field("episodes", i64),   // pooled episodes of the task
).with(
	atLeast(0, "reward_sum"),
	atLeast(1, "episodes"),
)

// AnchorPoolRow is a row of the anchor_pool table.
type AnchorPoolRow struct {
	TaskID    string  `arrow:"task_id"`
	Family    string  `arrow:"family"`
	RewardSum float64 `arrow:"reward_sum"`
	Episodes  int64   `arrow:"episodes"`
}
