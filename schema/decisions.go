package schema

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Decisions has one row per decision t of an episode (written by rollout).
// It stores the exact network inputs so that rescore is a pure function of
// (checkpoint, decisions).
var Decisions = declare("decisions", 2,
	field("episode_id", utf8),
	field("t", i32),                       // decision index, 0-based
	field("action_json", utf8),            // chosen action, canonical JSON
	field("action_kind", utf8),            // e.g. add_node, add_edge, stop
	field("legal_actions", listOf(utf8)),  // canonical JSON, sorted
	field("chosen", i32),                  // index into legal_actions
	field("forced", boolean),              // only one legal action
	field("features", fixedList(30, f32)), // f(s_t), the 30 state features
	field("value", f32),                   // value estimate shown to the policy
	field("value_change", f32),            // change of value shown to the policy
	field("policy_input", listOf(f32)),    // exact state vector given to the network
	field("action_inputs", listOf(f32)),   // per-legal-action descriptors, flattened row-major
	field("action_width", i32),            // width of one descriptor in action_inputs
	field("prior_logits", listOf(f32)),    // reference-prior logit of each legal action (rho = base net + prior)
	field("logp_behavior", f64),           // log-prob of the chosen action under the behaviour policy
	field("structure_key", utf8),          // exact structure of s_t
	field("coarse_key", utf8),             // coarse structure of s_t
	field("n_nodes", i32),                 // graph size at s_t
	field("n_edges", i32),
	field("observation", utf8),       // feedback text
	field("output_changed", boolean), // the graded output changed after this decision
	nullable("output_score", f64),    // grader's score of the output node's text just after this decision (null: no output node)
).with(
	atLeast(0, "t", "action_width", "n_nodes", "n_edges"),
	rowRule("chosen", func(rec arrow.RecordBatch) func(r int) string {
		legal, chosen := column[*array.List](rec, "legal_actions"), column[*array.Int32](rec, "chosen")
		return func(r int) string {
			if n := listLen(legal, r); chosen.Value(r) < 0 || int64(chosen.Value(r)) >= n {
				return fmt.Sprintf("%d is not an index of the row's %d legal_actions", chosen.Value(r), n)
			}
			return ""
		}
	}),
	rowRule("prior_logits", func(rec arrow.RecordBatch) func(r int) string {
		legal, prior := column[*array.List](rec, "legal_actions"), column[*array.List](rec, "prior_logits")
		return func(r int) string {
			if n, m := listLen(legal, r), listLen(prior, r); n != m {
				return fmt.Sprintf("%d logits for %d legal_actions", m, n)
			}
			return ""
		}
	}),
	rowRule("action_inputs", func(rec arrow.RecordBatch) func(r int) string {
		legal, inputs := column[*array.List](rec, "legal_actions"), column[*array.List](rec, "action_inputs")
		width := column[*array.Int32](rec, "action_width")
		return func(r int) string {
			if n, m, w := listLen(legal, r), listLen(inputs, r), int64(width.Value(r)); m != n*w {
				return fmt.Sprintf("%d values for %d legal_actions of action_width %d", m, n, w)
			}
			return ""
		}
	}),
	oneOf("action_kind", "ADD_AGENT", "ADD_EDGE", "BIND_SKILL", "SET_OUTPUT", "RERUN_AGENT", "DROP_AGENT", "STOP"),
	within(0, 1, "output_score"),
)

// DecisionRow is a row of the decisions table.
type DecisionRow struct {
	EpisodeID     string      `arrow:"episode_id"`
	T             int32       `arrow:"t"`
	ActionJSON    string      `arrow:"action_json"`
	ActionKind    string      `arrow:"action_kind"`
	LegalActions  []string    `arrow:"legal_actions"`
	Chosen        int32       `arrow:"chosen"`
	Forced        bool        `arrow:"forced"`
	Features      [30]float32 `arrow:"features"`
	Value         float32     `arrow:"value"`
	ValueChange   float32     `arrow:"value_change"`
	PolicyInput   []float32   `arrow:"policy_input"`
	ActionInputs  []float32   `arrow:"action_inputs"`
	ActionWidth   int32       `arrow:"action_width"`
	PriorLogits   []float32   `arrow:"prior_logits"`
	LogpBehavior  float64     `arrow:"logp_behavior"`
	StructureKey  string      `arrow:"structure_key"`
	CoarseKey     string      `arrow:"coarse_key"`
	NNodes        int32       `arrow:"n_nodes"`
	NEdges        int32       `arrow:"n_edges"`
	Observation   string      `arrow:"observation"`
	OutputChanged bool        `arrow:"output_changed"`
	OutputScore   *float64    `arrow:"output_score"`
}
