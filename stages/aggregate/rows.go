package aggregate

// Row structs of the tables this stage reads and writes, for schema.Build and schema.Rows (the
// check and the tests; the stage itself moves rows through DuckDB only).

// EpisodeRow is a row of the episodes table.
type EpisodeRow struct {
	EpisodeID            string  `arrow:"episode_id"`
	TaskID               string  `arrow:"task_id"`
	Family               string  `arrow:"family"`
	TaskType             string  `arrow:"task_type"`
	Split                string  `arrow:"split"`
	Source               string  `arrow:"source"`
	PairID               *string `arrow:"pair_id"`
	ComparisonID         *string `arrow:"comparison_id"`
	CandidateSkillID     *string `arrow:"candidate_skill_id"`
	Seed                 uint64  `arrow:"seed"`
	T                    int32   `arrow:"T"`
	Reward               float64 `arrow:"reward"`
	Stopped              bool    `arrow:"stopped"`
	Healthy              bool    `arrow:"healthy"`
	UnhealthyReason      *string `arrow:"unhealthy_reason"`
	OutputNode           *string `arrow:"output_node"`
	OutputText           string  `arrow:"output_text"`
	TokensIn             int64   `arrow:"tokens_in"`
	TokensOut            int64   `arrow:"tokens_out"`
	ModelCalls           int64   `arrow:"model_calls"`
	ToolCalls            int64   `arrow:"tool_calls"`
	WallMS               int64   `arrow:"wall_ms"`
	PolicyVersion        int64   `arrow:"policy_version"`
	MenuID               string  `arrow:"menu_id"`
	ValueVersion         int64   `arrow:"value_version"`
	TerminalStructureKey string  `arrow:"terminal_structure_key"`
	TerminalCoarseKey    string  `arrow:"terminal_coarse_key"`
}

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
	LogpBehavior  float64     `arrow:"logp_behavior"`
	StructureKey  string      `arrow:"structure_key"`
	CoarseKey     string      `arrow:"coarse_key"`
	NNodes        int32       `arrow:"n_nodes"`
	NEdges        int32       `arrow:"n_edges"`
	Observation   string      `arrow:"observation"`
	OutputChanged bool        `arrow:"output_changed"`
}

// AnchorRow is a row of the anchors table.
type AnchorRow struct {
	EpisodeID string  `arrow:"episode_id"`
	TaskID    string  `arrow:"task_id"`
	Family    string  `arrow:"family"`
	MGlobal   float64 `arrow:"m_global"`
	MCategory float64 `arrow:"m_category"`
	MPrior    float64 `arrow:"m_prior"`
	PHat      float64 `arrow:"p_hat"`
	LOO       bool    `arrow:"loo"`
	Anchor    float64 `arrow:"anchor"`
}

// BucketRow is a row of the buckets table.
type BucketRow struct {
	Kind       string  `arrow:"kind"`
	Key        string  `arrow:"key"`
	NNodes     int32   `arrow:"n_nodes"`
	NEdges     int32   `arrow:"n_edges"`
	Stopped    bool    `arrow:"stopped"`
	Visits     int64   `arrow:"visits"`
	ExcessSum  float64 `arrow:"excess_sum"`
	Correction float64 `arrow:"correction"`
}

// CorrectionRow is a row of the corrections table.
type CorrectionRow struct {
	EpisodeID  string  `arrow:"episode_id"`
	T          int32   `arrow:"t"`
	Kind       string  `arrow:"kind"`
	Correction float64 `arrow:"correction"`
}

// ValueRow is a row of the value_data table.
type ValueRow struct {
	EpisodeID string      `arrow:"episode_id"`
	T         int32       `arrow:"t"`
	Features  [30]float32 `arrow:"features"`
	TaskType  string      `arrow:"task_type"`
	Label     float64     `arrow:"label"`
}

// PairRow is a row of the pairs table.
type PairRow struct {
	PairID       string  `arrow:"pair_id"`
	ComparisonID string  `arrow:"comparison_id"`
	SkillID      string  `arrow:"skill_id"`
	TaskID       string  `arrow:"task_id"`
	Family       string  `arrow:"family"`
	BPlus        bool    `arrow:"b_plus"`
	BMinus       bool    `arrow:"b_minus"`
	Outcome      string  `arrow:"outcome"`
	Eligible     bool    `arrow:"eligible"`
	SkipReason   *string `arrow:"skip_reason"`
}
