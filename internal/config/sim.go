package config

// Sim holds the parameters of the simulated world; internal/sim/doc.go documents the model and
// pipeline.yaml (the sim: block) gives the defaults with a comment per key.
type Sim struct {
	// Answer space and difficulty.
	DistractorExponent float64 `yaml:"distractor_exponent" json:"distractor_exponent"`
	OODDifficultyShift float64 `yaml:"ood_difficulty_shift" json:"ood_difficulty_shift"`

	// Failures.
	FailBase  float64 `yaml:"fail_base" json:"fail_base"`
	FailSlope float64 `yaml:"fail_slope" json:"fail_slope"`
	// FailureCorrelation is the chance that an execution's failure draw is the task's own
	// uniform, shared by every agent of the one model on that task, instead of the execution's:
	// a model that loops or runs long on a task does so in every agent, so a team escapes a
	// failure less often than independent draws would give. At 0 (the first world) every draw
	// is the execution's own.
	FailureCorrelation float64 `yaml:"failure_correlation" json:"failure_correlation"`
	TruncatedShare     float64 `yaml:"truncated_share" json:"truncated_share"`
	// What a failure costs, as shares of the role's envelope: a timeout charges
	// timeout_wall_share of the envelope's wall time, a truncation truncated_output_share of its
	// output tokens. At 1 (the first world) one failure leaves too little budget for any later agent.
	TimeoutWallShare     float64 `yaml:"timeout_wall_share" json:"timeout_wall_share"`
	TruncatedOutputShare float64 `yaml:"truncated_output_share" json:"truncated_output_share"`

	// Messages, plans, reruns, verifiers.
	InputBonus         float64 `yaml:"input_bonus" json:"input_bonus"`
	PlanBonus          float64 `yaml:"plan_bonus" json:"plan_bonus"`
	RerunPersistence   float64 `yaml:"rerun_persistence" json:"rerun_persistence"`
	RerunBonus         float64 `yaml:"rerun_bonus" json:"rerun_bonus"`
	VerifierRecall     float64 `yaml:"verifier_recall" json:"verifier_recall"`
	VerifierFalseAlarm float64 `yaml:"verifier_false_alarm" json:"verifier_false_alarm"`
	// VerifierFalseAlarmCompetence is how far a verifier's own competence silences its false
	// alarms: it flags a correct answer with probability
	// verifier_false_alarm * (1 - verifier_false_alarm_competence * sigmoid(z)). At 0 (the first
	// world) a verifier doubts right answers as often on easy tasks as on hard ones.
	VerifierFalseAlarmCompetence float64 `yaml:"verifier_false_alarm_competence" json:"verifier_false_alarm_competence"`
	VerifierBonus                float64 `yaml:"verifier_bonus" json:"verifier_bonus"`
	PlannerSkillAnswer           float64 `yaml:"planner_skill_answer" json:"planner_skill_answer"`

	// Tools.
	SearchHitRate     float64 `yaml:"search_hit_rate" json:"search_hit_rate"`
	SearchHitSlope    float64 `yaml:"search_hit_slope" json:"search_hit_slope"`
	SearchMissPenalty float64 `yaml:"search_miss_penalty" json:"search_miss_penalty"`
	SearchMislead     float64 `yaml:"search_mislead" json:"search_mislead"`
	SearchNoise       float64 `yaml:"search_noise" json:"search_noise"`
	PythonTimeoutRate float64 `yaml:"python_timeout_rate" json:"python_timeout_rate"`

	// Skills (the prior the simulated author draws hidden effects from).
	SkillHelpfulProb   float64 `yaml:"skill_helpful_prob" json:"skill_helpful_prob"`
	SkillHarmfulProb   float64 `yaml:"skill_harmful_prob" json:"skill_harmful_prob"`
	SkillHelpfulEffect float64 `yaml:"skill_helpful_effect" json:"skill_helpful_effect"`
	SkillHarmfulEffect float64 `yaml:"skill_harmful_effect" json:"skill_harmful_effect"`
	SkillEffectJitter  float64 `yaml:"skill_effect_jitter" json:"skill_effect_jitter"`

	// Interactive families.
	EnvRequirementBase  int   `yaml:"env_requirement_base" json:"env_requirement_base"`
	EnvRequirementSlope int   `yaml:"env_requirement_slope" json:"env_requirement_slope"`
	EnvStepsPerNode     int   `yaml:"env_steps_per_node" json:"env_steps_per_node"`
	EnvMaxSteps         int   `yaml:"env_max_steps" json:"env_max_steps"`
	EnvStepInputTokens  int64 `yaml:"env_step_input_tokens" json:"env_step_input_tokens"`
	EnvStepOutputTokens int64 `yaml:"env_step_output_tokens" json:"env_step_output_tokens"`
	EnvStepWallMS       int64 `yaml:"env_step_wall_ms" json:"env_step_wall_ms"`

	// Cost.
	TokenDifficultySlope float64 `yaml:"token_difficulty_slope" json:"token_difficulty_slope"`
	PromptMSPerToken     float64 `yaml:"prompt_ms_per_token" json:"prompt_ms_per_token"`
	OutputMSPerToken     float64 `yaml:"output_ms_per_token" json:"output_ms_per_token"`
	SearchMS             int64   `yaml:"search_ms" json:"search_ms"`
	PythonMS             int64   `yaml:"python_ms" json:"python_ms"`

	Families SimFamilies `yaml:"families" json:"families"`
	Roles    SimRoles    `yaml:"roles" json:"roles"`
}

