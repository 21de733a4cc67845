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
//     (sql/pairs.sql);
//   - anchor_pool.arrow  the anchors' pool after this step, per task (sql/anchor_pool.sql): the
//     previous step's plus this step's healthy natural_reference episodes;
//   - pairs_used.arrow   the (comparison, task) keys eligible pairs have used through this step
//     (sql/pairs_used.sql): the previous step's plus this step's.
//
// Inputs: every shard of the step's rollout episodes and decisions, the previous step's three
// running states (buckets, anchor pool, used pair keys; none at step 1) and tasks/train.arrow
// (record priors). Step k > 1 thus needs the aggregate of step k − 1 and nothing else of an
// earlier step: a step reads as many files however many steps came before it (the states grow
// with the tasks, structures and comparisons seen, not with the steps).
//
// The SQL files are the single definition of these quantities. The package loads the files
// into DuckDB (internal/duck: only the columns the SQL reads, materialised as tables, each with
// a step column so that the same SQL also runs over `evosteer sql` databases), runs the SQL and
// writes the results through schema. Check recomputes the seven tables with the plain-Go
// oracle in internal/stats from the whole history (every step's episodes, every earlier step's
// pairs), the states exactly, and compares (evosteer aggregate --check, and the tests).
//
// It must not roll anything out, train anything, or write outside its own stage folder.
package aggregate
