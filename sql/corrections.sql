-- corrections: the lagged structure correction c(g(s_t)) of every decision state of step $step,
-- paper Def. B.3 (buckets "fall back to coarse node and edge counts below eight visits, and are
-- read one batch behind"; METHOD.md §4.3, Lookup):
--   c(s_t) = c(exact bucket)   if its visits ≥ $minimum   (kind 'exact')
--          = c(coarse bucket)  else if its visits ≥ $minimum (kind 'coarse')
--          = 0                 otherwise                    (kind 'none')
-- looked up in the buckets committed by step $step − 1 (none at step 1: every row is 'none'),
-- never in this step's own. With $enabled false (the flow-corrections ablation) every row is
-- 'none' with 0. log_pooled_ratio is the same bucket's log A_g before the ±c_max clip (0 for
-- 'none'): log_pooled_ratio − correction is what the clip removed. Every decision of the step,
-- all sources, in the order of the decisions table (rowid: file order, shards by name), so row i
-- belongs to decision row i.
-- Reads: decisions, buckets (each with a step column).
-- Parameters: $step, $minimum, $enabled.
WITH previous AS (
    SELECT kind, key, visits, log_pooled_ratio, correction
    FROM buckets
    WHERE step = $step - 1
)
SELECT d.episode_id,
       d.t::INTEGER AS t,
       CASE WHEN NOT $enabled THEN 'none'
            WHEN x.visits >= $minimum THEN 'exact'
            WHEN c.visits >= $minimum THEN 'coarse'
            ELSE 'none' END AS kind,
       CASE WHEN NOT $enabled THEN 0.0
            WHEN x.visits >= $minimum THEN x.log_pooled_ratio
            WHEN c.visits >= $minimum THEN c.log_pooled_ratio
            ELSE 0.0 END::DOUBLE AS log_pooled_ratio,
       CASE WHEN NOT $enabled THEN 0.0
            WHEN x.visits >= $minimum THEN x.correction
            WHEN c.visits >= $minimum THEN c.correction
            ELSE 0.0 END::DOUBLE AS correction
FROM decisions d
LEFT JOIN previous x ON x.kind = 'exact' AND x.key = d.structure_key
LEFT JOIN previous c ON c.kind = 'coarse' AND c.key = d.coarse_key
WHERE d.step = $step
ORDER BY d.rowid
