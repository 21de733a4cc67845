// Package evaluate runs the paper's test protocol (METHOD.md §6.3, paper appendix D) on a trained
// run: the learner of one step (θ, its published value head) and the skill library after that step
// frozen, each task shown the menu of its task type (an OOD benchmark that of the IID task type
// it maps to); no reference, paired or validation rollouts; every task of the test split played once
// per run by each policy; several runs with distinct seeds, each run's episode seeds shared by the
// policies (common random numbers, so policies differ only where their decisions differ).
// Policies: evosteer (π_θ), reference (the untrained architecture: the learner of step 0, π_ρ),
// and any scripted policy given by name (the fixed paradigms).
//
// It writes eval/results.arrow (one row per policy × benchmark × run: the mean score and tokens
// per task) and eval/table.md (the Table-1-shaped summary), atomically.
//
// It must not train anything or write outside the run's eval folder.
package evaluate
