// Package stats holds the pipeline's statistics in plain Go, written from the paper: the
// hierarchical-shrinkage task anchors (Def. B.2), ratio-first structural pooling and its lagged
// lookup (Def. B.3), the value-head training rows, the paired win/loss/tie counts, the running
// state the aggregate stage carries forward (the anchor pool, the pairs' used keys), and (for
// validated admission) the exact binomial tails and alpha spending.
//
// For the aggregate stage it is the oracle: the SQL files in sql/ are the single definition the
// pipeline runs, and tests (and `evosteer aggregate --check`) recompute the same quantities here
// and compare. It must not read files or import DuckDB.
package stats
