package config

import (
	"fmt"
	"strings"
)

// Config is the resolved pipeline configuration. Field comments are in pipeline.yaml, which
// is the single place the defaults live; this file only gives them types and ranges.
type Config struct {
	Seed         uint64            `yaml:"seed" json:"seed"`
	Steps        int               `yaml:"steps" json:"steps"`
	Families     []string          `yaml:"families" json:"families"`
	OODFamilies  map[string]string `yaml:"ood_families" json:"ood_families"`
	Budget       Budget            `yaml:"budget" json:"budget"`
	Batch        Batch             `yaml:"batch" json:"batch"`
	AnchorTB     AnchorTB          `yaml:"anchortb" json:"anchortb"`
	Baselines    Baselines         `yaml:"baselines" json:"baselines"`
	Buckets      Buckets           `yaml:"buckets" json:"buckets"`
	Admission    Admission         `yaml:"admission" json:"admission"`
	Author       Author            `yaml:"author" json:"author"`
	Policy       Policy            `yaml:"policy" json:"policy"`
	Prior        ReferencePrior    `yaml:"reference_prior" json:"reference_prior"`
	ValueHead    ValueHead         `yaml:"value_head" json:"value_head"`
	ResidualHead ResidualHead      `yaml:"residual_head" json:"residual_head"`
	Optimizer    Optimizer         `yaml:"optimizer" json:"optimizer"`
	Executor     Executor          `yaml:"executor" json:"executor"`
	Tools        Tools             `yaml:"tools" json:"tools"`
	Compute      Compute           `yaml:"compute" json:"compute"`
	Tasks        Tasks             `yaml:"tasks" json:"tasks"`
	Rollout      Rollout           `yaml:"rollout" json:"rollout"`
	Objective    string            `yaml:"objective" json:"objective"`
	Comparison   Comparison        `yaml:"comparison" json:"comparison"`
	Ablations    []string          `yaml:"ablations" json:"ablations"`
	Sim          Sim               `yaml:"sim" json:"sim"`
	// Costs prices tokens for the report (costs.go); omitted at its default (no prices).
	Costs Costs `yaml:"costs,omitempty" json:"costs,omitzero"`
	// Served makes ρ a served language model in place of reference_prior
	// (docs/SERVED-REFERENCE.md); absent by default, and omitted when absent so that
	// configurations without it keep their hash.
	Served *ServedReference `yaml:"served_reference,omitempty" json:"served_reference,omitempty"`
}

// Budget is the shared per-episode resource budget.
type Budget struct {
	Tokens           int64 `yaml:"tokens" json:"tokens"`
	ToolCalls        int64 `yaml:"tool_calls" json:"tool_calls"`
	WallSeconds      int64 `yaml:"wall_seconds" json:"wall_seconds"`
	ControllerWallMS int64 `yaml:"controller_wall_ms" json:"controller_wall_ms"`
}

// Batch sizes one training step.
type Batch struct {
	Tasks             int `yaml:"tasks" json:"tasks"`
	CurrentRollouts   int `yaml:"current_rollouts" json:"current_rollouts"`
	ReferenceRollouts int `yaml:"reference_rollouts" json:"reference_rollouts"`
}

// AnchorTB holds the loss constants.
type AnchorTB struct {
	Beta           float64 `yaml:"beta" json:"beta"`
	HardAnchorRoot bool    `yaml:"hard_anchor_root" json:"hard_anchor_root"`
}

// Baselines holds the hierarchical-shrinkage constants of the task anchors.
type Baselines struct {
	KappaGlobal   float64 `yaml:"kappa_global" json:"kappa_global"`
	KappaCategory float64 `yaml:"kappa_category" json:"kappa_category"`
	KappaTask     float64 `yaml:"kappa_task" json:"kappa_task"`
	PriorCountCap float64 `yaml:"prior_count_cap" json:"prior_count_cap"`
	ColdStart     float64 `yaml:"cold_start" json:"cold_start"`
}

// Buckets holds the structural-pooling constants.
type Buckets struct {
	Minimum         int64   `yaml:"minimum" json:"minimum"`
	Pseudocount     float64 `yaml:"pseudocount" json:"pseudocount"`
	CorrectionBound float64 `yaml:"correction_bound" json:"correction_bound"`
	SourceMode      string  `yaml:"source_mode" json:"source_mode"`
}

