-- One step's rollouts by family and source: reward, team size at STOP, decisions, health.
WITH team AS (
    SELECT episode_id, max(n_nodes) AS nodes
    FROM decisions
    WHERE step = $step
    GROUP BY episode_id
)
SELECT e.family,
       e.source,
       count(*)                                          AS episodes,
       round(avg(e.reward), 3)                           AS reward,
       round(avg(t.nodes), 2)                            AS team_size,
       round(avg(e."T"), 1)                              AS decisions,
       sum(CASE WHEN e.healthy THEN 0 ELSE 1 END)::BIGINT AS unhealthy
FROM episodes e
JOIN team t USING (episode_id)
WHERE e.step = $step
GROUP BY ALL
ORDER BY ALL
