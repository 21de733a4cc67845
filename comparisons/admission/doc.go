// Package admission is the admission study (METHOD.md §5.6, docs/RESULTS.md "Admission
// study"): Monte Carlo runs of validated skill admission with the project's own rules — the
// rollout's task schedule (rollout.Schedule) and pair plan (skills.Library.PlannedPairs),
// pair scoring and eligibility (stats.Pairs), the ledger's sequential sign test and alpha
// spending (skills.Ledger.Validate) and the author's windows (author.WindowFamilies,
// author.WindowOrder) — with synthetic pair outcomes in place of episodes: each pair of a
// skill of an active family is a win with probability (1−t)·p, a loss with (1−t)·(1−p) and
// a tie otherwise (both arms succeeding in half of the ties). It reports power, family-wise
// false promotion with its Clopper–Pearson bound, pairs to a decision and the alpha spent,
// beside a fixed-sample sign test and the fixed-count rule.
//
// It is a driver (floor 6, docs/ARCHITECTURE.md §2.1): it imports the stages whose rules it
// runs and no run folder; it writes nothing but its table.
package admission
