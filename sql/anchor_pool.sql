-- anchor_pool: the pool of the task anchors (paper Def. B.2; METHOD.md §4.2) after step $step
-- commits: one row per task with at least one healthy natural_reference episode in steps
-- 1..$step, its family, the sum of those episodes' rewards and their count. State = the anchor
-- pool of step $step − 1 (none at step 1) plus this step's pooled episodes:
--   reward_sum_k = reward_sum_{k−1} + fsum(the task's rewards of step k),  episodes likewise
-- so a sum is the step-ordered running sum of per-step sums. That is the definition: with
-- fractional rewards it can differ in the last ulp from one fsum over every step's rewards (on
-- 0/1 rewards every order gives the same exact sum). A step's fsum runs in rowid order (file
-- order, shards by name), whatever threads DuckDB uses, so internal/stats.AnchorPool recomputes
-- it bit for bit. A task whose pooled episodes name two families is an error. Ordered by
-- task_id.
-- Reads: episodes, anchor_pool (each with a step column).
-- Parameters: $step.
WITH added AS (
    SELECT task_id, min(family) AS family, fsum(reward ORDER BY rowid) AS reward_sum,
           count(*) AS episodes
    FROM episodes
    WHERE step = $step AND source = 'natural_reference' AND healthy
    GROUP BY task_id
    HAVING CASE WHEN min(family) <> max(family)
                THEN error('task ' || task_id || ' has natural_reference episodes of families '
                           || min(family) || ' and ' || max(family))
                ELSE true END
),
previous AS (
    SELECT task_id, family, reward_sum, episodes
    FROM anchor_pool
    WHERE step = $step - 1
)
SELECT coalesce(p.task_id, a.task_id) AS task_id,
       coalesce(p.family, a.family) AS family,
       (coalesce(p.reward_sum, 0.0) + coalesce(a.reward_sum, 0.0))::DOUBLE AS reward_sum,
       (coalesce(p.episodes, 0) + coalesce(a.episodes, 0))::BIGINT AS episodes
FROM previous p
FULL OUTER JOIN added a ON a.task_id = p.task_id
WHERE CASE WHEN p.family <> a.family
           THEN error('task ' || a.task_id || ' has natural_reference episodes of family '
                      || a.family || ', but of family ' || p.family || ' in earlier steps')
           ELSE true END
ORDER BY task_id
