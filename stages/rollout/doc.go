// Package rollout is the first stage of a training step: it schedules the step's tasks
// (source-balanced, seeded), plays the current (pi_theta) and natural-reference (rho) episodes of
// every task and the paired arms of the skills under test concurrently on the configured
// executor, one atomic edit per decision (through internal/episode; network decisions sampled at
// policy.temperature; a paired arm's forced first action not charged to the budget), and writes
// episodes, decisions (with the exact network inputs), executions, with served_reference the
// controller prompts its ρ scored (prompts) and, for the simulated world, sim_truth. Summarize reads a step's files back through DuckDB (rewards by family and source,
// decisions by action kind: the summary `evosteer rollout` prints).
//
// It must not learn anything or read any output of later stages of the same step.
package rollout
