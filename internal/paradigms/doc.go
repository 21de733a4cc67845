// Package paradigms holds the fixed orchestration paradigms of the paper's Table ablation, the
// baselines that decide the team before execution, on the same executor, budget and action space
// as EvoSteer (ARCHITECTURE.md §9): as policy.Policy values that the rollout's decision loop plays
// like any scripted policy.
//
//   - direct (a baseline, Table 2's frozen-executor row): the executor answering alone — one
//     solver without tools, its output, STOP.
//   - single_agent: one ReAct-style agent with every tool the task type offers (tool_user; a
//     solver where no tool is offered), its output, STOP.
//   - fixed_template: one hand-designed team for every task: planner → solver → verifier, the
//     verifier's output.
//   - plan_execute: a planner writes the whole graph once, at the first decision, from what it
//     can read before anything runs (the task type and its roles), then the graph runs as
//     written: the planner agent, two workers that receive its plan, a finalizer over both.
//   - searched_workflow: a workflow per task type searched offline over a small grammar of
//     templates on the training split (AFlow-style) and frozen; Search runs the search and
//     returns the chosen templates as JSON-serialisable Workflows. With Finalists the best few
//     templates are played again on a larger sample and chosen there, so the row does not ride
//     a winner's curse; the choice is the cheapest template within a standard error of the best
//     (choose), since templates that close are a tie an argmax breaks by chance. A wanted task
//     type without training tasks (one a pilot left out of the pool) gets no workflow but a
//     reason (SearchResult.Unsearched), so its benchmarks are n/a rather than an error.
//   - direct plays its agent as the executor alone (policy.Barer): without the role instruction
//     the architecture gives every agent.
//
// A paradigm's decisions are no model's calls (policy.Programmed): the budget pays for its
// executions only, and for plan_execute's first decision, where its planner writes the graph.
//
// Every paradigm is a Template (agents with roles, the earlier agents each one receives from,
// and an output rule) played one atomic edit at a time: add each agent, connect its inputs (the
// last with a revise edge, so that it runs again with all of them), set the output, STOP. A
// paradigm picks only legal actions: when the budget cannot run the next agent it stops
// building, takes forced finalisation actions as they come, and where STOP is withheld (the
// interactive families' environment gate) it reruns its output agent.
//
// It must not learn, read or write files, or draw randomness: a paradigm's choice is a
// deterministic function of the state, and the search's samples and episode seeds derive from
// its seed.
package paradigms
