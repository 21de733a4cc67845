package schema

// CalibrationFit has one row per (benchmark, policy, source, run) of a world fit (written by
// `evosteer calibrate` into DIR/fit.arrow): the cell's target and the fitted world's score on the
// fit sample (source fit, run 0), on each evaluation run of the check on fresh seeds (source
// check) and, for the world refitted from a second seed, on the same runs (source refit).
var CalibrationFit = declare("calibration_fit", 1,
	field("benchmark", utf8), // task family
	field("policy", utf8),    // direct | single_agent | fixed_template | plan_execute | searched_workflow | reference
	field("block", utf8),     // iid | ood
	field("source", utf8),    // fit | check | refit
	field("run", i32),        // 0-based evaluation run (0 for the fit sample)
	field("tasks", i64),      // tasks per run
	field("score", f64),      // the world's mean reward, in points
	field("target", f64),     // the measured score it was fitted to, in points
	field("target_std", f64), // the target's std (0 when the table gives none)
).with(
	oneOf("block", "iid", "ood"),
	oneOf("source", "fit", "check", "refit"),
	within(0, 100, "score", "target", "target_std"),
	atLeast(0, "run", "tasks"),
)

// CalibrationFitRow is a row of the calibration_fit table.
type CalibrationFitRow struct {
	Benchmark string  `arrow:"benchmark"`
	Policy    string  `arrow:"policy"`
	Block     string  `arrow:"block"`
	Source    string  `arrow:"source"`
	Run       int32   `arrow:"run"`
	Tasks     int64   `arrow:"tasks"`
	Score     float64 `arrow:"score"`
	Target    float64 `arrow:"target"`
	TargetStd float64 `arrow:"target_std"`
}
