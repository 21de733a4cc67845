// Package validate is the stage that judges candidate skills (paper §4.3 and appendix C,
// METHOD.md §5.6). For step k it continues the admission ledger from the state the author of
// step k−1 left (internal/skills.LoadLedger: step-(k−1)/author/ledger_state.arrow with the
// skills.arrow beside it, which must agree; two files whatever k), records the step's eligible
// pairs from step-k/aggregate/pairs.arrow (registering new comparisons), runs the sequential
// sign-test looks of a validation round (or fixed-count admission under the
// sequential-validation ablation) and writes into step-k/validate/:
//
//   - ledger.arrow        the events this step added (the ledger's segment of step k);
//   - skills.arrow        the library after them;
//   - ledger_state.arrow  the ledger's state after them, which the author of step k continues.
//
// skills.CheckStates (`evosteer validate --check`) holds the stored states to the replay of
// every segment. Under the skill-evolution ablation the segment and the library are written
// empty, the state is the empty ledger's, and nothing is read.
//
// It must not roll anything out, propose skills, or write outside its own stage folder.
package validate
