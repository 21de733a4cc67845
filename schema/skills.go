package schema

// Skills is a library snapshot (written by validate and author): every skill ever admitted to
// the library, retired ones included, sorted by skill_id. The author's snapshot of step k is
// the library the rollout of step k+1 freezes into menus.
var Skills = declare("skills", 1,
	field("skill_id", utf8), // "evosteer-" + 20 hex of content_hash
	field("family", utf8),
	field("status", utf8), // candidate | validated | retired
	field("basis", utf8),  // candidate-proposal | paired-sign-test | fixed-count | undecided
	field("name", utf8),
	field("description", utf8),
	field("trigger", utf8),
	field("plan", listOf(utf8)),
	field("pitfalls", listOf(utf8)),
	field("constraint", listOf(utf8)),
	field("content_hash", utf8),          // sha256 hex of the canonical content
	field("created_step", i64),           // step whose author proposed it
	field("pairs", i64),                  // eligible pairs recorded over all its comparisons
	nullable("comparison_id", utf8),      // its open comparison, if any
	nullable("comparison_menu_id", utf8), // that comparison's background menu (its context)
).with(
	oneOf("status", "candidate", "validated", "retired"),
	oneOf("basis", "candidate-proposal", "paired-sign-test", "fixed-count", "undecided"),
	atLeast(0, "created_step", "pairs"),
)

// SkillRow is a row of the skills table.
type SkillRow struct {
	SkillID          string   `arrow:"skill_id"`
	Family           string   `arrow:"family"`
	Status           string   `arrow:"status"`
	Basis            string   `arrow:"basis"`
	Name             string   `arrow:"name"`
	Description      string   `arrow:"description"`
	Trigger          string   `arrow:"trigger"`
	Plan             []string `arrow:"plan"`
	Pitfalls         []string `arrow:"pitfalls"`
	Constraint       []string `arrow:"constraint"`
	ContentHash      string   `arrow:"content_hash"`
	CreatedStep      int64    `arrow:"created_step"`
	Pairs            int64    `arrow:"pairs"`
	ComparisonID     *string  `arrow:"comparison_id"`
	ComparisonMenuID *string  `arrow:"comparison_menu_id"`
}
