package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// checker collects range violations, each placed at the line and column of its key in the
// user's file, or marked as coming from the defaults when the file does not set it.
type checker struct {
	name string
	file *ast.File
	errs []error
}

func (k *checker) fail(key, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if line, col, ok := position(k.file, key); ok {
		k.errs = append(k.errs, fmt.Errorf("%s:%d:%d: %s: %s", k.name, line, col, key, msg))
		return
	}
	k.errs = append(k.errs, fmt.Errorf("%s: %s (default value): %s", k.name, key, msg))
}

func (k *checker) intMin(key string, v, lo int64) {
	if v < lo {
		k.fail(key, "must be >= %d, got %d", lo, v)
	}
}

// intIn checks lo <= v <= hi. The upper bounds are on the sizes that drive work or memory, so a
// slip of the keyboard (batch.tasks: 100000000000) fails at once instead of running for ever;
// why says what the size costs, against the paper's value.
func (k *checker) intIn(key string, v, lo, hi int64, why string) {
	k.intMin(key, v, lo)
	if v > hi {
		k.fail(key, "must be <= %d (%s), got %d", hi, why, v)
	}
}

// floatIn checks lo <= v <= hi (or lo < v when open is set); NaN always fails.
// maxLR bounds every learning rate: AdamW steps of this size already leave any sensible region,
// and a larger one (1e308) makes weights infinite, which no stage may write.
const maxLR = 10.0

func (k *checker) floatIn(key string, v, lo, hi float64, openLo, openHi bool) {
	bad := math.IsNaN(v) || v < lo || v > hi || (openLo && v == lo) || (openHi && v == hi)
	if !bad {
		return
	}
	l, r := "[", "]"
	if openLo {
		l = "("
	}
	if openHi {
		r = ")"
	}
	k.fail(key, "must be in %s%g, %g%s, got %g", l, lo, hi, r, v)
}

func (k *checker) positive(key string, v float64) {
	if math.IsNaN(v) || v <= 0 || math.IsInf(v, 1) {
		k.fail(key, "must be > 0 and finite, got %g", v)
	}
}

func (k *checker) nonNegative(key string, v float64) {
	if math.IsNaN(v) || v < 0 || math.IsInf(v, 1) {
		k.fail(key, "must be >= 0 and finite, got %g", v)
	}
}

func (k *checker) oneOf(key, v string, allowed ...string) {
	if !slices.Contains(allowed, v) {
		k.fail(key, "must be one of %v, got %q", allowed, v)
	}
}

// MaxSteps bounds steps (the configuration's and train --steps): each step writes a step folder
// and plays a batch of episodes.
const MaxSteps = 100_000

// maxWidth bounds the network's layer widths and ranks.
const (
	maxWidth = 4096
	widthWhy = "a layer's weights grow with the square of its width; the defaults are 32 to 128"
)