// Admission holds the validated-skill-admission limits and test constants.
type Admission struct {
	Alpha                  float64 `yaml:"alpha" json:"alpha"`
	MaxValidatedPerFamily  int     `yaml:"max_validated_per_family" json:"max_validated_per_family"`
	MaxCandidatesPerFamily int     `yaml:"max_candidates_per_family" json:"max_candidates_per_family"`
	MaxLibrary             int     `yaml:"max_library" json:"max_library"`
	MaxLibraryPerFamily    int     `yaml:"max_library_per_family" json:"max_library_per_family"`
	SuccessThreshold       float64 `yaml:"success_threshold" json:"success_threshold"`
	ValidationInterval     int     `yaml:"validation_interval" json:"validation_interval"`
	RetirementInterval     int     `yaml:"retirement_interval" json:"retirement_interval"`
	AllowRepeatedTasks     bool    `yaml:"allow_repeated_tasks" json:"allow_repeated_tasks"`
	FixedCountK            int     `yaml:"fixed_count_k" json:"fixed_count_k"`
	// UndecidedWhenExhausted ends a comparison that can receive no further eligible pair
	// (every training task of its family already used for a pair of it, tasks not repeating)
	// with an "undecided" ledger event, which frees a candidate's slot (METHOD.md §5.6). Off
	// by default, the release's behaviour (the comparison stays open); omitted from the
	// canonical JSON and run.yaml when false, so that configurations without it keep their hash.
	UndecidedWhenExhausted bool `yaml:"undecided_when_exhausted,omitempty" json:"undecided_when_exhausted,omitempty"`
	// Spending is the alpha-spending rule of the sign-test looks (METHOD.md §5.6): released,
	// the paper's and the release's (every look spends its level), or attainable, beyond the
	// paper (a look that cannot reject at its level spends nothing and leaves its budget to
	// the next look that can). Omitted from the canonical JSON and run.yaml at released
	// (Spending.IsZero), so that configurations without it keep their hash.
	Spending Spending `yaml:"spending,omitempty" json:"spending,omitzero"`
}

// Spending names an alpha-spending rule (Admission.Spending).
type Spending string

// The values of admission.spending.
const (
	SpendingReleased   Spending = "released"
	SpendingAttainable Spending = "attainable"
)

// IsZero reports the default rule, released, so that encoding/json (omitzero) and go-yaml
// (omitempty) leave the key out at its default; "" is what a configuration decoded from JSON
// without the key holds (Clone), and it means released too.
func (s Spending) IsZero() bool { return s == "" || s == SpendingReleased }

// Author configures the skill author windows.
type Author struct {
	Backend         string  `yaml:"backend" json:"backend"`
	StartStep       int     `yaml:"start_step" json:"start_step"`
	Interval        int     `yaml:"interval" json:"interval"`
	StartFamilies   int     `yaml:"start_families" json:"start_families"`
	EvidencePool    int     `yaml:"evidence_pool" json:"evidence_pool"`
	MaxTrajectories int     `yaml:"max_trajectories" json:"max_trajectories"`
	Temperature     float64 `yaml:"temperature" json:"temperature"`
	MaxOutputTokens int     `yaml:"max_output_tokens" json:"max_output_tokens"`
	BaseURL         string  `yaml:"base_url" json:"base_url"`
	Model           string  `yaml:"model" json:"model"`
	APIKeyEnv       string  `yaml:"api_key_env" json:"api_key_env"`
	TimeoutSeconds  int     `yaml:"timeout_seconds" json:"timeout_seconds"`
	// The model author's endpoint settings below are omitted when unset (0, null), so that
	// configurations written before them keep their hash; unset takes executor.openai's value
	// (AuthorEndpoint resolves them).
	MaxConcurrency    int     `yaml:"max_concurrency,omitempty" json:"max_concurrency,omitempty"`
	OutageSeconds     float64 `yaml:"outage_seconds,omitempty" json:"outage_seconds,omitempty"`
	BackoffSeconds    float64 `yaml:"backoff_seconds,omitempty" json:"backoff_seconds,omitempty"`
	BackoffMaxSeconds float64 `yaml:"backoff_max_seconds,omitempty" json:"backoff_max_seconds,omitempty"`
	SendSeed          *bool   `yaml:"send_seed,omitempty" json:"send_seed,omitempty"`
	DisableThinking   *bool   `yaml:"disable_thinking,omitempty" json:"disable_thinking,omitempty"`
}

