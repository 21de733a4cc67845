-- comparison_update_cost: the update stage's deterministic work per variant and seed of a
-- comparison study (evosteer ablations): network rows evaluated per trained episode (policy
-- forward and gradient rows, head rows; update_metrics.rows_per_episode), optimisation passes per
-- step (policy_steps) and trained episodes per step, averaged over the seed's training steps.
-- Wall-clock cost is measured by the study driver, not stored in run folders (it would make
-- them irreproducible).
-- Reads: update_metrics loaded from several runs, run_name '<variant>-s<seed>'. No parameters.
SELECT regexp_extract(run_name, '^(.*)-s[0-9]+$', 1) AS variant,
       CAST(regexp_extract(run_name, '-s([0-9]+)$', 1) AS INTEGER) AS seed,
       avg(rows_per_episode ORDER BY step) AS rows_per_episode,
       avg(policy_steps ORDER BY step) AS policy_steps,
       avg(trajectories ORDER BY step) AS episodes_per_step,
       count(*) AS steps
FROM update_metrics
GROUP BY ALL
ORDER BY variant, seed
