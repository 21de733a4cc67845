package schema

// ValueData holds the training examples of the value head (written by
// aggregate).
var ValueData = declare("value_data", 1,
	field("episode_id", utf8),
	field("t", i32),
	field("features", fixedList(30, f32)), // f(s_t)
	field("task_type", utf8),
	field("label", f64), // final reward of the episode
).with(
	atLeast(0, "t"),
	within(0, 1, "label"),
)

// ValueRow is a row of the value_data table.
type ValueRow struct {
	EpisodeID string      `arrow:"episode_id"`
	T         int32       `arrow:"t"`
	Features  [30]float32 `arrow:"features"`
	TaskType  string      `arrow:"task_type"`
	Label     float64     `arrow:"label"`
}
