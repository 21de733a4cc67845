-- pairs: the paired comparisons of step $step for validated skill admission (paper §4.3 and
-- appendix C; METHOD.md §5.5, Scoring a pair):
--   b_+ = r_treatment ≥ $success_threshold,  b_− = r_control ≥ $success_threshold
--   outcome = win (b_+ ∧ ¬b_−) | loss (¬b_+ ∧ b_−) | tie (otherwise)
--   eligible unless an arm is unhealthy (skip_reason 'unhealthy_arm', checked first) or, when
--   NOT $allow_repeated_tasks, its (comparison_id, task_id) was already used by an eligible pair
--   of an earlier step (the pairs_used state of step $step − 1, pairs_used.sql; none at step 1)
--   or by an eligible pair of this step with a smaller pair_id ('repeated_task').
-- A pair is a pair_id of step $step with both a paired_treatment and a paired_control arm;
-- skill_id (candidate_skill_id), comparison_id, task_id and family come from the treatment arm.
-- A pair_id with two arms of one kind is an error. Ordered by pair_id.
-- Reads: episodes, pairs_used (each with a step column).
-- Parameters: $step, $success_threshold, $allow_repeated_tasks.
WITH arms AS (
    SELECT pair_id, source, comparison_id, candidate_skill_id, task_id, family, reward, healthy,
           count(*) OVER (PARTITION BY pair_id, source) AS arms_of_kind
    FROM episodes
    WHERE step = $step
      AND source IN ('paired_treatment', 'paired_control')
      AND pair_id IS NOT NULL
),
joined AS (
    SELECT tr.pair_id,
           tr.comparison_id,
           tr.candidate_skill_id AS skill_id,
           tr.task_id,
           tr.family,
           tr.reward >= $success_threshold AS b_plus,
           co.reward >= $success_threshold AS b_minus,
           tr.healthy AND co.healthy AS healthy
    FROM arms tr
    JOIN arms co ON co.pair_id = tr.pair_id AND co.source = 'paired_control'
    WHERE tr.source = 'paired_treatment'
      AND CASE WHEN tr.arms_of_kind > 1 OR co.arms_of_kind > 1
               THEN error('pair ' || tr.pair_id || ' has more than one treatment or control arm')
               ELSE true END
),
used_before AS (
    SELECT comparison_id, task_id
    FROM pairs_used
    WHERE step = $step - 1
),
ranked AS (
    SELECT j.*,
           u.task_id IS NOT NULL AS used_earlier,
           row_number() OVER (PARTITION BY j.comparison_id, j.task_id, j.healthy
                              ORDER BY j.pair_id) AS rank_in_step
    FROM joined j
    LEFT JOIN used_before u ON u.comparison_id = j.comparison_id AND u.task_id = j.task_id
),
judged AS (
    SELECT *,
           CASE WHEN NOT healthy THEN 'unhealthy_arm'
                WHEN NOT $allow_repeated_tasks AND (used_earlier OR rank_in_step > 1)
                    THEN 'repeated_task'
           END AS skip_reason
    FROM ranked
)
SELECT pair_id,
       comparison_id,
       skill_id,
       task_id,
       family,
       b_plus,
       b_minus,
       CASE WHEN b_plus AND NOT b_minus THEN 'win'
            WHEN b_minus AND NOT b_plus THEN 'loss'
            ELSE 'tie' END AS outcome,
       skip_reason IS NULL AS eligible,
       skip_reason
FROM judged
ORDER BY pair_id
