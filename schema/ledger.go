package schema

// Ledger is the event log of skill admission. Each step appends one segment: the validate
// stage's events (registrations, pairs, looks and their outcomes) in
// step-k/validate/ledger.arrow and the author's proposals in step-k/author/ledger.arrow; the
// whole log is the segments in (step, validate before author) order, and seq counts across
// all of them. A file carries no step column: its step is the folder's (the step column of
// `evosteer sql`). Most columns apply to some events only, hence nullable.
var Ledger = declare("ledger", 1,
	field("seq", i64),    // global event sequence number, 1, 2, ... over the whole log
	field("event", utf8), // proposal register pair look promote retire retain defer defer_capacity undecided supersede close
	nullable("skill_id", utf8),
	nullable("family", utf8),        // proposal, register, pair
	nullable("comparison_id", utf8), // the comparison's stable id (episodes.comparison_id)
	nullable("comparison_j", i64),   // comparison index j, global over the run
	nullable("menu_id", utf8),       // register: the comparison's background menu (its context)
	nullable("pair_id", utf8),       // pair
	nullable("outcome", utf8),       // pair: win | loss | tie
	nullable("b_plus", boolean),     // pair: the treatment arm (skill bound) succeeded
	nullable("b_minus", boolean),    // pair: the control arm succeeded
	nullable("look_l", i64),         // look index l within the comparison
	nullable("W", i64),              // wins of the comparison so far
	nullable("L", i64),              // losses
	nullable("T0", i64),             // ties
	nullable("D", i64),              // discordant pairs W+L
	nullable("p_plus", f64),         // P[Bin(D,½) ≥ W]
	nullable("p_minus", f64),        // P[Bin(D,½) ≥ L]
	nullable("level", f64),          // α/(j(j+1)·l(l+1)) spent by this look
	nullable("alpha_each", f64),     // level/2, one per direction
	field("alpha_spent", f64),       // cumulative alpha spent, after this event
	nullable("body", utf8),          // proposal: the skill record's canonical JSON
).with(
	oneOf("event", "proposal", "register", "pair", "look", "promote", "retire", "retain", "defer",
		"defer_capacity", "undecided", "supersede", "close"),
	oneOf("outcome", "win", "loss", "tie"),
	atLeast(1, "seq", "comparison_j", "look_l"),
	atLeast(0, "W", "L", "T0", "D"),
	within(0, 1, "p_plus", "p_minus", "level", "alpha_each", "alpha_spent"),
)

// LedgerRow is a row of the ledger table.
type LedgerRow struct {
	Seq          int64    `arrow:"seq"`
	Event        string   `arrow:"event"`
	SkillID      *string  `arrow:"skill_id"`
	Family       *string  `arrow:"family"`
	ComparisonID *string  `arrow:"comparison_id"`
	J            *int64   `arrow:"comparison_j"`
	MenuID       *string  `arrow:"menu_id"`
	PairID       *string  `arrow:"pair_id"`
	Outcome      *string  `arrow:"outcome"`
	BPlus        *bool    `arrow:"b_plus"`
	BMinus       *bool    `arrow:"b_minus"`
	Look         *int64   `arrow:"look_l"`
	W            *int64   `arrow:"W"`
	L            *int64   `arrow:"L"`
	T0           *int64   `arrow:"T0"`
	D            *int64   `arrow:"D"`
	PPlus        *float64 `arrow:"p_plus"`
	PMinus       *float64 `arrow:"p_minus"`
	Level        *float64 `arrow:"level"`
	AlphaEach    *float64 `arrow:"alpha_each"`
	AlphaSpent   float64  `arrow:"alpha_spent"`
	Body         *string  `arrow:"body"`
}
