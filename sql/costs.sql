-- What each step's model calls cost: per step and payer (each agent role of the executions, the
-- controller, the skill author) the requests, input and output tokens, how many of those requests
-- have estimated counts, and their price. The report's costs section computes the same in Go
-- (stages/report Costs, checked against this file by TestCostsSQLAgreesWithGo).
-- Reads executions@2, episodes@2 and proposals@1, each with its step column (duck.DB.LoadRun,
-- as `evosteer sql` loads a run).
-- Parameters: $input_per_million, $output_per_million: the costs block of pipeline.yaml; cost is
-- NULL when both are 0 (no prices).
-- payer: an agent role (executions.role); 'controller' (episodes' controller_* columns);
--   'author' (proposals, one row a window).
-- requests: an agent role's model calls; the controller's scoring requests to a served reference
--   (controller_count 'served'; 0 for a decision whose scores were cached), else the decisions
--   charged to the budget (controller_calls: the prompt-only backends send no request); one a
--   window of a model author (backend openai, also when it failed), none of the simulated one.
-- tokens_in, tokens_out: an execution's usage as its server reported it (or as estimated),
--   before the cap at its reservation that episodes.executor_tokens_* applies; the controller's
--   controller_tokens_in/out; the author's window usage.
-- estimated: how many of those requests have counts the client estimated instead of the server
--   reporting them: the model calls of an execution with usage_estimated (estimated in part
--   when one of its calls was); every controller request of an episode counted 'estimated';
--   never the author's (a model author's reply without usage fails its window, counting 0).
WITH usage AS (
    SELECT step, 0 AS kind, role AS payer, model_calls AS requests, tokens_in, tokens_out,
           CASE WHEN usage_estimated THEN model_calls ELSE 0 END AS estimated
    FROM executions
    UNION ALL
    SELECT step, 1, 'controller',
           CASE WHEN controller_count = 'served' THEN controller_requests ELSE controller_calls END,
           controller_tokens_in, controller_tokens_out,
           CASE WHEN controller_count = 'served' THEN 0 ELSE controller_calls END
    FROM episodes
    UNION ALL
    SELECT step, 2, 'author', CASE WHEN backend = 'openai' THEN 1 ELSE 0 END, tokens_in, tokens_out, 0
    FROM proposals
)
SELECT step,
       payer,
       sum(requests)::BIGINT   AS requests,
       sum(tokens_in)::BIGINT  AS tokens_in,
       sum(tokens_out)::BIGINT AS tokens_out,
       sum(estimated)::BIGINT  AS estimated,
       CASE WHEN $input_per_million = 0 AND $output_per_million = 0 THEN NULL
            ELSE (sum(tokens_in)::DOUBLE * $input_per_million + sum(tokens_out)::DOUBLE * $output_per_million) / 1e6
       END                     AS cost
FROM usage
GROUP BY step, kind, payer
ORDER BY step, kind, payer
