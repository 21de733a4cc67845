package stats

// Episode is what the aggregate computations read of one rollout episode (episodes table, with
// its decisions from the decisions table).
type Episode struct {
	ID       string
	Step     int
	TaskID   string
	Family   string
	TaskType string
	Source   string // current | natural_reference | paired_treatment | paired_control
	Healthy  bool
	Reward   float64
	// Paired arms only ("" otherwise).
	PairID, ComparisonID, SkillID string
	// The terminal state's structure keys (canonical JSON arrays, see orchestra.StructureKey),
	// its node and edge counts, and whether it is stopped (false when the budget, not STOP,
	// ended the episode).
	TerminalKey, TerminalCoarseKey string
	TerminalNodes, TerminalEdges   int
	TerminalStopped                bool
	Decisions                      []Decision // in t order
}

// Decision is one decision state s_t of an episode.
type Decision struct {
	T         int
	Key       string // exact structure key of s_t
	CoarseKey string
	Nodes     int
	Edges     int
	Forced    bool
	Features  [30]float32
}

// TaskPrior is a task record's optional success-rate prior (Rate nil: no prior rate).
type TaskPrior struct {
	Rate  *float64
	Count float64
}

// AnchorParams are the shrinkage constants (pipeline.yaml baselines and anchortb.beta).
type AnchorParams struct {
	Beta, KappaGlobal, KappaCategory, KappaTask, PriorCountCap, ColdStart float64
}

// Anchor is one row of the anchors table.
type Anchor struct {
	EpisodeID, TaskID, Family  string
	MGlobal, MCategory, MPrior float64
	PHat                       float64
	LOO                        bool // the episode's own observation was left out at the task level
	Anchor                     float64
}

// BucketParams are the structural-pooling constants (pipeline.yaml buckets and anchortb.beta).
type BucketParams struct {
	Beta            float64
	Minimum         int64
	Pseudocount     float64
	CorrectionBound float64
	SourceMode      string // reference_with_paired | natural_only
	// CorrectionsOff is the flow-corrections ablation: every state's correction is 0, kind
	// none (the buckets are still kept, for inspection).
	CorrectionsOff bool
}

// Bucket is one row of the buckets table: the cumulative state of one exact or coarse bucket.
type Bucket struct {
	Kind           string // exact | coarse
	Key            string // the structure key string (exact or coarse)
	Nodes          int
	Edges          int
	Stopped        bool
	Visits         int64
	ExcessSum      float64
	LogPooledRatio float64 // log A_g before the clip
	Correction     float64
}

// Correction is the lagged structure correction of one decision state.
type Correction struct {
	EpisodeID      string
	T              int
	Kind           string  // exact | coarse | none: which bucket supplied it
	LogPooledRatio float64 // that bucket's log A_g before the clip (0 for none)
	Correction     float64
}

// ValueRow is one row of the value_data table.
type ValueRow struct {
	EpisodeID string
	T         int
	Features  [30]float32
	TaskType  string
	Label     float64
}

// Pair is one row of the pairs table.
type Pair struct {
	PairID, ComparisonID, SkillID, TaskID, Family string
	BPlus, BMinus                                 bool
	Outcome                                       string // win | loss | tie
	Eligible                                      bool
	SkipReason                                    string // "" when eligible
}