// validate checks every range the pipeline relies on; file may be nil (the defaults).
func (c *Config) validate(name string, file *ast.File) error {
	k := &checker{name: name, file: file}

	k.intIn("steps", int64(c.Steps), 1, MaxSteps, "each step plays batch.tasks × rollouts episodes and writes a step folder; the paper trains 240")
	if len(c.Families) == 0 {
		k.fail("families", "must list at least one family")
	}
	seen := map[string]bool{}
	for i, f := range c.Families {
		if f == "" || seen[f] {
			k.fail(fmt.Sprintf("families[%d]", i), "family %q is empty or listed twice", f)
		}
		seen[f] = true
	}
	oods := make([]string, 0, len(c.OODFamilies))
	for o := range c.OODFamilies {
		oods = append(oods, o)
	}
	sort.Strings(oods)
	for _, o := range oods {
		if seen[o] {
			k.fail("ood_families."+o, "%q is also an IID family", o)
		}
		if t := c.OODFamilies[o]; !seen[t] {
			k.fail("ood_families."+o, "maps to %q, which is not in families", t)
		}
	}

	k.intIn("budget.tokens", c.Budget.Tokens, 1, 10_000_000, "tokens one episode may spend; the paper allows 98,304")
	k.intIn("budget.tool_calls", c.Budget.ToolCalls, 0, 10_000, "tool calls one episode may make; the paper allows 50")
	k.intIn("budget.wall_seconds", c.Budget.WallSeconds, 1, 86_400, "one episode's wall time, at most a day; the paper allows 600")
	k.intIn("budget.controller_wall_ms", c.Budget.ControllerWallMS, 0, 3_600_000, "wall time reserved per controller decision, at most an hour")

	k.intIn("batch.tasks", int64(c.Batch.Tasks), 1, 4096, "task records per step, each played by current_rollouts + reference_rollouts episodes; the paper uses 32")
	k.intIn("batch.current_rollouts", int64(c.Batch.CurrentRollouts), 0, 64, "episodes of π_θ per task and step; the paper plays 2")
	k.intIn("batch.reference_rollouts", int64(c.Batch.ReferenceRollouts), 0, 64, "episodes of ρ per task and step; the paper plays 2")
	if c.Batch.CurrentRollouts+c.Batch.ReferenceRollouts == 0 {
		k.fail("batch.current_rollouts", "current_rollouts + reference_rollouts must be >= 1")
	}

	k.nonNegative("anchortb.beta", c.AnchorTB.Beta)

	k.positive("baselines.kappa_global", c.Baselines.KappaGlobal)
	k.positive("baselines.kappa_category", c.Baselines.KappaCategory)
	k.positive("baselines.kappa_task", c.Baselines.KappaTask)
	k.nonNegative("baselines.prior_count_cap", c.Baselines.PriorCountCap)
	k.floatIn("baselines.cold_start", c.Baselines.ColdStart, 0, 1, false, false)

	k.intMin("buckets.minimum", c.Buckets.Minimum, 1)
	k.positive("buckets.pseudocount", c.Buckets.Pseudocount)
	k.nonNegative("buckets.correction_bound", c.Buckets.CorrectionBound)
	k.oneOf("buckets.source_mode", c.Buckets.SourceMode, "reference_with_paired", "natural_only")

	a := c.Admission
	k.floatIn("admission.alpha", a.Alpha, 0, 1, true, true)
	k.intMin("admission.max_validated_per_family", int64(a.MaxValidatedPerFamily), 0)
	k.intMin("admission.max_candidates_per_family", int64(a.MaxCandidatesPerFamily), 0)
	k.intMin("admission.max_library", int64(a.MaxLibrary), 0)
	k.intMin("admission.max_library_per_family", int64(a.MaxLibraryPerFamily), 0)
	k.floatIn("admission.success_threshold", a.SuccessThreshold, 0, 1, false, false)
	k.intMin("admission.validation_interval", int64(a.ValidationInterval), 1)
	k.intMin("admission.retirement_interval", int64(a.RetirementInterval), 1)
	k.intMin("admission.fixed_count_k", int64(a.FixedCountK), 1)
	k.oneOf("admission.spending", string(a.Spending), string(SpendingReleased), string(SpendingAttainable))

	au := c.Author
	k.oneOf("author.backend", au.Backend, "sim", "openai")
	k.intMin("author.start_step", int64(au.StartStep), 1)
	k.intMin("author.interval", int64(au.Interval), 1)
	k.intMin("author.start_families", int64(au.StartFamilies), 0)
	k.intIn("author.evidence_pool", int64(au.EvidencePool), 0, 10_000, "trajectories kept per family in memory for the author")
	k.intIn("author.max_trajectories", int64(au.MaxTrajectories), 1, 1000, "trajectories written into one author prompt")
	k.nonNegative("author.temperature", au.Temperature)
	k.intIn("author.max_output_tokens", int64(au.MaxOutputTokens), 1, 1_000_000, "tokens one author reply may generate")
	k.intMin("author.timeout_seconds", int64(au.TimeoutSeconds), 1)
	k.intIn("author.max_concurrency", int64(au.MaxConcurrency), 0, 4096, "author calls in flight at once (0: executor.openai.max_concurrency); a step opens at most one window per family")
	k.nonNegative("author.outage_seconds", au.OutageSeconds)
	k.nonNegative("author.backoff_seconds", au.BackoffSeconds)
	k.nonNegative("author.backoff_max_seconds", au.BackoffMaxSeconds)
	if e := c.AuthorEndpoint(); e.BackoffMaxSeconds < e.BackoffSeconds {
		k.fail("author.backoff_max_seconds", "must be >= the author's backoff_seconds (%g), got %g", e.BackoffSeconds, e.BackoffMaxSeconds)
	}
	if au.Backend == "openai" && (au.BaseURL == "" || au.Model == "") {
		k.fail("author.backend", "openai needs author.base_url and author.model")
	}

	p := c.Policy
	k.intIn("policy.hidden", int64(p.Hidden), 1, maxWidth, widthWhy)
	k.intIn("policy.encoder_dim", int64(p.EncoderDim), 1, maxWidth, widthWhy)
	k.intIn("policy.max_legal_actions", int64(p.MaxLegalActions), 2, 65_536, "every decision is padded to this many actions, each scored by the network")
	k.intIn("policy.adapter_rank", int64(p.AdapterRank), 1, maxWidth, "the adapter's weights grow with its rank; the paper uses 64")
	k.positive("policy.adapter_alpha", p.AdapterAlpha)
	k.positive("policy.temperature", p.Temperature)
	if p.Kind != "" {
		k.oneOf("policy.kind", p.Kind, PolicyCompact, PolicyCausalLM)
	}
	switch lm := p.CausalLM; {
	case p.IsCausalLM() && lm == nil:
		k.fail("policy.causal_lm", "is missing: policy.kind causal_lm needs policy.causal_lm.model and target_modules")
	case !p.IsCausalLM() && lm != nil:
		k.fail("policy.causal_lm", "is set but policy.kind is %q: set policy.kind: causal_lm to train the language model", p.Kind)
	case lm != nil:
		if lm.Model == "" {
			k.fail("policy.causal_lm.model", "is empty: give the Qwen3 model folder")
		}
		if len(lm.TargetModules) == 0 {
			k.fail("policy.causal_lm.target_modules", "is empty: name the projections the adapter adapts (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, or all-linear)")
		}
		for _, m := range lm.TargetModules {
			k.oneOf("policy.causal_lm.target_modules", m, "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "all-linear")
		}
		if lm.DType != "" {
			k.oneOf("policy.causal_lm.dtype", lm.DType, "float32", "float64")
		}
		k.intIn("policy.causal_lm.micro_batch", int64(lm.MicroBatch), 0, 65_536, "decisions teacher-forced in one gradient call (0: 16)")
		if c.Served != nil {
			k.fail("served_reference", "cannot be set with policy.kind causal_lm: ρ is the language model with its adapter off")
		}
	}

	k.intIn("value_head.hidden", int64(c.ValueHead.Hidden), 1, maxWidth, widthWhy)
	k.intIn("value_head.fit_steps", int64(c.ValueHead.FitSteps), 1, 10_000, "AdamW steps of the value head in every update; the reference takes 50")
	k.intIn("value_head.replay_steps", int64(c.ValueHead.ReplaySteps), 1, MaxSteps, "a replay window longer than the longest run holds nothing more")
	k.nonNegative("value_head.loss_weight", c.ValueHead.LossWeight)
	k.intIn("residual_head.hidden", int64(c.ResidualHead.Hidden), 1, maxWidth, widthWhy)

	o := c.Optimizer
	k.floatIn("optimizer.adapter_lr", o.AdapterLR, 0, maxLR, true, false)
	k.floatIn("optimizer.adapter_beta1", o.AdapterBeta1, 0, 1, false, true)
	k.floatIn("optimizer.heads_lr", o.HeadsLR, 0, maxLR, true, false)
	k.floatIn("optimizer.residual_lr", o.ResidualLR, 0, maxLR, true, false)
	k.floatIn("optimizer.heads_beta1", o.HeadsBeta1, 0, 1, false, true)
	k.floatIn("optimizer.beta2", o.Beta2, 0, 1, false, true)
	k.positive("optimizer.epsilon", o.Epsilon)
	k.nonNegative("optimizer.weight_decay", o.WeightDecay)
	k.positive("optimizer.grad_clip", o.GradClip)

	k.intIn("tasks.train_per_family", int64(c.Tasks.TrainPerFamily), 1, 100_000, "task records generated at init and held in memory; the reference pool holds 1,280")
	k.intIn("tasks.test_per_family", int64(c.Tasks.TestPerFamily), 1, 100_000, "test tasks per benchmark, each played by every evaluation run; the reference uses 128")
	if pl := c.Tasks.Pilot; pl != nil {
		k.intIn("tasks.pilot.samples", int64(pl.Samples), 1, 1024, "episodes per training task played at init; the paper's pilot plays 8")
		for _, f := range pl.ExcludeFamilies {
			if !slices.Contains(c.Families, f) {
				k.fail("tasks.pilot.exclude_families", "%q is not among the families %v", f, c.Families)
			}
		}
		if !slices.ContainsFunc(c.Families, func(f string) bool { return !slices.Contains(pl.ExcludeFamilies, f) }) {
			k.fail("tasks.pilot.exclude_families", "excludes every family: the pool would hold nothing to train on")
		}
	}
	k.intIn("rollout.workers", int64(c.Rollout.Workers), 0, 4096, "episodes run at once, each with its own goroutine and state")
	k.floatIn("rollout.max_unhealthy_share", c.Rollout.MaxUnhealthyShare, 0, 1, false, false)

	k.validateCosts(c.Costs)

	if sr := c.Served; sr != nil {
		k.oneOf("served_reference.dialect", sr.Dialect, "sglang", "vllm")
		if !strings.HasPrefix(sr.BaseURL, "http://") && !strings.HasPrefix(sr.BaseURL, "https://") {
			k.fail("served_reference.base_url", "%q must start with http:// or https:// (the server root, e.g. http://127.0.0.1:30000)", sr.BaseURL)
		}
		if sr.Model == "" {
			k.fail("served_reference.model", "is empty: give the served model's name")
		}
		k.oneOf("served_reference.template", sr.Template, "qwen3")
		k.intIn("served_reference.max_concurrency", int64(sr.MaxConcurrency), 1, 4096, "scoring requests in flight at once")
		k.positive("served_reference.timeout_seconds", sr.TimeoutSeconds)
		k.nonNegative("served_reference.outage_seconds", sr.OutageSeconds)
		k.intIn("served_reference.cache_decisions", int64(sr.CacheDecisions), 1, 1_000_000, "decisions whose scores are held in memory")
		k.floatIn("served_reference.rescore_sample", sr.RescoreSample, 0, 1, false, false)
		k.positive("served_reference.drift_tolerance", sr.DriftTolerance)
		k.replicas("served_reference.replicas", sr.BaseURL, sr.Replicas)
	}
	k.replicas("executor.openai.replicas", c.Executor.OpenAI.BaseURL, c.Executor.OpenAI.Replicas)
	k.oneOf("executor.backend", c.Executor.Backend, "sim", "openai")
	k.nonNegative("executor.temperature", c.Executor.Temperature)
	k.executorTools(c)
	if plugin, ok := strings.CutPrefix(c.Compute.Backend, "xla:"); !ok || plugin == "" {
		k.oneOf("compute.backend", c.Compute.Backend, "auto", "simplego", "xla")
	}
	k.oneOf("objective", c.Objective, Objectives...)
	co := c.Comparison
	k.floatIn("comparison.log_z_lr", co.LogZLR, 0, maxLR, true, false)
	k.positive("comparison.ttb_beta", co.TTBBeta)
	k.positive("comparison.ttb_epsilon", co.TTBEpsilon)
	k.floatIn("comparison.clip", co.Clip, 0, 1, true, true)
	k.intIn("comparison.epochs", int64(co.Epochs), 1, 100, "optimisation passes over each step's episodes; the default is 4")
	k.nonNegative("comparison.grpo_kl", co.GRPOKL)

	k.sim(c.Sim)

	seenAbl := map[string]bool{}
	for i, ab := range c.Ablations {
		key := fmt.Sprintf("ablations[%d]", i)
		k.oneOf(key, ab, Ablations...)
		if seenAbl[ab] {
			k.fail(key, "%q listed twice", ab)
		}
		seenAbl[ab] = true
	}
	return errors.Join(k.errs...)
}

// replicas checks a list of more endpoints of base: each an http(s) URL, none listed twice.
func (k *checker) replicas(key, base string, urls []string) {
	seen := map[string]bool{strings.TrimRight(base, "/"): true}
	for i, u := range urls {
		switch trimmed := strings.TrimRight(u, "/"); {
		case !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://"):
			k.fail(fmt.Sprintf("%s[%d]", key, i), "%q must start with http:// or https://", u)
		case seen[trimmed]:
			k.fail(fmt.Sprintf("%s[%d]", key, i), "%q is listed twice (with the base URL or another replica)", u)
		default:
			seen[trimmed] = true
		}
	}
}