// AuthorEndpoint is how a model author calls its server: the author block's settings, each
// unset one (0, null) taken from executor.openai.
type AuthorEndpoint struct {
	MaxConcurrency                                                   int
	TimeoutSeconds, OutageSeconds, BackoffSeconds, BackoffMaxSeconds float64
	SendSeed, DisableThinking                                        bool
}

// AuthorEndpoint resolves the model author's endpoint settings.
func (c *Config) AuthorEndpoint() AuthorEndpoint {
	a, o := c.Author, c.Executor.OpenAI
	or := func(v, def float64) float64 {
		if v == 0 {
			return def
		}
		return v
	}
	e := AuthorEndpoint{MaxConcurrency: o.MaxConcurrency, TimeoutSeconds: float64(a.TimeoutSeconds),
		OutageSeconds: or(a.OutageSeconds, o.OutageSeconds), BackoffSeconds: or(a.BackoffSeconds, o.BackoffSeconds),
		BackoffMaxSeconds: or(a.BackoffMaxSeconds, o.BackoffMaxSeconds), SendSeed: o.SendSeed, DisableThinking: o.DisableThinking}
	if a.MaxConcurrency != 0 {
		e.MaxConcurrency = a.MaxConcurrency
	}
	if a.SendSeed != nil {
		e.SendSeed = *a.SendSeed
	}
	if a.DisableThinking != nil {
		e.DisableThinking = *a.DisableThinking
	}
	return e
}

// Policy sizes the compact orchestrator network.
type Policy struct {
	Hidden          int     `yaml:"hidden" json:"hidden"`
	EncoderDim      int     `yaml:"encoder_dim" json:"encoder_dim"`
	MaxLegalActions int     `yaml:"max_legal_actions" json:"max_legal_actions"`
	AdapterRank     int     `yaml:"adapter_rank" json:"adapter_rank"`
	AdapterAlpha    float64 `yaml:"adapter_alpha" json:"adapter_alpha"`
	// Temperature is the orchestrator's sampling temperature (paper Table 5: 1.0): network
	// decisions sample from log π / Temperature, renormalised (stages/rollout).
	Temperature float64 `yaml:"temperature" json:"temperature"`
	// Kind is the orchestrator: "" or PolicyCompact (the compact network over the 30 features and
	// the action descriptors) or PolicyCausalLM (a Qwen3 model reading the controller prompt, θ
	// its LoRA adapter, ρ the adapter off; CausalLM configures it). Both train through the same
	// learner; adapter_rank and adapter_alpha are the adapter's r and α for either, encoder_dim
	// the width of h_ρ(s) that b_ψ and the outcome heads read.
	Kind     string    `yaml:"kind,omitempty" json:"kind,omitempty"`
	CausalLM *CausalLM `yaml:"causal_lm,omitempty" json:"causal_lm,omitempty"`
}

// The orchestrator kinds (policy.kind).
const (
	PolicyCompact  = "compact"
	PolicyCausalLM = "causal_lm"
)

// KeepsPrompts reports whether a rollout writes the prompts table: the controller prompt of every
// decision a served reference scored (served_reference), or of every decision the causal-LM
// policy reads (policy.kind causal_lm).
func (c *Config) KeepsPrompts() bool { return c.Served != nil || c.Policy.IsCausalLM() }

// IsCausalLM reports whether the orchestrator is a language model (policy.kind causal_lm).
func (p Policy) IsCausalLM() bool { return p.Kind == PolicyCausalLM }

