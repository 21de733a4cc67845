package schema

// EvalResults has one row per (policy, benchmark, run) of the evaluation protocol (written by
// eval into eval/results.arrow): the policy's mean score over the benchmark's test tasks in one
// run with its own seed.
var EvalResults = declare("eval_results", 2,
	field("policy", utf8),                    // evosteer (trained θ) | reference (ρ) | single_agent | ... (fixed paradigms)
	field("benchmark", utf8),                 // task family
	field("block", utf8),                     // iid | ood
	field("run", i32),                        // 0-based evaluation run
	field("seed", u64),                       // the run's seed
	field("tasks", i64),                      // test tasks scored
	field("score", f64),                      // mean reward (EM / accuracy / pass@1 / success rate)
	field("tokens_per_task", f64),            // mean agents' tokens (in + out) per task, as every backend charges them
	field("controller_tokens_per_task", f64), // mean controller tokens (in + out) per task: 0 for fixed paradigms
	field("controller_count", utf8),          // how those were counted: estimated (prompt-only backends) | served
	field("policy_version", i64),             // checkpoint step of the policy (0 for ρ and fixed paradigms)
).with(
	oneOf("block", "iid", "ood"),
	oneOf("controller_count", ControllerCountEstimated, ControllerCountServed),
	within(0, 1, "score"),
	atLeast(0, "run", "tasks", "tokens_per_task", "controller_tokens_per_task", "policy_version"),
)

// EvalRow is a row of the eval_results table.
type EvalRow struct {
	Policy                  string  `arrow:"policy"`
	Benchmark               string  `arrow:"benchmark"`
	Block                   string  `arrow:"block"`
	Run                     int32   `arrow:"run"`
	Seed                    uint64  `arrow:"seed"`
	Tasks                   int64   `arrow:"tasks"`
	Score                   float64 `arrow:"score"`
	TokensPerTask           float64 `arrow:"tokens_per_task"`
	ControllerTokensPerTask float64 `arrow:"controller_tokens_per_task"`
	ControllerCount         string  `arrow:"controller_count"`
	PolicyVersion           int64   `arrow:"policy_version"`
}
