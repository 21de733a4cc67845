-- comparison_scores: the evaluation scores of a comparison study (evosteer ablations), one row
-- per variant, seed, policy and benchmark: the mean score over the seed's evaluation runs, in
-- points (100 × mean reward), and the mean executor tokens per task. Besides the benchmarks, each
-- (variant, seed, policy) has rows 'avg_iid' and 'avg_ood': the mean of the block's benchmark
-- scores, as in the paper's Avg rows. Means and spreads over seeds are taken by the caller.
-- Every mean sums in a fixed order (ORDER BY inside the aggregate): floating-point sums depend
-- on their order, and the tables must be the same on every run.
-- Reads: eval_results loaded from several runs (internal/duck LoadRuns), whose run_name is
-- '<variant>-s<seed>'. No parameters. Ordered by variant, seed, policy, benchmark.
WITH per_seed AS (
    SELECT regexp_extract(run_name, '^(.*)-s[0-9]+$', 1) AS variant,
           CAST(regexp_extract(run_name, '-s([0-9]+)$', 1) AS INTEGER) AS seed,
           policy, benchmark, block,
           100 * avg(score ORDER BY run) AS score,
           avg(tokens_per_task ORDER BY run) AS tokens
    FROM eval_results
    GROUP BY ALL
)
SELECT variant, seed, policy, benchmark, block, score, tokens FROM per_seed
UNION ALL
SELECT variant, seed, policy, 'avg_' || block, block, avg(score ORDER BY benchmark), avg(tokens ORDER BY benchmark)
FROM per_seed
GROUP BY variant, seed, policy, block
ORDER BY variant, seed, policy, benchmark
