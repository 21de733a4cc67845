-- baselines: the task anchors u_{q,x} of paper Def. B.2 (hierarchical task baseline,
-- Eqs. evs-shrinkage-parent and evs-shrinkage-task; METHOD.md §4.2):
--   m_g = S_g/N_g (cold start when N_g = 0)
--   m_c = (S_c + κ_g m_g) / (N_c + κ_g)
--   m_0 = (n'_d p_d + κ_c m_c) / (n'_d + κ_c),  n'_d = min(n_d, cap) with a prior rate, else 0
--   p̂  = clip_[0,1]((S_q^(-x) + κ_q m_0) / (N_q^(-x) + κ_q))
--   u  = ln(1 + (e^β − 1) p̂)
-- The pool (S, N) is every healthy natural_reference episode of steps 1..$step, read as its
-- per-task sums, the anchor pool of step $step (anchor_pool.sql: step-ordered running sums):
-- S_q, N_q are the task's row, S_c, N_c the sums over the family's rows and S_g, N_g over every
-- row (fsum in task_id order, so that DuckDB's threads cannot change the last bit). An episode
-- of step $step that is itself in the pool is left out once of its own task's sum and count
-- (loo = true); the global and family levels keep it. One row per episode of step $step (every
-- source), in the order of the episodes table (rowid: file order, shards by name).
-- Reads: episodes, anchor_pool (each with a step column), tasks (task_id, prior_rate,
--        prior_count).
-- Parameters: $step, $beta, $kappa_global, $kappa_category, $kappa_task, $prior_count_cap,
--             $cold_start.
WITH pool AS (
    SELECT task_id, family, reward_sum, episodes
    FROM anchor_pool
    WHERE step = $step
),
global_level AS (
    SELECT CASE WHEN count(*) > 0 THEN fsum(reward_sum ORDER BY task_id) / sum(episodes)::DOUBLE
                ELSE $cold_start::DOUBLE END AS m_global
    FROM pool
),
family_level AS (
    SELECT family, fsum(reward_sum ORDER BY task_id) AS s_c, sum(episodes)::DOUBLE AS n_c
    FROM pool
    GROUP BY family
),
task_level AS (
    SELECT task_id, reward_sum AS s_q, episodes::DOUBLE AS n_q
    FROM pool
),
priors AS (
    SELECT task_id,
           CASE WHEN prior_rate IS NULL THEN 0.0
                ELSE least(prior_count, $prior_count_cap::DOUBLE) END AS n_prior,
           coalesce(prior_rate, 0.0) AS p_prior
    FROM tasks
),
scored AS (
    SELECT e.rowid AS row_order, e.episode_id, e.task_id, e.family, e.reward,
           (e.source = 'natural_reference' AND e.healthy) AS loo
    FROM episodes e
    WHERE e.step = $step
),
category AS (
    SELECT s.*, g.m_global,
           (coalesce(f.s_c, 0.0) + $kappa_global * g.m_global)
               / (coalesce(f.n_c, 0.0) + $kappa_global) AS m_category
    FROM scored s
    CROSS JOIN global_level g
    LEFT JOIN family_level f ON f.family = s.family
),
prior AS (
    SELECT c.*,
           (coalesce(p.n_prior, 0.0) * coalesce(p.p_prior, 0.0) + $kappa_category * c.m_category)
               / (coalesce(p.n_prior, 0.0) + $kappa_category) AS m_prior,
           coalesce(q.s_q, 0.0) - CASE WHEN c.loo THEN c.reward ELSE 0.0 END AS s_task,
           coalesce(q.n_q, 0.0) - CASE WHEN c.loo THEN 1.0 ELSE 0.0 END AS n_task
    FROM category c
    LEFT JOIN priors p ON p.task_id = c.task_id
    LEFT JOIN task_level q ON q.task_id = c.task_id
),
estimate AS (
    SELECT *,
           greatest(0.0, least(1.0, (s_task + $kappa_task * m_prior) / (n_task + $kappa_task))) AS p_hat
    FROM prior
)
SELECT episode_id,
       task_id,
       family,
       m_global::DOUBLE AS m_global,
       m_category::DOUBLE AS m_category,
       m_prior::DOUBLE AS m_prior,
       p_hat::DOUBLE AS p_hat,
       loo,
       ln(1.0 + (exp($beta) - 1.0) * p_hat)::DOUBLE AS anchor
FROM estimate
ORDER BY row_order
