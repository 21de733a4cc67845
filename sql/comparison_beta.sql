-- comparison_beta: the β study of a comparison study (evosteer ablations). For each AnchorTB
-- temperature β — the anchortb.beta of the run folders $runs, given in $betas: the full method's
-- runs at the configuration's β and the runs of the variants beta-<β> — the IID and OOD averages
-- of the trained policy θ and of the untrained reference ρ, and the paired difference θ − ρ with
-- its sample standard deviation (0 for one pair) over (run folder, evaluation run) pairs, i.e.
-- seed × evaluation run. θ and ρ of a pair are evaluated in the same run folder and evaluation
-- run, so they share tasks, episode seeds and skill menus. A block's score is the mean of its
-- benchmarks' scores in points (100 × mean reward over the block's tasks), as in
-- comparison_scores. Every mean sums in a fixed order (ORDER BY inside the aggregate), so the
-- table is the same on every run. unpaired lists the run folders with a θ block score that has no
-- ρ of the same run folder, evaluation run and block ('' when none; the caller refuses them).
-- Reads: eval_results loaded from several runs (internal/duck LoadRuns).
-- Parameters: $runs (run_name labels), $betas (each run's anchortb.beta). Ordered by β.
WITH study AS (
    SELECT unnest($runs::VARCHAR[]) AS run_name, unnest($betas::DOUBLE[]) AS beta
),
blocks AS (
    SELECT run_name, beta, run, policy, block, 100 * avg(score ORDER BY benchmark) AS score
    FROM eval_results JOIN study USING (run_name)
    WHERE policy IN ('evosteer', 'reference')
    GROUP BY ALL
),
pairs AS (
    SELECT t.beta, t.run_name, t.run, t.block, t.score AS theta, r.score AS rho, t.score - r.score AS diff
    FROM blocks t LEFT JOIN blocks r
      ON r.run_name = t.run_name AND r.run = t.run AND r.block = t.block AND r.policy = 'reference'
    WHERE t.policy = 'evosteer'
)
SELECT beta,
       count(DISTINCT (run_name, run)) FILTER (WHERE rho IS NOT NULL) AS pairs,
       coalesce(string_agg(DISTINCT run_name, ', ' ORDER BY run_name) FILTER (WHERE rho IS NULL), '') AS unpaired,
       avg(theta ORDER BY run_name, run) FILTER (WHERE block = 'iid') AS theta_iid,
       avg(rho ORDER BY run_name, run) FILTER (WHERE block = 'iid') AS rho_iid,
       avg(diff ORDER BY run_name, run) FILTER (WHERE block = 'iid') AS diff_iid,
       coalesce(stddev_samp(diff ORDER BY run_name, run) FILTER (WHERE block = 'iid'), 0) AS diff_std_iid,
       avg(theta ORDER BY run_name, run) FILTER (WHERE block = 'ood') AS theta_ood,
       avg(rho ORDER BY run_name, run) FILTER (WHERE block = 'ood') AS rho_ood,
       avg(diff ORDER BY run_name, run) FILTER (WHERE block = 'ood') AS diff_ood,
       coalesce(stddev_samp(diff ORDER BY run_name, run) FILTER (WHERE block = 'ood'), 0) AS diff_std_ood
FROM pairs
GROUP BY beta
ORDER BY beta
