package schema

// SimTruth holds the simulated world's hidden truths: per task (difficulty, answer, rates) and
// per skill (its hidden effect). Tests score admission decisions against it; no learning stage
// reads it.
var SimTruth = declare("sim_truth", 2,
	field("kind", utf8), // task | skill
	field("id", utf8),   // task id or skill id
	nullable("family", utf8),
	nullable("task_type", utf8),
	nullable("difficulty", f64),
	nullable("answer", utf8),
	nullable("trap_rate", f64),
	nullable("fail_rate", f64),
	nullable("search_hit_rate", f64),
	nullable("requirement", i32),
	nullable("unsolvable", boolean), // tasks: out of every agent's reach (unsolvable_share)
	nullable("effect", f64),         // skills: hidden logit effect in their family
	nullable("effect_class", utf8),  // skills: helpful | neutral | harmful
).with(
	oneOf("kind", "task", "skill"),
	oneOf("effect_class", "helpful", "neutral", "harmful"),
	within(0, 1, "difficulty", "trap_rate", "fail_rate", "search_hit_rate"),
	atLeast(0, "requirement"),
)

// SimTruthRow is a row of the sim_truth table.
type SimTruthRow struct {
	Kind          string   `arrow:"kind"`
	ID            string   `arrow:"id"`
	Family        *string  `arrow:"family"`
	TaskType      *string  `arrow:"task_type"`
	Difficulty    *float64 `arrow:"difficulty"`
	Answer        *string  `arrow:"answer"`
	TrapRate      *float64 `arrow:"trap_rate"`
	FailRate      *float64 `arrow:"fail_rate"`
	SearchHitRate *float64 `arrow:"search_hit_rate"`
	Requirement   *int32   `arrow:"requirement"`
	Unsolvable    *bool    `arrow:"unsolvable"`
	Effect        *float64 `arrow:"effect"`
	EffectClass   *string  `arrow:"effect_class"`
}
