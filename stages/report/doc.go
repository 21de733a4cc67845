// Package report turns a run folder into a report (ARCHITECTURE.md §9): report/index.html, a single
// self-contained page (figures embedded as base64 PNG data URIs, inline CSS, nothing fetched),
// report/report.md with the same content and the figures linked, and the figures as
// report/<id>.png. Sections, in order:
//
//   - rewards: rolling means of the π_θ and ρ rewards, the unhealthy fraction, and θ − ρ with a
//     band of ±2 standard errors (episodes; paper Fig. 3b);
//   - loss: the AnchorTB batch loss against loss_rho and the anchor-only level loss_anchor
//     (update_metrics; Fig. 3b);
//   - anchor_auc: cumulative AUC of the leave-one-out task anchor p̂ and of the task-family mean
//     for predicting reference-rollout success (anchors joined with episodes; Fig. 4c);
//   - edit_outcomes: better / same / worse graded output after each edit, by action kind, for θ
//     and ρ rollouts (decisions.output_score; Fig. 4e);
//   - skills: admission ledger events per step and the alpha spent against the budget α;
//   - evaluation: eval/results.arrow in the shape of the paper's Table 1 (BuildEvalTable, whose
//     Markdown rendering `evosteer eval` prints too), and every cell the paper measured against
//     its Table 2 score (internal/paper);
//   - costs: per payer — each agent role, the controller, the skill author — the requests, input
//     and output tokens, the requests with estimated counts and, with prices (the costs block),
//     the cost, for the last step and the whole run (Costs, the Go twin of sql/costs.sql), and
//     the evaluation's tokens from eval/results.arrow, which keeps no requests and is not priced;
//   - probe, only when the run was probed (`evosteer probe`): per probed step, θ against its
//     target π* and against its loss's own target at the first decision (probetable.Summarize of
//     probe/step-NNNNNN/probe.arrow), per family for the last probed step, with its verdict and
//     family × role interaction.
//
// Every number is computed in plain Go from the rows (schema.ReadFile, and a four-column read of
// the wide decisions table), by exported functions the tests check against hand-computed
// cases. The output is deterministic (no timestamps; the same run gives byte-identical files)
// and written atomically: a temporary folder beside the target replaces it whole. Runs on the
// simulated world are labelled as such on the page and in every figure title.
//
// It must not write anywhere in the run folder but the report folder, nor change what it reads:
// it is a read-only view of a run, and may run while a training step is in progress (a step
// that is only partly written shows what it has).
package report
