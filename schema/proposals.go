package schema

// Proposals has one row per author window of a step (written by author): which family the
// window was for, what the author returned and what became of it. A rejected output keeps its
// reason and, for a model author, its raw text.
var Proposals = declare("proposals", 1,
	field("window", i32),           // 0, 1, ... in priority order within the step
	field("family", utf8),          // the window's family
	field("backend", utf8),         // sim | openai
	field("status", utf8),          // candidate_proposed | no_proposal | author_error | duplicate_filtered
	nullable("reason", utf8),       // why the output was rejected or the call failed
	nullable("skill_id", utf8),     // the proposed record's id (also when filtered)
	nullable("content_hash", utf8), // sha256 hex of its canonical JSON
	nullable("name", utf8),         // the proposed record
	nullable("description", utf8),
	nullable("trigger", utf8),
	field("plan", listOf(utf8)), // empty when there is no record
	field("pitfalls", listOf(utf8)),
	field("constraint", listOf(utf8)),
	field("evidence", listOf(utf8)), // episode ids shown to the author, in prompt order
	nullable("raw_output", utf8),    // the model's reply (openai backend)
	field("tokens_in", i64),         // author usage of this window
	field("tokens_out", i64),
	field("seed", u64), // the window's seed
).with(
	oneOf("backend", "sim", "openai"),
	oneOf("status", "candidate_proposed", "no_proposal", "author_error", "duplicate_filtered"),
	atLeast(0, "window", "tokens_in", "tokens_out"),
)

// ProposalRow is a row of the proposals table.
type ProposalRow struct {
	Window      int32    `arrow:"window"`
	Family      string   `arrow:"family"`
	Backend     string   `arrow:"backend"`
	Status      string   `arrow:"status"`
	Reason      *string  `arrow:"reason"`
	SkillID     *string  `arrow:"skill_id"`
	ContentHash *string  `arrow:"content_hash"`
	Name        *string  `arrow:"name"`
	Description *string  `arrow:"description"`
	Trigger     *string  `arrow:"trigger"`
	Plan        []string `arrow:"plan"`
	Pitfalls    []string `arrow:"pitfalls"`
	Constraint  []string `arrow:"constraint"`
	Evidence    []string `arrow:"evidence"`
	RawOutput   *string  `arrow:"raw_output"`
	TokensIn    int64    `arrow:"tokens_in"`
	TokensOut   int64    `arrow:"tokens_out"`
	Seed        uint64   `arrow:"seed"`
}
