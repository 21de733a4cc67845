-- One step's decisions by action kind.
SELECT action_kind,
       count(*)                                    AS decisions,
       round(count(*) / sum(count(*)) OVER (), 3)  AS share
FROM decisions
WHERE step = $step
GROUP BY action_kind
ORDER BY decisions DESC, action_kind
