// Package episode plays episodes: one task, from the empty team to STOP, one atomic edit per
// decision, on an executor (NewExecutor opens the configured backend: the simulated world or an
// OpenAI-compatible server). Play runs a list of Jobs with the run's orchestration options and
// ablations; each decision records the state with the network's exact inputs, scores the legal
// actions (the learner's network, or a scripted policy such as a fixed paradigm) and samples the
// action with the episode's decision seed. Network episodes advance in lockstep waves, so every
// batch of network work, and every bit of its results, depends on the episodes alone; results
// keep the jobs' order and do not depend on the worker count.
//
// The rollout stage plays a step's episodes with it; evaluation, the probe and the workflow
// search play theirs with it too.
//
// It must not read or write the run folder (callers write what Play returns), learn anything,
// or import a stage.
package episode