// CausalLM is the language-model orchestrator (policy.kind causal_lm, docs/LANGUAGE-MODEL.md):
// a local Hugging Face Qwen3 folder, the LoRA adapter's target modules and scaling, the graphs'
// dtype and the decisions one gradient call takes. It has no defaults in pipeline.yaml: an
// overlay that sets policy.causal_lm sets model and target_modules.
type CausalLM struct {
	// Model is the model folder (config.json, safetensors weights, tokenizer.json,
	// tokenizer_config.json); a relative path is read from the working directory.
	Model         string   `yaml:"model" json:"model"`
	TargetModules []string `yaml:"target_modules" json:"target_modules"`             // among q/k/v/o_proj, gate/up/down_proj, or [all-linear]
	RSLoRA        bool     `yaml:"use_rslora,omitempty" json:"use_rslora,omitempty"` // scale α/√r instead of α/r
	DType         string   `yaml:"dtype,omitempty" json:"dtype,omitempty"`           // the graphs' dtype: float32 (default) or float64
	// MicroBatch is the most decisions one gradient call differentiates (their prompts and
	// actions teacher-forced in one batch); the gradient is a sum, so it only bounds memory.
	MicroBatch int `yaml:"micro_batch,omitempty" json:"micro_batch,omitempty"`
}

// Micro is the micro-batch size, 16 when unset.
func (c *CausalLM) Micro() int {
	if c.MicroBatch <= 0 {
		return 16
	}
	return c.MicroBatch
}

// ValueHead sizes and schedules the value head v_hat.
type ValueHead struct {
	Hidden      int     `yaml:"hidden" json:"hidden"`
	FitSteps    int     `yaml:"fit_steps" json:"fit_steps"`
	ReplaySteps int     `yaml:"replay_steps" json:"replay_steps"`
	LossWeight  float64 `yaml:"loss_weight" json:"loss_weight"`
}

// ResidualHead sizes the residual flow head b_psi.
type ResidualHead struct {
	Hidden int `yaml:"hidden" json:"hidden"`
}

// Optimizer holds the AdamW settings of the two parameter groups.
type Optimizer struct {
	AdapterLR    float64 `yaml:"adapter_lr" json:"adapter_lr"`
	AdapterBeta1 float64 `yaml:"adapter_beta1" json:"adapter_beta1"`
	HeadsLR      float64 `yaml:"heads_lr" json:"heads_lr"`
	ResidualLR   float64 `yaml:"residual_lr" json:"residual_lr"`
	HeadsBeta1   float64 `yaml:"heads_beta1" json:"heads_beta1"`
	Beta2        float64 `yaml:"beta2" json:"beta2"`
	Epsilon      float64 `yaml:"epsilon" json:"epsilon"`
	WeightDecay  float64 `yaml:"weight_decay" json:"weight_decay"`
	GradClip     float64 `yaml:"grad_clip" json:"grad_clip"`
}

// Comparison holds the constants of the comparison objectives (tb, ttb, ppo, grpo); anchortb
// reads only log_z_lr, the rate of the free anchors of the measured-flows ablation.
type Comparison struct {
	LogZLR     float64 `yaml:"log_z_lr" json:"log_z_lr"`
	TTBBeta    float64 `yaml:"ttb_beta" json:"ttb_beta"`
	TTBEpsilon float64 `yaml:"ttb_epsilon" json:"ttb_epsilon"`
	Clip       float64 `yaml:"clip" json:"clip"`
	Epochs     int     `yaml:"epochs" json:"epochs"`
	GRPOKL     float64 `yaml:"grpo_kl" json:"grpo_kl"`
}

// Executor selects the backend that runs agents.
type Executor struct {
	Backend     string  `yaml:"backend" json:"backend"`
	Temperature float64 `yaml:"temperature" json:"temperature"`
	OpenAI      OpenAI  `yaml:"openai" json:"openai"`
}

