// Package orchestra is the orchestration environment: the team of LLM agents an
// orchestrator policy builds and repairs one atomic edit at a time, with the semantics of the
// reference release (METHOD.md §2).
//
//   - The graph: nodes n0, n1, … (ids never reused), each with a role, bound skills, its
//     latest output and result; edges with protocol feedback or revise; one output node.
//   - Actions: the seven kinds ADD_AGENT, ADD_EDGE, BIND_SKILL, SET_OUTPUT, RERUN_AGENT,
//     DROP_AGENT, STOP, their canonical JSON and a strict parser.
//   - The legal mask: which actions the state admits, derived from the budget (a role can
//     execute only if its whole envelope can be reserved), the output rules and the skill
//     menu, sorted by canonical text; and budget finalisation when the controller cannot pay
//     for its own decision.
//   - Execution semantics: what each action runs, which messages reach which execution,
//     prompt assembly and fitting, execution seeds, grading at STOP; and the two ablations
//     (deferred execution, no repair actions).
//   - The budget ledger: reserve-then-settle charging of node executions and controller
//     decisions under per-resource caps and a combined token cap.
//   - The 30 execution features (evosteer-public-features@5), the task-type one-hot, the
//     structure keys of the structural buckets, the observation after every action, the
//     diagnosis, and the controller's view of the state (its user message) with the fixed
//     system message a served LLM controller reads first (ControllerSystemPrompt, versioned
//     by ControllerSystemPromptID).
//
// The roles of the reference configuration and their per-family adaptation live here too.
//
// The rules it reads texts by (answer presence, normalised answers, token lengths) are in
// internal/textrules, which the executors use as well.
//
// It must not choose actions (that is the policy's job), draw randomness of its own (every
// execution seed is derived from the episode seed with internal/seed), or read or write
// files: the rollout stage logs what it reports.
package orchestra
