// Package comparisons runs the paper's comparison study at a reduced scale and tabulates it:
// Table 2 (the eight ablations of appendix D and the four fixed orchestration paradigms against
// the full method and the untrained architecture), Figure 4a (AnchorTB against the other
// training objectives, with update cost) and a study over AnchorTB's temperature β (the full
// method also trained at anchortb.beta 4 and 6; θ − ρ per β). Every variant is an ordinary run folder — initialised
// with its ablation or objective, trained and evaluated by the same stages as any run — once per
// seed, so each cell of a table is a mean over seeds, and every number can be re-queried with
// `evosteer sql --run A --run B ...`.
//
// Variants of the same seed share the seed's task records and evaluation episode seeds, so
// their differences are paired. The β study pairs θ with the ρ of its own run folder: ρ's
// network is the same in every run of a seed, but its skill menus come from the run's library,
// which depends on the run's training. A study resumes: finished training steps are skipped by the
// stage runner and a finished evaluation is kept.
//
// It is a driver, the top one below cmd/: it runs whole runs through the pipeline and evaluates
// them with stages/evaluate.
//
// It must not change what a stage computes: a variant differs from the full method only through
// its configuration (ablations, objective, anchortb.beta), exactly as `evosteer init --ablate` would make it.
package comparisons