// OpenAI configures the OpenAI-compatible Chat Completions backend.
type OpenAI struct {
	BaseURL           string   `yaml:"base_url" json:"base_url"`
	Replicas          []string `yaml:"replicas" json:"replicas,omitempty"` // more base URLs of the same model, balanced by requests in flight
	Model             string   `yaml:"model" json:"model"`
	APIKeyEnv         string   `yaml:"api_key_env" json:"api_key_env"`
	MaxConcurrency    int      `yaml:"max_concurrency" json:"max_concurrency"`
	TimeoutSeconds    float64  `yaml:"timeout_seconds" json:"timeout_seconds"`
	OutageSeconds     float64  `yaml:"outage_seconds" json:"outage_seconds"`
	BackoffSeconds    float64  `yaml:"backoff_seconds" json:"backoff_seconds"`
	BackoffMaxSeconds float64  `yaml:"backoff_max_seconds" json:"backoff_max_seconds"`
	SendSeed          bool     `yaml:"send_seed" json:"send_seed"`
	DisableThinking   bool     `yaml:"disable_thinking" json:"disable_thinking"`
	ContextWindow     int64    `yaml:"context_window" json:"context_window"`
	// FixedWallClock charges no wall time for calls and tools, so a run's files are the same
	// whatever order replies arrive in; false charges what was measured, as the reference does
	// (a run then depends on the server's latency). Omitted when false, so configurations
	// written before it keep their hash.
	FixedWallClock bool `yaml:"fixed_wall_clock" json:"fixed_wall_clock,omitempty"`
}

// Reference names the run's ρ, for tables and reports: the served model, the language model with
// its adapter off (policy.kind causal_lm), or the calibrated prior.
func (c *Config) Reference() string {
	if sr := c.Served; sr != nil {
		return fmt.Sprintf("the served model %q (%s at %s)", sr.Model, sr.Dialect, sr.BaseURL)
	}
	if c.Policy.IsCausalLM() && c.Policy.CausalLM != nil {
		return fmt.Sprintf("the language model %s with its adapter off (policy.kind causal_lm)", c.Policy.CausalLM.Model)
	}
	return "the calibrated prior (reference_prior)"
}

// ServedReference is ρ scored by a model on an SGLang or vLLM server: each legal action's
// canonical JSON after the controller's system prompt and the decision's controller prompt, in
// the model's chat template, its masked likelihood over the legal set (docs/SERVED-REFERENCE.md).
// It has no defaults in pipeline.yaml: an overlay that sets it sets every key.
type ServedReference struct {
	Dialect        string   `yaml:"dialect" json:"dialect"`                       // sglang | vllm
	BaseURL        string   `yaml:"base_url" json:"base_url"`                     // the server root (no /v1)
	Replicas       []string `yaml:"replicas,omitempty" json:"replicas,omitempty"` // more server roots of the same model
	Model          string   `yaml:"model" json:"model"`                           // the served model's name
	APIKeyEnv      string   `yaml:"api_key_env" json:"api_key_env"`
	Template       string   `yaml:"template" json:"template"` // the chat template: qwen3
	MaxConcurrency int      `yaml:"max_concurrency" json:"max_concurrency"`
	TimeoutSeconds float64  `yaml:"timeout_seconds" json:"timeout_seconds"`
	OutageSeconds  float64  `yaml:"outage_seconds" json:"outage_seconds"`
	CacheDecisions int      `yaml:"cache_decisions" json:"cache_decisions"` // decisions (and action texts) whose scores are kept
	// RescoreSample is the share of a step's scored decisions (the prompts table's rows) rescore
	// re-queries, a fixed subset drawn from the stage seed (0: none); DriftTolerance the largest
	// |Δ log ρ| in nats between the rollout's and rescore's scores of a legal action before
	// rescore fails (servers are not bit-deterministic).
	RescoreSample  float64 `yaml:"rescore_sample" json:"rescore_sample"`
	DriftTolerance float64 `yaml:"drift_tolerance" json:"drift_tolerance"`
}

// Tools configures the agents' tools and the code graders' sandbox.
type Tools struct {
	ResultChars        int        `yaml:"result_chars" json:"result_chars"`
	TurnOutputTokens   int64      `yaml:"turn_output_tokens" json:"turn_output_tokens"`
	FinalOutputReserve int64      `yaml:"final_output_reserve" json:"final_output_reserve"`
	Python             PythonTool `yaml:"python" json:"python"`
	Search             SearchTool `yaml:"search" json:"search"`
}

