package schema

// EvidencePool is the author's evidence pool after step k (written by author, read by the
// author of step k+1, METHOD.md §5.4): for each family, the at most author.evidence_pool
// natural episodes that the pool keeps after that step, in the pool's rank order, families by
// name. Its rows are episodes rows, so it has the episodes table's columns and domains (and
// moves with its version); it is a table of its own so that `evosteer sql`'s episodes table
// holds each episode once.
var EvidencePool = Episodes.as("evidence_pool", 1)

// AuthorState is the author's running count after step k (written by author, read by the
// author of step k+1): per family, the author windows of steps 1..k that ended without a
// candidate (the second key of the window priority, METHOD.md §5.3). One row per family with
// at least one such window, by family.
var AuthorState = declare("author_state", 1,
	field("family", utf8),
	field("failed_windows", i64), // windows whose status is not candidate_proposed
).with(
	atLeast(1, "failed_windows"),
)

// AuthorStateRow is a row of the author_state table.
type AuthorStateRow struct {
	Family        string `arrow:"family"`
	FailedWindows int64  `arrow:"failed_windows"`
}