// SimFamilies holds one row per benchmark: the six IID task types and the six OOD benchmarks.
// An OOD benchmark keeps its task type's roles, tools and answer form; its row sets how the
// executor fares on it.
type SimFamilies struct {
	HotpotQA SimFamily `yaml:"hotpotqa" json:"hotpotqa"`
	NQOpen   SimFamily `yaml:"nq_open" json:"nq_open"`
	MedQA    SimFamily `yaml:"medqa" json:"medqa"`
	AIME2026 SimFamily `yaml:"aime_2026" json:"aime_2026"`
	MBPPPlus SimFamily `yaml:"mbpp_plus" json:"mbpp_plus"`
	ALFWorld SimFamily `yaml:"alfworld" json:"alfworld"`

	TriviaQA    SimFamily `yaml:"triviaqa" json:"triviaqa"`
	MuSiQue     SimFamily `yaml:"musique" json:"musique"`
	GPQADiamond SimFamily `yaml:"gpqa_diamond" json:"gpqa_diamond"`
	MATHHard    SimFamily `yaml:"math_hard" json:"math_hard"`
	SWEBench    SimFamily `yaml:"swe_bench_verified" json:"swe_bench_verified"`
	WebShop     SimFamily `yaml:"webshop" json:"webshop"`
}

// SimBenchmarks are the benchmarks with a row, IID first, in the paper's column order.
var SimBenchmarks = []string{"hotpotqa", "nq_open", "medqa", "aime_2026", "mbpp_plus", "alfworld",
	"triviaqa", "musique", "gpqa_diamond", "math_hard", "swe_bench_verified", "webshop"}

// Row returns a pointer to the row of a benchmark, nil for an unknown name.
func (f *SimFamilies) Row(benchmark string) *SimFamily {
	switch benchmark {
	case "hotpotqa":
		return &f.HotpotQA
	case "nq_open":
		return &f.NQOpen
	case "medqa":
		return &f.MedQA
	case "aime_2026":
		return &f.AIME2026
	case "mbpp_plus":
		return &f.MBPPPlus
	case "alfworld":
		return &f.ALFWorld
	case "triviaqa":
		return &f.TriviaQA
	case "musique":
		return &f.MuSiQue
	case "gpqa_diamond":
		return &f.GPQADiamond
	case "math_hard":
		return &f.MATHHard
	case "swe_bench_verified":
		return &f.SWEBench
	case "webshop":
		return &f.WebShop
	}
	return nil
}

// ByBenchmark returns the row of a benchmark.
func (f *SimFamilies) ByBenchmark(benchmark string) (SimFamily, bool) {
	if r := f.Row(benchmark); r != nil {
		return *r, true
	}
	return SimFamily{}, false
}

