// Package skills holds the skill half of EvoSteer that several stages share (paper §4.3,
// appendix C; METHOD.md §5): the skill record and its id, the library snapshot with its limits
// and per-task-type menus, and the admission ledger (registration, pairs, sign-test looks with
// two-level alpha spending, status changes) with its replay.
//
// # Record and id
//
// A Record has a name, a description, a trigger, and plan, pitfall and constraint lists. Its
// Body is the canonical JSON {constraint, description, name, pitfall, plan, trigger}; the
// content hash is the sha256 of the body and the id is "evosteer-" + its first 20 hex digits.
// The executor sees Record.Render (METHOD.md §2.5) only when the skill is bound; the policy
// sees a menu entry's id, name, trigger and status.
//
// # Statuses and limits
//
// candidate (basis candidate-proposal) → validated (paired-sign-test, or fixed-count under the
// sequential-validation ablation) or retired (paired-sign-test; absorbing). Per family at most
// admission.max_candidates_per_family candidates and max_validated_per_family validated skills;
// at most max_library skills and max_library_per_family per family, retired ones included
// (they keep their slots).
//
// # The step contract (files of step k)
//
//	rollout k   freezes LoadLibrary(run, k) = step-(k−1)/author/skills.arrow (empty at step 1
//	            and under the skill-evolution ablation) into menus: Library.Menu(task type) is
//	            every non-retired skill of the task type, sorted by id, with status and
//	            rendered text, and Menu.ID = MenuID (hash of the "id status" lines) is
//	            episodes.menu_id. Skill slots belong to task types (paper Table 5): a skill's
//	            family is the IID family it was authored for, and every task is shown the menu
//	            of its task type, so an OOD benchmark (at evaluation) sees the skills of the
//	            IID task type it maps to.
//	            For each task of family f it plays one pair per skill of Library.Tested(f, k)
//	            (the candidate with the fewest recorded pairs, ties by id; every
//	            retirement_interval-th step also the validated skill with the fewest). A pair
//	            testing skill s carries comparison_id = Library.Comparison(s, k) and pair_id =
//	            PairID(k, task, comparison_id); its treatment arm sees Library.Menu(f) (menu_id
//	            of the full menu), its control arm Library.Background(f, s), the menu without s,
//	            for the whole episode.
//	aggregate k scores the pairs (pairs.arrow: win/loss/tie, eligibility).
//	validate k  continues the ledger from step-(k−1)/author/ledger_state.arrow and the
//	            skills.arrow beside it (LoadLedger), and runs Ledger.Validate on the step's pairs:
//	            a comparison id it has not seen is registered with the next global index j
//	            (superseding the skill's open comparison: no evidence carried over, no alpha
//	            refunded); eligible pairs are recorded; every validation_interval-th step each
//	            open comparison with new discordant pairs gets one look. It writes its segment
//	            (ledger.arrow), the library (skills.arrow) and the state (ledger_state.arrow).
//	author k    continues from step-k/validate's state and library, proposes candidates
//	            (Ledger.Propose) and writes its segment, the library the rollout of step k+1
//	            freezes and the state validate k+1 continues from.
//
// Comparison identity: a comparison is a skill under one context, the background menu of its
// family (the reference policy, executor and environment are fixed within a run; a changed
// value-head snapshot keeps the comparison, as in the reference). Library.Comparison returns
// the skill's open comparison while its recorded background menu is the current one, and
// otherwise the new id "{skill_id}@{k}"; Ledger.Validate rejects pairs that break this.
//
// # Looks (METHOD.md §5.6)
//
// Look l of comparison j spends level α/(j(j+1)·l(l+1)) and tests each direction at half of
// it with the exact tails p± of internal/stats. p− ≤ level/2 retires (checked first, closes
// every open comparison of the skill); else p+ ≤ level/2 retains a validated skill (closes the
// comparison) or promotes a candidate when its family has fewer than max_validated_per_family
// validated skills (defer_capacity otherwise, the comparison stays open); else defer. Ties
// never cause a look.
//
// Under admission.spending attainable (beyond the paper; the default, released, is the paper's
// rule) a look that cannot reject at the level of the next index l, 2^−D > level/2, spends
// nothing, writes no event and keeps l for the first later look that can.
//
// Under admission.undecided_when_exhausted (off by default: the release keeps such a
// comparison open for ever) a comparison that can receive no further eligible pair — tasks may
// not repeat and its eligible pairs have used every training task of its family
// (Ledger.SetFamilyTasks, counted by task type) — ends on the next look step, after the looks,
// with an undecided event and a close: a candidate is retired with basis undecided (off the
// menus, its candidate slot free), a validated skill stays validated.
//
// # The log
//
// The ledger is append-only: each stage writes only the events it added (its segment), seq
// runs on across segments, and Replay rebuilds the state by re-executing every segment and
// requiring each event to come out identical. A stage does not replay: beside its segment and
// library it writes the ledger's running state (Ledger.State, ledger_state.arrow: events so far,
// alpha spent, comparisons registered, the open comparisons with their counts and tasks, the
// treatment successes per skill), and LoadLedger continues from the previous stage's state and
// library, which must agree (an open comparison is the one its skill records, and the other way
// round), so a stage reads two files whatever the step. CheckStates (`evosteer validate
// --check`) replays every segment and compares each stored state and library with the
// replay's, field for field.
//
// This package must not roll anything out, call an author, or read files other than ledger
// segments, ledger states, library snapshots and, under admission.undecided_when_exhausted, the
// training tasks (their count per family).
package skills
