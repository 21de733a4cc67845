package schema

// Skills is a library snapshot (written by validate and author).
var Skills = declare("skills", 1,
	field("skill_id", utf8), // "evosteer-" + 20 hex of content_hash
	field("family", utf8),
	field("status", utf8), // candidate | validated | retired
	field("basis", utf8),  // what the skill was derived from
	field("name", utf8),
	field("description", utf8),
	field("trigger", utf8),
	field("plan", listOf(utf8)),
	field("pitfalls", listOf(utf8)),
	field("constraint", listOf(utf8)),
	field("content_hash", utf8), // sha256 hex of the canonical content
	field("created_step", i64),
)
