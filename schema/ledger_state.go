package schema

// LedgerState is the admission ledger's running state after a stage (written by validate and
// author beside their ledger segment and library snapshot, read by the next stage's
// skills.LoadLedger): with the snapshot beside it, everything the ledger needs to continue
// without replaying the earlier segments. One table with a row kind, because the state is a
// few ledger-wide counters, the open comparisons and a per-skill count:
//
//   - kind ledger, exactly one row: events (the events so far, so the next seq is events+1),
//     alpha_spent and comparisons (registered so far: the latest j);
//   - kind comparison, one per open comparison, in j order: its skill, id, j, background menu,
//     W, L, T0, looks, last_tested and the tasks of its eligible pairs (sorted), which
//     admission.undecided_when_exhausted counts. A closed comparison never takes another pair
//     (Library.Comparison never gives its id again), so it is not kept: the rows stay at most
//     one per live skill;
//   - kind skill, one per skill with treatment-arm successes (fixed-count admission), by
//     skill_id.
//
// Columns a kind does not use are null (tasks empty).
var LedgerState = declare("ledger_state", 1,
	field("kind", utf8),             // ledger | comparison | skill
	nullable("events", i64),         // ledger: events so far (the seq of the latest)
	nullable("alpha_spent", f64),    // ledger: the sum of the levels of every look so far
	nullable("comparisons", i64),    // ledger: comparisons registered so far (the latest j)
	nullable("skill_id", utf8),      // comparison, skill
	nullable("comparison_id", utf8), // comparison: its stable id (episodes.comparison_id)
	nullable("comparison_j", i64),   // comparison: its global index j
	nullable("menu_id", utf8),       // comparison: its background menu (its context)
	nullable("W", i64),              // comparison: wins so far
	nullable("L", i64),              // losses
	nullable("T0", i64),             // ties
	nullable("looks", i64),          // comparison: looks so far (the l of the latest)
	nullable("last_tested", i64),    // comparison: D = W+L at the latest look (0 before one)
	field("tasks", listOf(utf8)),    // comparison: the tasks of its eligible pairs, sorted
	nullable("successes", i64),      // skill: treatment arms of its eligible pairs that succeeded
).with(
	oneOf("kind", "ledger", "comparison", "skill"),
	atLeast(1, "comparison_j", "successes"),
	atLeast(0, "events", "comparisons", "W", "L", "T0", "looks", "last_tested"),
	within(0, 1, "alpha_spent"),
)

// LedgerStateRow is a row of the ledger_state table.
type LedgerStateRow struct {
	Kind         string   `arrow:"kind"`
	Events       *int64   `arrow:"events"`
	AlphaSpent   *float64 `arrow:"alpha_spent"`
	Comparisons  *int64   `arrow:"comparisons"`
	SkillID      *string  `arrow:"skill_id"`
	ComparisonID *string  `arrow:"comparison_id"`
	J            *int64   `arrow:"comparison_j"`
	MenuID       *string  `arrow:"menu_id"`
	W            *int64   `arrow:"W"`
	L            *int64   `arrow:"L"`
	T0           *int64   `arrow:"T0"`
	Looks        *int64   `arrow:"looks"`
	LastTested   *int64   `arrow:"last_tested"`
	Tasks        []string `arrow:"tasks"`
	Successes    *int64   `arrow:"successes"`
}
