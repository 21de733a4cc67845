package schema

// Pilot has one row per training task of a solver-only pilot (`evosteer pilot --out DIR`,
// DIR/pilot.arrow): samples episodes of the pilot policy (the single_agent paradigm), how many
// succeeded, p̂ = successes / samples, and whether the task is kept in the training pool
// (0 < p̂ < 1: neither always solved nor always failed).
var Pilot = declare("pilot", 1,
	field("task_id", utf8),
	field("family", utf8),
	field("samples", i64),   // episodes played on the task
	field("successes", i64), // of them with reward at least admission.success_threshold
	field("p_hat", f64),     // successes / samples
	field("kept", boolean),  // 0 < p_hat < 1: the task is in DIR/pool.jsonl
).with(
	within(0, 1, "p_hat"),
	atLeast(1, "samples"),
	atLeast(0, "successes"),
)

// PilotRow is a row of the pilot table.
type PilotRow struct {
	TaskID    string  `arrow:"task_id"`
	Family    string  `arrow:"family"`
	Samples   int64   `arrow:"samples"`
	Successes int64   `arrow:"successes"`
	PHat      float64 `arrow:"p_hat"`
	Kept      bool    `arrow:"kept"`
}
