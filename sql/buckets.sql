-- buckets: the cumulative structural buckets after step $step commits, paper Def. B.3
-- (visit-multiplicity pooling, Eq. evs-ratio-pooling; METHOD.md §4.3):
--   excess_{x,t} = z_{x,t} − 1 = exp(ln(1 + (e^β − 1) r_x) − u_x) − 1
--   A_g = 1 + Σ_{V_g} excess / (n_g + n_0),   c(g) = clip_[−c_max, c_max](ln A_g)
-- State = the buckets of step $step − 1 (none at step 1) plus this step's visits. Visits come
-- from the healthy episodes of step $step with source natural_reference, and also
-- paired_treatment / paired_control when $source_mode = 'reference_with_paired': every decision
-- state s_t (stopped = false) and the terminal state (n_nodes, n_edges, stopped read from the
-- coarse key ["coarse","",N,E,stopped]). Each visit adds (1, excess) to its exact bucket (key =
-- the exact structure key) and to its coarse bucket (key = the coarse key); u_x is the episode's
-- anchor of step $step. Ordered by kind, key.
-- Reads: episodes, decisions, anchors, buckets (each with a step column).
-- Parameters: $step, $beta, $pseudocount (n_0), $correction_bound (c_max), $source_mode.
WITH observed AS (
    SELECT e.episode_id, e.terminal_structure_key, e.terminal_coarse_key,
           exp(ln(1.0 + (exp($beta) - 1.0) * e.reward) - a.anchor) - 1.0 AS excess
    FROM episodes e
    JOIN anchors a ON a.episode_id = e.episode_id AND a.step = $step
    WHERE e.step = $step
      AND e.healthy
      AND (e.source = 'natural_reference'
           OR ($source_mode = 'reference_with_paired'
               AND e.source IN ('paired_treatment', 'paired_control')))
),
visits AS (
    SELECT d.structure_key AS exact_key, d.coarse_key,
           d.n_nodes::INTEGER AS n_nodes, d.n_edges::INTEGER AS n_edges, false AS stopped,
           o.excess
    FROM decisions d
    JOIN observed o ON o.episode_id = d.episode_id
    WHERE d.step = $step
    UNION ALL
    SELECT terminal_structure_key, terminal_coarse_key,
           json_extract(terminal_coarse_key, '$[2]')::INTEGER,
           json_extract(terminal_coarse_key, '$[3]')::INTEGER,
           json_extract(terminal_coarse_key, '$[4]')::BOOLEAN,
           excess
    FROM observed
),
added AS (
    SELECT 'exact' AS kind, exact_key AS key, min(n_nodes) AS n_nodes, min(n_edges) AS n_edges,
           bool_or(stopped) AS stopped, count(*) AS visits, fsum(excess) AS excess_sum
    FROM visits
    GROUP BY exact_key
    UNION ALL
    SELECT 'coarse', coarse_key, min(n_nodes), min(n_edges), bool_or(stopped), count(*),
           fsum(excess)
    FROM visits
    GROUP BY coarse_key
),
previous AS (
    SELECT kind, key, n_nodes, n_edges, stopped, visits, excess_sum
    FROM buckets
    WHERE step = $step - 1
),
merged AS (
    SELECT coalesce(p.kind, a.kind) AS kind,
           coalesce(p.key, a.key) AS key,
           coalesce(p.n_nodes, a.n_nodes) AS n_nodes,
           coalesce(p.n_edges, a.n_edges) AS n_edges,
           coalesce(p.stopped, a.stopped) AS stopped,
           coalesce(p.visits, 0) + coalesce(a.visits, 0) AS visits,
           coalesce(p.excess_sum, 0.0) + coalesce(a.excess_sum, 0.0) AS excess_sum
    FROM previous p
    FULL OUTER JOIN added a ON a.kind = p.kind AND a.key = p.key
),
pooled AS (
    SELECT *, ln(1.0 + excess_sum / (visits + $pseudocount)) AS log_pooled_ratio
    FROM merged
)
SELECT kind,
       key,
       n_nodes::INTEGER AS n_nodes,
       n_edges::INTEGER AS n_edges,
       stopped,
       visits::BIGINT AS visits,
       excess_sum::DOUBLE AS excess_sum,
       log_pooled_ratio::DOUBLE AS log_pooled_ratio,
       greatest(-$correction_bound, least($correction_bound, log_pooled_ratio))::DOUBLE AS correction
FROM pooled
ORDER BY kind, key
