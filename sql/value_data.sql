-- value_data: the supervised states of the value head v̂ (METHOD.md §3.4):
--   every decision state s_t of the healthy natural_reference episodes of step $step, and the
--   states with t ≥ 1 (after the forced action) of its healthy paired_treatment and
--   paired_control episodes; current episodes never.
--   label = the episode's final reward r; features = f(s_t); task_type from the episode.
-- In the order of the decisions table (rowid: file order, shards by name).
-- Reads: episodes, decisions (each with a step column).
-- Parameters: $step.
SELECT d.episode_id,
       d.t::INTEGER AS t,
       d.features::FLOAT[30] AS features,
       e.task_type,
       e.reward::DOUBLE AS label
FROM decisions d
JOIN episodes e ON e.episode_id = d.episode_id AND e.step = $step
WHERE d.step = $step
  AND e.healthy
  AND (e.source = 'natural_reference'
       OR (e.source IN ('paired_treatment', 'paired_control') AND d.t >= 1))
ORDER BY d.rowid
