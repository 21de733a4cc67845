package schema

// Checkpoint holds the learner's state after an update (written by update into
// update/checkpoint/, and by init for step 0): one row per parameter block (values and, for
// trainable blocks, AdamW moments) and one per integer counter (versions, optimizer steps).
// The next step's rollout, rescore and update load it; it is an ordinary table, so it can be
// inspected and queried like every other file.
var Checkpoint = declare("checkpoint", 1,
	field("name", utf8),           // parameter block (e.g. policy/adapter/s1/A) or counter name
	field("kind", utf8),           // param | counter
	field("dims", listOf(i32)),    // block dimensions (empty for counters)
	field("value", listOf(f32)),   // block values, row-major
	field("m", listOf(f32)),       // AdamW first moment (empty for frozen blocks)
	field("v", listOf(f32)),       // AdamW second moment (empty for frozen blocks)
	field("count", i64),           // counter value (0 for blocks)
	field("labels", listOf(utf8)), // names of a block's entries where they have names (free task anchors)
).with(
	oneOf("kind", "param", "counter"),
	atLeast(0, "count"),
)

// CheckpointRow is a row of the checkpoint table.
type CheckpointRow struct {
	Name   string    `arrow:"name"`
	Kind   string    `arrow:"kind"`
	Dims   []int32   `arrow:"dims"`
	Value  []float32 `arrow:"value"`
	M      []float32 `arrow:"m"`
	V      []float32 `arrow:"v"`
	Count  int64     `arrow:"count"`
	Labels []string  `arrow:"labels"`
}
