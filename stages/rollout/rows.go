package rollout

// The rows this stage writes, one struct per table (schema.Build turns them into batches).

type episodeRow struct {
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

type decisionRow struct {
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

type executionRow struct {
	EpisodeID     string   `arrow:"episode_id"`
	T             int32    `arrow:"t"`
	ExecIndex     int32    `arrow:"exec_index"`
	NodeID        string   `arrow:"node_id"`
	Role          string   `arrow:"role"`
	Skills        []string `arrow:"skills"`
	Prompt        string   `arrow:"prompt"`
	Output        string   `arrow:"output"`
	Answer        *string  `arrow:"answer"`
	Status        string   `arrow:"status"`
	FailureKind   *string  `arrow:"failure_kind"`
	AnswerPresent bool     `arrow:"answer_present"`
	TokensIn      int64    `arrow:"tokens_in"`
	TokensOut     int64    `arrow:"tokens_out"`
	ModelCalls    int64    `arrow:"model_calls"`
	ToolCalls     int64    `arrow:"tool_calls"`
	WallMS        int64    `arrow:"wall_ms"`
	ToolStatuses  []string `arrow:"tool_statuses"`
}

type simTruthRow struct {
	Kind          string   `arrow:"kind"`
	ID            string   `arrow:"id"`
	Family        *string  `arrow:"family"`
	TaskType      *string  `arrow:"task_type"`
	Difficulty    *float64 `arrow:"difficulty"`
	Answer        *string  `arrow:"answer"`
	TrapRate      *float64 `arrow:"trap_rate"`
	FailRate      *float64 `arrow:"fail_rate"`
	SearchHitRate *float64 `arrow:"search_hit_rate"`
	Requirement   *int32   `arrow:"requirement"`
	Effect        *float64 `arrow:"effect"`
	EffectClass   *string  `arrow:"effect_class"`
}

// ptr returns a pointer to v, or nil for the zero value: empty strings are stored as nulls.
func ptr[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}