// SimFamily is the world's behaviour on one task type.
type SimFamily struct {
	DifficultyA  float64 `yaml:"difficulty_a" json:"difficulty_a"`
	DifficultyB  float64 `yaml:"difficulty_b" json:"difficulty_b"`
	BaseLogit    float64 `yaml:"base_logit" json:"base_logit"`
	Kappa        float64 `yaml:"kappa" json:"kappa"`
	Distractors  int     `yaml:"distractors" json:"distractors"`
	TrapRate     float64 `yaml:"trap_rate" json:"trap_rate"`
	SearchWeight float64 `yaml:"search_weight" json:"search_weight"`
	PythonWeight float64 `yaml:"python_weight" json:"python_weight"`
	// PlanWeight scales plan_bonus here: how much a plan helps on this benchmark.
	PlanWeight float64 `yaml:"plan_weight" json:"plan_weight"`
	// VerifyQuality is how reliably a verifier's check tells right from wrong here: a wrong
	// answer is flagged with probability 1 − (1 − verifier_recall)^q and a right one with
	// 1 − (1 − false alarm)^(1/q) (1: the world's rates; toward 0 a check that flags right
	// answers and passes wrong ones).
	VerifyQuality float64 `yaml:"verify_quality" json:"verify_quality"`
	// BareLogit is added to the logit of an execution without the architecture's harness (the
	// executor alone: no role instruction, the direct baseline), e.g. answers in a form the
	// grader misses.
	BareLogit float64 `yaml:"bare_logit" json:"bare_logit"`
	// UnsolvableShare is the share of the benchmark's tasks that no agent solves (a gold label
	// out of reach, a grader that misses every form): where the measured systems saturate.
	UnsolvableShare float64 `yaml:"unsolvable_share" json:"unsolvable_share"`
	OutputScale     float64 `yaml:"output_scale" json:"output_scale"`
}

// SimRoles holds one row per role of the reference.
type SimRoles struct {
	Solver     SimRole `yaml:"solver" json:"solver"`
	Verifier   SimRole `yaml:"verifier" json:"verifier"`
	Planner    SimRole `yaml:"planner" json:"planner"`
	Researcher SimRole `yaml:"researcher" json:"researcher"`
	Finalizer  SimRole `yaml:"finalizer" json:"finalizer"`
	ToolUser   SimRole `yaml:"tool_user" json:"tool_user"`
}

// ByID returns the row of a role id.
func (r *SimRoles) ByID(id string) (SimRole, bool) {
	switch id {
	case "solver":
		return r.Solver, true
	case "verifier":
		return r.Verifier, true
	case "planner":
		return r.Planner, true
	case "researcher":
		return r.Researcher, true
	case "finalizer":
		return r.Finalizer, true
	case "tool_user":
		return r.ToolUser, true
	}
	return SimRole{}, false
}

// SimRole is one role's competence and cost in the simulated world.
type SimRole struct {
	Offset       float64 `yaml:"offset" json:"offset"`
	Adopt        float64 `yaml:"adopt" json:"adopt"`
	SearchBonus  float64 `yaml:"search_bonus" json:"search_bonus"`
	PythonBonus  float64 `yaml:"python_bonus" json:"python_bonus"`
	OutputTokens float64 `yaml:"output_tokens" json:"output_tokens"`
	TokenSigma   float64 `yaml:"token_sigma" json:"token_sigma"`
}

