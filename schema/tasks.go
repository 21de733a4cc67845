package schema

// Tasks holds the task records of a run (tasks/train.arrow, tasks/test.arrow), in the
// reference release's row schema. Learning stages read only ids, families and prompts.
var Tasks = declare("tasks", 1,
	field("task_id", utf8),
	field("family", utf8),    // the benchmark ("kind" in the reference rows)
	field("task_type", utf8), // the IID family whose one-hot slot the task uses
	field("split", utf8),     // train | test
	field("source_id", utf8),
	field("origin", utf8),
	field("prompt", utf8),
	field("answers", listOf(utf8)), // gold answers; graders only
	field("options", listOf(utf8)), // multiple-choice letters
	nullable("prior_rate", f64),    // optional success-rate prior for the anchors
	field("prior_count", f64),
	field("extra", utf8), // JSON object of the row's remaining fields (tests, environment ids)
).with(
	oneOf("split", "train", "test"),
	within(0, 1, "prior_rate"),
	atLeast(0, "prior_count"),
)

// TaskRow is a row of the tasks table.
type TaskRow struct {
	ID         string   `arrow:"task_id"`
	Family     string   `arrow:"family"`
	TaskType   string   `arrow:"task_type"`
	Split      string   `arrow:"split"`
	SourceID   string   `arrow:"source_id"`
	Origin     string   `arrow:"origin"`
	Prompt     string   `arrow:"prompt"`
	Answers    []string `arrow:"answers"`
	Options    []string `arrow:"options"`
	PriorRate  *float64 `arrow:"prior_rate"`
	PriorCount float64  `arrow:"prior_count"`
	Extra      string   `arrow:"extra"`
}
