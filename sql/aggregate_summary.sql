-- aggregate_summary: one row describing the aggregate outputs of step $step, for the CLI:
-- rows per table, the mean of p̂ and of the anchor u (Def. B.2) and how many p̂ left their own
-- episode out, buckets per kind and how many reach the lookup minimum $minimum (Def. B.3),
-- corrections per kind, and pairs by outcome and eligibility.
-- Reads: anchors, buckets, corrections, value_data, pairs (each with a step column).
-- Parameters: $step, $minimum.
SELECT
    (SELECT count(*) FROM anchors WHERE step = $step)                               AS anchors,
    (SELECT avg(p_hat) FROM anchors WHERE step = $step)                             AS mean_p_hat,
    (SELECT avg(anchor) FROM anchors WHERE step = $step)                            AS mean_anchor,
    (SELECT count(*) FILTER (WHERE loo) FROM anchors WHERE step = $step)            AS loo,
    (SELECT count(*) FROM buckets WHERE step = $step)                               AS buckets,
    (SELECT count(*) FROM buckets WHERE step = $step AND kind = 'exact')            AS exact_buckets,
    (SELECT count(*) FROM buckets
      WHERE step = $step AND kind = 'exact' AND visits >= $minimum)                 AS exact_at_minimum,
    (SELECT count(*) FROM buckets WHERE step = $step AND kind = 'coarse')           AS coarse_buckets,
    (SELECT count(*) FROM buckets
      WHERE step = $step AND kind = 'coarse' AND visits >= $minimum)                AS coarse_at_minimum,
    (SELECT count(*) FROM corrections WHERE step = $step)                           AS corrections,
    (SELECT count(*) FROM corrections WHERE step = $step AND kind = 'exact')        AS corrections_exact,
    (SELECT count(*) FROM corrections WHERE step = $step AND kind = 'coarse')       AS corrections_coarse,
    (SELECT count(*) FROM corrections WHERE step = $step AND kind = 'none')         AS corrections_none,
    (SELECT count(*) FROM value_data WHERE step = $step)                            AS value_data,
    (SELECT count(*) FROM pairs WHERE step = $step)                                 AS pairs,
    (SELECT count(*) FROM pairs WHERE step = $step AND eligible)                    AS pairs_eligible,
    (SELECT count(*) FROM pairs WHERE step = $step AND eligible AND outcome = 'win') AS wins,
    (SELECT count(*) FROM pairs WHERE step = $step AND eligible AND outcome = 'loss') AS losses,
    (SELECT count(*) FROM pairs WHERE step = $step AND eligible AND outcome = 'tie') AS ties
