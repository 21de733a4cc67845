package schema

// Ledger is the append-only event log of skill admission (written by
// validate). Most columns only apply to some events, hence nullable.
var Ledger = declare("ledger", 1,
	field("seq", i64),    // global event sequence number
	field("step", i64),   // training step of the event
	field("event", utf8), // seed proposal register pair look promote retire retain defer defer_capacity supersede close
	nullable("skill_id", utf8),
	nullable("comparison_j", i64), // comparison index j
	nullable("look_l", i64),       // look index l within the comparison
	nullable("W", i64),            // wins
	nullable("L", i64),            // losses
	nullable("T0", i64),           // ties
	nullable("D", i64),            // discordant pairs W+L
	nullable("p_plus", f64),       // P[Bin(D,½) ≥ W]
	nullable("p_minus", f64),      // P[Bin(D,½) ≥ L]
	nullable("level", f64),        // α/(j(j+1)·l(l+1)) spent by this look
	nullable("alpha_each", f64),   // level/2, one per direction
	field("alpha_spent", f64),     // cumulative alpha spent
)
