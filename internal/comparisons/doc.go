// Package comparisons runs the paper's comparison study at a reduced scale and tabulates it:
// Table 2 (the eight ablations of appendix D and the four fixed orchestration paradigms against
// the full method and the untrained architecture) and Figure 4a (AnchorTB against the other
// training objectives, with update cost). Every variant is an ordinary run folder — initialised
// with its ablation or objective, trained and evaluated by the same stages as any run — once per
// seed, so each cell of a table is a mean over seeds, and every number can be re-queried with
// `evosteer sql --run A --run B ...`.
//
// Variants of the same seed share the seed's task records and evaluation episode seeds, so
// their differences are paired. A study resumes: finished training steps are skipped by the
// stage runner and a finished evaluation is kept.
//
// It must not change what a stage computes: a variant differs from the full method only through
// its configuration (ablations, objective), exactly as `evosteer init --ablate` would make it.
package comparisons
