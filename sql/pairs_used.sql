-- pairs_used: every (comparison_id, task_id) that an eligible pair of steps 1..$step used, with
-- the step of its first eligible pair (METHOD.md §5.5): the state pairs.sql's repeated-task
-- rule reads at step $step + 1. State = the pairs_used of step $step − 1 (none at step 1) plus
-- the keys of this step's eligible pairs it lacks, with first_step = $step. Written whatever
-- admission.allow_repeated_tasks says (it is bounded by comparisons × tasks all the same).
-- Ordered by comparison_id, task_id.
-- Reads: pairs, pairs_used (each with a step column).
-- Parameters: $step.
WITH added AS (
    SELECT DISTINCT comparison_id, task_id
    FROM pairs
    WHERE step = $step AND eligible
),
previous AS (
    SELECT comparison_id, task_id, first_step
    FROM pairs_used
    WHERE step = $step - 1
)
SELECT coalesce(p.comparison_id, a.comparison_id) AS comparison_id,
       coalesce(p.task_id, a.task_id) AS task_id,
       coalesce(p.first_step, $step)::BIGINT AS first_step
FROM previous p
FULL OUTER JOIN added a ON a.comparison_id = p.comparison_id AND a.task_id = p.task_id
ORDER BY comparison_id, task_id