// PythonTool configures the python sandbox.
type PythonTool struct {
	Interpreter string `yaml:"interpreter" json:"interpreter"`
	CPUSeconds  int    `yaml:"cpu_seconds" json:"cpu_seconds"`
	WallSeconds int    `yaml:"wall_seconds" json:"wall_seconds"`
	MemoryMB    int64  `yaml:"memory_mb" json:"memory_mb"`
	FileMB      int64  `yaml:"file_mb" json:"file_mb"`
	OpenFiles   int    `yaml:"open_files" json:"open_files"`
	Processes   int    `yaml:"processes" json:"processes"`
	Concurrency int    `yaml:"concurrency" json:"concurrency"`
	// MemoryTotalMB bounds the sum of the memory limits of the programs running at once; 0 is
	// half of the machine's memory. Omitted when 0, so that configurations written before the
	// key keep their hash.
	MemoryTotalMB int64 `yaml:"memory_total_mb,omitempty" json:"memory_total_mb,omitempty"`
}

// SearchTool configures the search tool.
type SearchTool struct {
	URL             string  `yaml:"url" json:"url"`
	TopK            int     `yaml:"top_k" json:"top_k"`
	PassageChars    int     `yaml:"passage_chars" json:"passage_chars"`
	TimeoutSeconds  float64 `yaml:"timeout_seconds" json:"timeout_seconds"`
	Retries         int     `yaml:"retries" json:"retries"`
	OutageSeconds   float64 `yaml:"outage_seconds" json:"outage_seconds"`
	BreakerFailures int     `yaml:"breaker_failures" json:"breaker_failures"`
}

// Tasks sizes the task records generated for the simulated world.
type Tasks struct {
	TrainPerFamily int `yaml:"train_per_family" json:"train_per_family"`
	TestPerFamily  int `yaml:"test_per_family" json:"test_per_family"`
	// Pilot, when set, has init train on a pilot pool instead of every training task
	// (METHOD.md §1.4); nil (the released configuration) is omitted from the canonical JSON, so
	// the hash of a configuration without it is unchanged.
	Pilot *Pilot `yaml:"pilot,omitempty" json:"pilot,omitempty"`
}

// Pilot configures the pilot pool: init plays Samples episodes of one solver on every training
// task outside ExcludeFamilies and keeps the tasks with 0 < p̂ < 1.
type Pilot struct {
	Samples         int      `yaml:"samples" json:"samples"`
	ExcludeFamilies []string `yaml:"exclude_families,omitempty" json:"exclude_families,omitempty"`
}

// Rollout configures the rollout stage.
type Rollout struct {
	Workers           int     `yaml:"workers" json:"workers"`
	MaxUnhealthyShare float64 `yaml:"max_unhealthy_share" json:"max_unhealthy_share"`
}

// Compute selects the gomlx backend: auto, simplego (the pure-Go CPU backend; gomlx v0.28 moved it
// to github.com/gomlx/compute/gobackend and registers it as "go", but the configuration keeps the
// name simplego), xla, or xla:PLUGIN (xla:cuda). gpu/backend.New maps the names.
type Compute struct {
	Backend string `yaml:"backend" json:"backend"`
}

// Ablation names of paper appendix D, in the order the paper lists them.
var Ablations = []string{
	"interleaved-execution",
	"execution-features",
	"learnable-repair",
	"value-head",
	"measured-flows",
	"flow-corrections",
	"skill-evolution",
	"sequential-validation",
}

// Objectives the update stage implements; anchortb is the method.
var Objectives = []string{"anchortb", "tb", "ttb", "ppo", "grpo"}

// Ablated reports whether the named ablation is switched on.
func (c *Config) Ablated(name string) bool {
	for _, a := range c.Ablations {
		if a == name {
			return true
		}
	}
	return false
}

// TaskType returns the IID task type of a family (itself for IID families) and whether the
// family is known.
func (c *Config) TaskType(family string) (string, bool) {
	for _, f := range c.Families {
		if f == family {
			return f, true
		}
	}
	t, ok := c.OODFamilies[family]
	return t, ok
}

// Ablate switches on the named ablations (paper appendix D) besides those already configured;
// an unknown name is an error listing the known ones.
func (c *Config) Ablate(names ...string) error {
	for _, n := range names {
		known := false
		for _, a := range Ablations {
			known = known || a == n
		}
		if !known {
			return fmt.Errorf("unknown ablation %q (known: %s)", n, strings.Join(Ablations, ", "))
		}
		if !c.Ablated(n) {
			c.Ablations = append(c.Ablations, n)
		}
	}
	return nil
}
