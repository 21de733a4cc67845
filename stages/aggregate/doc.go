// Package aggregate is the stage after rollout: DuckDB SQL over the step's rollout files that
// computes what the update stage and skill admission read. It writes, into
// step-NNNNNN/aggregate/:
//
//   - anchors.arrow      one row per episode of the step: the hierarchical-shrinkage task anchor
//     u_{q,x} and its levels (sql/baselines.sql, paper Def. B.2);
//   - buckets.arrow      the cumulative structural buckets after this step (sql/buckets.sql,
//     Def. B.3): the previous step's buckets plus this step's visits;
//   - corrections.arrow  one row per decision: c(g(s_t)) looked up in the PREVIOUS step's buckets
//     (sql/corrections.sql; one-batch lag, exact bucket then coarse fallback);
//   - value_data.arrow   the value head's supervised states (sql/value_data.sql);
//   - pairs.arrow        the step's paired comparisons, scored and checked for eligibility
//     (sql/pairs.sql).
//
// Inputs: every shard of the step's rollout episodes and decisions, the episodes of every
// earlier step (the anchor pool), the earlier steps' pairs (repeated-task rule), the previous
// step's buckets, and tasks/train.arrow (record priors). Step k > 1 needs the aggregate of step
// k − 1 (its buckets carry the cumulative state) and the rollout of every earlier step.
//
// The SQL files are the single definition of these quantities. The package loads the files
// into DuckDB (internal/duck: only the columns the SQL reads, materialised as tables, each with
// a step column so that the same SQL also runs over `evosteer sql` databases), runs the SQL and
// writes the results through schema. Check recomputes the same five tables with the plain-Go
// oracle in internal/stats and compares (evosteer aggregate --check, and the tests).
//
// It must not roll anything out, train anything, or write outside its own stage folder.
package aggregate