// sim checks the simulated world's parameters.
func (k *checker) sim(s Sim) {
	prob := func(key string, v float64) { k.floatIn("sim."+key, v, 0, 1, false, false) }
	finite := func(key string, v float64) { k.floatIn("sim."+key, v, -50, 50, false, false) }

	k.nonNegative("sim.distractor_exponent", s.DistractorExponent)
	k.floatIn("sim.ood_difficulty_shift", s.OODDifficultyShift, 0, 1, false, true)

	prob("fail_base", s.FailBase)
	k.nonNegative("sim.fail_slope", s.FailSlope)
	if s.FailBase+s.FailSlope > 1 {
		k.fail("sim.fail_slope", "fail_base + fail_slope must be <= 1 (p_fail at difficulty 1), got %g", s.FailBase+s.FailSlope)
	}
	prob("truncated_share", s.TruncatedShare)
	prob("timeout_wall_share", s.TimeoutWallShare)
	prob("truncated_output_share", s.TruncatedOutputShare)

	finite("input_bonus", s.InputBonus)
	finite("plan_bonus", s.PlanBonus)
	prob("rerun_persistence", s.RerunPersistence)
	finite("rerun_bonus", s.RerunBonus)
	prob("verifier_recall", s.VerifierRecall)
	prob("verifier_false_alarm", s.VerifierFalseAlarm)
	prob("verifier_false_alarm_competence", s.VerifierFalseAlarmCompetence)
	prob("failure_correlation", s.FailureCorrelation)
	finite("verifier_bonus", s.VerifierBonus)
	prob("planner_skill_answer", s.PlannerSkillAnswer)

	prob("search_hit_rate", s.SearchHitRate)
	k.nonNegative("sim.search_hit_slope", s.SearchHitSlope)
	finite("search_miss_penalty", s.SearchMissPenalty)
	prob("search_mislead", s.SearchMislead)
	prob("search_noise", s.SearchNoise)
	prob("python_timeout_rate", s.PythonTimeoutRate)

	prob("skill_helpful_prob", s.SkillHelpfulProb)
	prob("skill_harmful_prob", s.SkillHarmfulProb)
	if s.SkillHelpfulProb+s.SkillHarmfulProb > 1 {
		k.fail("sim.skill_harmful_prob", "skill_helpful_prob + skill_harmful_prob must be <= 1, got %g", s.SkillHelpfulProb+s.SkillHarmfulProb)
	}
	k.floatIn("sim.skill_helpful_effect", s.SkillHelpfulEffect, 0, 50, false, false)
	k.floatIn("sim.skill_harmful_effect", s.SkillHarmfulEffect, -50, 0, false, false)
	k.nonNegative("sim.skill_effect_jitter", s.SkillEffectJitter)

	k.intMin("sim.env_requirement_base", int64(s.EnvRequirementBase), 1)
	k.intMin("sim.env_requirement_slope", int64(s.EnvRequirementSlope), 0)
	k.intIn("sim.env_steps_per_node", int64(s.EnvStepsPerNode), 1, 100_000, "environment steps one execution may simulate")
	k.intIn("sim.env_max_steps", int64(s.EnvMaxSteps), 1, 100_000, "environment steps one episode may simulate; the default is 50")
	k.intMin("sim.env_step_input_tokens", s.EnvStepInputTokens, 0)
	k.intMin("sim.env_step_output_tokens", s.EnvStepOutputTokens, 0)
	k.intMin("sim.env_step_wall_ms", s.EnvStepWallMS, 0)

	k.nonNegative("sim.token_difficulty_slope", s.TokenDifficultySlope)
	k.nonNegative("sim.prompt_ms_per_token", s.PromptMSPerToken)
	k.nonNegative("sim.output_ms_per_token", s.OutputMSPerToken)
	k.intMin("sim.search_ms", s.SearchMS, 0)
	k.intMin("sim.python_ms", s.PythonMS, 0)

	// The most distractors each benchmark's answer space holds (an OOD benchmark keeps its task
	// type's answer form).
	maxDistractors := map[string]int64{"hotpotqa": 40, "nq_open": 40, "medqa": 3, "aime_2026": 100, "mbpp_plus": 12, "alfworld": 40,
		"triviaqa": 40, "musique": 40, "gpqa_diamond": 3, "math_hard": 100, "swe_bench_verified": 12, "webshop": 40}
	for _, name := range SimBenchmarks {
		f := *s.Families.Row(name)
		key := "families." + name + "."
		k.positive("sim."+key+"difficulty_a", f.DifficultyA)
		k.positive("sim."+key+"difficulty_b", f.DifficultyB)
		finite(key+"base_logit", f.BaseLogit)
		k.nonNegative("sim."+key+"kappa", f.Kappa)
		k.intMin("sim."+key+"distractors", int64(f.Distractors), 1)
		if int64(f.Distractors) > maxDistractors[name] {
			k.fail("sim."+key+"distractors", "must be <= %d for this family, got %d", maxDistractors[name], f.Distractors)
		}
		prob(key+"trap_rate", f.TrapRate)
		weight := func(name string, v float64) { k.floatIn("sim."+key+name, v, 0, 10, false, false) }
		weight("search_weight", f.SearchWeight)
		weight("python_weight", f.PythonWeight)
		k.floatIn("sim."+key+"plan_weight", f.PlanWeight, -10, 10, false, false) // a plan may distract
		weight("verify_quality", f.VerifyQuality)
		finite(key+"bare_logit", f.BareLogit)
		prob(key+"unsolvable_share", f.UnsolvableShare)
		k.positive("sim."+key+"output_scale", f.OutputScale)
	}

	roles := []struct {
		name string
		r    SimRole
	}{
		{"solver", s.Roles.Solver}, {"verifier", s.Roles.Verifier}, {"planner", s.Roles.Planner},
		{"researcher", s.Roles.Researcher}, {"finalizer", s.Roles.Finalizer}, {"tool_user", s.Roles.ToolUser},
	}
	for _, rl := range roles {
		key := "roles." + rl.name + "."
		finite(key+"offset", rl.r.Offset)
		prob(key+"adopt", rl.r.Adopt)
		finite(key+"search_bonus", rl.r.SearchBonus)
		finite(key+"python_bonus", rl.r.PythonBonus)
		k.positive("sim."+key+"output_tokens", rl.r.OutputTokens)
		if rl.r.OutputTokens > 1e6 {
			k.fail("sim."+key+"output_tokens", "must be <= 1e6, got %g", rl.r.OutputTokens)
		}
		k.floatIn("sim."+key+"token_sigma", rl.r.TokenSigma, 0, 3, false, false)
	}
}
