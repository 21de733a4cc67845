// Package validate is the stage that judges candidate skills (paper §4.3 and appendix C,
// METHOD.md §5.6). For step k it rebuilds the admission ledger by replaying every earlier
// segment (internal/skills.LoadLedger, which also checks the rebuilt library against
// step-(k−1)/author/skills.arrow), records the step's eligible pairs from
// step-k/aggregate/pairs.arrow (registering new comparisons), runs the sequential sign-test
// looks of a validation round (or fixed-count admission under the sequential-validation
// ablation) and writes into step-k/validate/:
//
//   - ledger.arrow  the events this step added (the ledger's segment of step k);
//   - skills.arrow  the library after them.
//
// Under the skill-evolution ablation both files are written empty and nothing is read.
//
// It must not roll anything out, propose skills, or write outside its own stage folder.
package validate
