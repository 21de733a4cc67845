// Package episode plays episodes: one task, from the empty team to STOP, one atomic edit per
// decision, on an executor (NewExecutor opens the configured backend: the simulated world or an
// OpenAI-compatible server). Play runs a list of Jobs with the run's orchestration options and
// ablations; each decision records the state with the network's exact inputs, scores the legal
// actions (the learner's network, or a scripted policy such as a fixed paradigm) and samples the
// action with the episode's decision seed. Episodes advance independently: network questions
// are scored in batches of whatever is pending, and since the network scores every row alone,
// no bit of a result depends on timing; an episode waiting on a server holds no CPU slot
// (internal/cpuslot). Results keep the jobs' order and do not depend on the worker count or
// on the order replies arrive in.
//
// The rollout stage plays a step's episodes with it; evaluation, the probe and the workflow
// search play theirs with it too.
//
// It must not read or write the run folder (callers write what Play returns), learn anything,
// or import a stage.
package episode
