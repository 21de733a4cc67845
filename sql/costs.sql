-- What each step's model calls cost: per step and payer the requests, the input tokens (and
-- those of them a server may bill at a cached-prefix price), the output tokens and how many of
-- those requests have estimated counts. `evosteer costs` prices these rows, and the report's
-- costs section shows the same rows (stages/report LoadCosts runs this file for both).
-- Reads executions@2, episodes@2, proposals@1, prompts@2, decisions and rho_drift@2, each with
-- its step column (duck.DB.LoadRun, as `evosteer sql` loads a run); LoadCosts creates the
-- tables a run has no file of empty (a run without served_reference has no prompts), so under
-- `evosteer sql` the file runs only over a run that has every one. No parameters.
-- payer: an agent role (executions.role); 'controller' (the controller's ρ: episodes and, when
--   served, prompts); 'rescore' (rescore's drift re-queries of a served ρ, rho_drift); 'author'
--   (proposals, one row a window).
-- served: whether a server answered (and billed) the requests: true for the served ρ (episodes
--   counted 'served'), rescore and a model author (backend openai); false for the prompt-only
--   prior (reference_prior: its controller "requests" are the decisions charged to the episode
--   budget, its tokens an estimate, and no server ever saw them) and the simulated author; NULL
--   for the agent roles, whose executions do not say: the run's executor.backend does (openai
--   is served, sim is not).
-- requests: an agent role's model calls; the served ρ's scoring requests (controller_requests,
--   0 for a decision its scorer's cache answered); the prior's charged decisions
--   (controller_calls); rescore's re-queries; one a window of a model author (also when it
--   failed), none of the simulated one.
-- tokens_in: an execution's usage as its server reported it (or as estimated), before the cap
--   at its reservation that episodes.executor_tokens_* applies; the served ρ's and rescore's
--   token ids the server received (prompt + path, for each legal action: controller_tokens_sent,
--   rho_drift.tokens_sent); the prior's estimate controller_tokens_in; the author's usage.
-- tokens_cached: of tokens_in, the prompt every candidate of a scoring request repeats, beyond
--   the first: (legal actions − 1) × prompt_tokens a request (decisions.legal_actions,
--   prompts.prompt_tokens), what a server's prefix cache holds; 0 for every other payer.
-- tokens_out: an execution's, the prior's (controller_tokens_out, its actions' estimate) and the
--   author's output tokens; a scoring request's one generated token per legal action
--   (max_new_tokens / max_tokens 1).
-- estimated: how many of those requests have counts the client estimated instead of the server
--   reporting them: the model calls of an execution with usage_estimated (estimated in part
--   when one of its calls was); every decision of the prior; never the served ρ's, rescore's
--   or the author's (a model author's reply without usage fails its window, counting 0).
WITH candidates AS (
    SELECT p.step, p.episode_id, p.t, p.prompt_tokens, p.requests, len(d.legal_actions)::BIGINT AS n
    FROM prompts p
    JOIN decisions d ON d.step = p.step AND d.episode_id = p.episode_id AND d.t = p.t
),
usage AS (
    SELECT step, 0 AS kind, role AS payer, NULL::BOOLEAN AS served, model_calls AS requests,
           tokens_in, 0::BIGINT AS tokens_cached, tokens_out,
           CASE WHEN usage_estimated THEN model_calls ELSE 0 END AS estimated
    FROM executions
    UNION ALL
    SELECT step, 1, 'controller', false, controller_calls, controller_tokens_in, 0, controller_tokens_out, controller_calls
    FROM episodes WHERE controller_count <> 'served'
    UNION ALL
    SELECT step, 1, 'controller', true, controller_requests, controller_tokens_sent, 0, 0, 0
    FROM episodes WHERE controller_count = 'served'
    UNION ALL
    SELECT step, 1, 'controller', true, 0, 0, (n - 1) * prompt_tokens, n, 0
    FROM candidates WHERE requests > 0
    UNION ALL
    SELECT r.step, 2, 'rescore', true, r.requests, r.tokens_sent,
           CASE WHEN r.requests > 0 THEN (c.n - 1) * c.prompt_tokens ELSE 0 END,
           CASE WHEN r.requests > 0 THEN c.n ELSE 0 END, 0
    FROM rho_drift r
    JOIN candidates c ON c.step = r.step AND c.episode_id = r.episode_id AND c.t = r.t
    UNION ALL
    SELECT step, 3, 'author', backend = 'openai', CASE WHEN backend = 'openai' THEN 1 ELSE 0 END, tokens_in, 0, tokens_out, 0
    FROM proposals
)
SELECT step,
       payer,
       served,
       sum(requests)::BIGINT      AS requests,
       sum(tokens_in)::BIGINT     AS tokens_in,
       sum(tokens_cached)::BIGINT AS tokens_cached,
       sum(tokens_out)::BIGINT    AS tokens_out,
       sum(estimated)::BIGINT     AS estimated
FROM usage
GROUP BY step, kind, payer, served
ORDER BY step, kind, payer, served
