// Package author is the stage that proposes candidate skills (paper §4.3, appendix C.5;
// METHOD.md §5.3–5.4). For step k it continues the admission ledger from the state validate k
// left (internal/skills.LoadLedger: step-k/validate/ledger_state.arrow with the skills.arrow
// beside it) and the author state author k−1 left (the evidence pool, the count of windows
// without a candidate per family), and opens the
// step's author windows: none before author.start_step (warm-up), author.start_families at it,
// then one every author.interval steps, each for the highest-priority family that has training
// tasks (tasks/train.arrow; a family without any gets no window) and can take a candidate
// (fewest skills, fewest earlier empty windows, families with rewards, most tasks with both a
// success and a failure, lowest mean natural reward, most failures, config order).
//
// A window shows the Author (interface; backends: the simulated author of the embedded world,
// and an OpenAI-compatible chat model with the prompt of METHOD.md §5.4) the family's skills,
// statistics and up to author.max_trajectories evidence episodes: the stopped, healthy episodes
// of step k and the evidence pool carried over steps 1..k−1 (author.evidence_pool per family:
// after each step, the pool and that step's natural episodes re-ranked by the same selection,
// as the reference carries it through the warm-up and beyond; so the author reads step k's
// episodes every step while a pool is carried), success/failure contrasts of
// one task first. An answer is judged in this order: a call or output error, JSON null
// (no_proposal), a record already in the library (duplicate_filtered), then the content rules — sizes, evidence talk or efficacy claims, a
// repeated name, answer leakage (a shown task's prompt quoted) — whose violation is an
// author_error that wastes only the window. An accepted record becomes a candidate. It writes
// into step-k/author/:
//
//   - proposals.arrow      one row per window, with the reason of a rejection and a model's raw reply;
//   - ledger.arrow         the ledger's segment: one proposal event per new candidate;
//   - skills.arrow         the library, which the rollout of step k+1 freezes into menus;
//   - ledger_state.arrow   the ledger's state, which validate k+1 continues;
//   - evidence_pool.arrow  the evidence pool after step k (empty when author.evidence_pool is 0);
//   - author_state.arrow   per family, the windows of steps 1..k that ended without a candidate;
//   - sim_truth.arrow      with the sim executor: the new candidates' hidden effects (kind skill).
//
// Under the skill-evolution ablation it reads nothing and writes the files empty (the ledger
// state is the empty ledger's).
//
// The windows of a step are asked at once, at most the author's concurrency at a time
// (author.max_concurrency for a model author; the simulated author answers one at a time), never
// more than the library has room for; the answers are collected by window index and judged and
// recorded in window order, so every output is byte-identical to a one-at-a-time run whatever
// order they arrive in.
//
// A model author calls its server through the executor's chat client (internal/executor/openai),
// one HTTP client for every model call, under the executor's rules: connection errors, timeouts,
// 5xx, 408 and 429 are retried with backoff until they have lasted author.outage_seconds; other
// 4xx, redirects (never followed) and malformed replies (over 8 MiB, a token count outside
// [0, 2^40]) fail at once; each is that window's author_error. A request carries the window
// seed's low 31 bits (send_seed) and the thinking switch (disable_thinking) as the executor's do,
// and the API key is redacted from every reply and error before it is stored or printed.
//
// It must not roll anything out, change a skill's status, or write outside its own stage
// folder; the API key of a model author is sent only in the Authorization header and never
// logged or written.
package author
