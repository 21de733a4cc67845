package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"

	"github.com/gomlx/compute/dtypes"

	"github.com/evosteer/evosteer-go/gpu/qwen3"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/tokenizer"
)

// CausalLM is the language-model orchestrator (policy.kind causal_lm, METHOD.md §3.6): a Qwen3
// model read from a local folder, θ = the model with its LoRA adapter, ρ = the same weights with
// the adapter off. A decision's log π over its legal actions is the trie-masked likelihood of each
// action's canonical JSON (with the template's end of turn) after the controller's system prompt
// and the decision's user message in the model's chat template (qwen3.Model.Score), the same
// tokens the served reference has a server score. h_ρ(s) is ρ's final-norm hidden state at the
// prompt's last token times a fixed random projection to policy.encoder_dim (N(0, 1/hidden)
// entries, seeded by the run), which b_ψ and the outcome heads read beside f(s).
//
// Each decision is scored alone: a batched forward of several prompts is equal to one alone only
// to float32 rounding (qwen3's TestBatchedEqualsSingle), and a rollout's outputs must not depend
// on which episodes were in flight together. Within a decision the trie's levels are batched.
//
// The adapter's A and B are the learner's parameters (their Value slices are the adapter's
// tensors); the model on an engine gets them again whenever they have changed.
type CausalLM struct {
	folder   *qwen3.Folder
	name     string // policy.causal_lm.model, as configured (the adapter's base_model_name_or_path)
	template tokenizer.ChatTemplate
	dtype    dtypes.DType
	micro    int
	width    int
	adapter  *qwen3.Adapter
	params   []*Param // A, B of every adapted projection, layer then qwen3.ModuleNames order
	proj     *Param   // frozen [hidden, width]

	mu       sync.Mutex
	model    *qwen3.Model
	engine   *Engine
	uploaded []float32        // the adapter's values the model holds
	shared   map[string][]int // per system prompt: the tokens every prompt with it starts with
}

// folders keeps the model folders read in this process, by absolute path: a training run's stages
// read the same weights step after step.
var folders = struct {
	sync.Mutex
	m map[string]*qwen3.Folder
}{m: map[string]*qwen3.Folder{}}

// openFolder reads dir once per process.
func openFolder(dir string) (*qwen3.Folder, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	folders.Lock()
	defer folders.Unlock()
	if f, ok := folders.m[abs]; ok {
		return f, nil
	}
	f, err := qwen3.Open(abs)
	if err != nil {
		return nil, err
	}
	folders.m[abs] = f
	return f, nil
}

// OpenCausalLM reads policy.causal_lm's model folder and builds the step-0 policy: a fresh PEFT
// adapter (A seeded by the run, B = 0, so θ = ρ) of rank policy.adapter_rank and α
// policy.adapter_alpha on the target modules.
func OpenCausalLM(p config.Policy, runSeed uint64) (*CausalLM, error) {
	if p.CausalLM == nil {
		return nil, fmt.Errorf("causal LM policy: policy.causal_lm is not set")
	}
	f, err := openFolder(p.CausalLM.Model)
	if err != nil {
		return nil, fmt.Errorf("policy.causal_lm.model: %w", err)
	}
	return NewCausalLM(f, p, runSeed)
}

// NewCausalLM is OpenCausalLM on a folder already read.
func NewCausalLM(f *qwen3.Folder, p config.Policy, runSeed uint64) (*CausalLM, error) {
	lm := p.CausalLM
	dt := dtypes.Float32
	if lm.DType != "" {
		var err error
		if dt, err = qwen3.GraphDType(lm.DType); err != nil {
			return nil, fmt.Errorf("policy.causal_lm.dtype: %w", err)
		}
	}
	tmpl, err := f.ChatTemplate()
	if err != nil {
		return nil, fmt.Errorf("policy.causal_lm.model %s: %w", f.Dir, err)
	}
	targets := lm.TargetModules
	if slices.Equal(targets, []string{"all-linear"}) {
		targets = qwen3.ModuleNames
	}
	lcfg := qwen3.LoRAConfig{Rank: p.AdapterRank, Alpha: p.AdapterAlpha, TargetModules: slices.Clone(targets), RSLoRA: lm.RSLoRA}
	ad, err := qwen3.NewAdapter(f.Config, lcfg, seed.Derive(runSeed, "gpu/causal_lm", "adapter"))
	if err != nil {
		return nil, fmt.Errorf("policy.causal_lm: %w", err)
	}
	c := &CausalLM{folder: f, name: lm.Model, template: tmpl, dtype: dt, micro: lm.Micro(), width: p.EncoderDim, adapter: ad}
	for l, mods := range ad.Layers {
		for _, m := range qwen3.ModuleNames {
			pair, ok := mods[m]
			if !ok {
				continue
			}
			prefix := fmt.Sprintf("policy/adapter/layers.%d.%s/", l, m)
			for _, t := range []struct {
				ab string
				t  qwen3.Tensor
			}{{"A", pair.A}, {"B", pair.B}} {
				q := newParam(prefix+t.ab, true, t.t.Shape...)
				q.Value = t.t.Data // the adapter's tensor: the optimizer moves both
				c.params = append(c.params, q)
			}
		}
	}
	H := f.Config.HiddenSize
	c.proj = newParam("policy/h_projection", false, H, c.width)
	s := seed.Derive(runSeed, "gpu/causal_lm", "projection")
	rng := rand.New(rand.NewPCG(s, s^0x70726f6a))
	for i := range c.proj.Value {
		c.proj.Value[i] = float32(rng.NormFloat64() / math.Sqrt(float64(H)))
	}
	return c, nil
}

// HiddenWidth is policy.encoder_dim, the projection's width.
func (c *CausalLM) HiddenWidth() int { return c.width }

// Params are the adapter's blocks, then the frozen projection.
func (c *CausalLM) Params() []*Param { return append(slices.Clone(c.params), c.proj) }

// AdapterParams are the adapter's A and B blocks.
func (c *CausalLM) AdapterParams() []*Param { return c.params }

// Adapter is the current adapter (its tensors are the learner's parameters): what a step's PEFT
// folder holds.
func (c *CausalLM) Adapter() *qwen3.Adapter { return c.adapter }

// BaseModel is the model folder as configured (a PEFT folder's base_model_name_or_path).
func (c *CausalLM) BaseModel() string { return c.name }

// ModelConfig is the model's configuration.
func (c *CausalLM) ModelConfig() qwen3.Config { return c.folder.Config }

// Describe names the model and the adapter.
func (c *CausalLM) Describe() string {
	cfg, lc := c.folder.Config, c.adapter.Config
	n, _ := cfg.ParamCount()
	return fmt.Sprintf("Qwen3 %s (%d layers, hidden %d, %.3gM parameters, %s template), LoRA r %d α %g on %v",
		c.name, cfg.NumHiddenLayers, cfg.HiddenSize, float64(n)/1e6, c.template.Name, lc.Rank, lc.Alpha, lc.TargetModules)
}

// on returns the model on e's backend, with the adapter's current values.
func (c *CausalLM) on(e *Engine) (*qwen3.Model, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.engine != e {
		m, err := qwen3.New(e.backend, c.folder.Config, c.folder.Weights, qwen3.Options{DType: c.dtype})
		if err != nil {
			return nil, err
		}
		c.model, c.engine, c.uploaded = m, e, nil
	}
	changed := c.uploaded == nil
	if !changed {
		k := 0
		for _, p := range c.params {
			if !slices.Equal(p.Value, c.uploaded[k:k+len(p.Value)]) {
				changed = true
				break
			}
			k += len(p.Value)
		}
	}
	if changed {
		if err := c.model.SetAdapter(c.adapter); err != nil {
			return nil, err
		}
		c.uploaded = c.uploaded[:0]
		for _, p := range c.params {
			c.uploaded = append(c.uploaded, p.Value...)
		}
	}
	return c.model, nil
}

// decision tokenises a row's text.
func (c *CausalLM) decision(i int, r PolicyRow) (qwen3.Decision, error) {
	if r.Text == nil {
		return qwen3.Decision{}, fmt.Errorf("causal LM policy: row %d has no text (the decision's controller prompt)", i)
	}
	if len(r.Text.Actions) != r.Legal() {
		return qwen3.Decision{}, fmt.Errorf("causal LM policy: row %d: %d action texts for %d legal actions", i, len(r.Text.Actions), r.Legal())
	}
	d, err := qwen3.NewDecision(c.folder.Tokenizer, c.template, r.Text.System, r.Text.User, r.Text.Actions)
	if err != nil {
		return qwen3.Decision{}, fmt.Errorf("causal LM policy: row %d: %w", i, err)
	}
	shared, err := c.systemTurn(r.Text.System)
	if err != nil {
		return qwen3.Decision{}, err
	}
	if len(shared) < len(d.Prompt) && slices.Equal(d.Prompt[:len(shared)], shared) {
		d.Shared = len(shared)
	}
	return d, nil
}

// systemTurn is the token prefix every prompt with this system prompt starts with (the
// template's system turn and the start of the user turn): the common prefix of two prompts whose
// user messages differ in their first character. A decision whose tokens do not start with it
// (the tokenizer merged across the boundary) is prefilled whole.
func (c *CausalLM) systemTurn(system string) ([]int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.shared[system]; ok {
		return t, nil
	}
	a, err := c.folder.Tokenizer.Encode(c.template.Prompt(system, "a"))
	if err != nil {
		return nil, fmt.Errorf("causal LM policy: the system prompt: %w", err)
	}
	b, err := c.folder.Tokenizer.Encode(c.template.Prompt(system, "{"))
	if err != nil {
		return nil, fmt.Errorf("causal LM policy: the system prompt: %w", err)
	}
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	if c.shared == nil {
		c.shared = map[string][]int{}
	}
	c.shared[system] = a[:n:n]
	return c.shared[system], nil
}

// project is h_ρ(s): the hidden state times the projection.
func (c *CausalLM) project(last []float64) []float32 {
	h := make([]float32, c.width)
	for j := range h {
		var s float64
		for i, v := range last {
			s += v * float64(c.proj.Value[i*c.width+j])
		}
		h[j] = float32(s)
	}
	return h
}

func toFloat32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// Score scores every row alone: ρ (adapter off), whose prefill gives h_ρ, then θ (adapter on),
// except for a single legal action, whose log-probability is 0 under both.
func (c *CausalLM) Score(e *Engine, rows []PolicyRow) (*Scores, error) {
	m, err := c.on(e)
	if err != nil {
		return nil, err
	}
	s := &Scores{Theta: make([][]float32, len(rows)), Rho: make([][]float32, len(rows)), H: make([][]float32, len(rows)), Tokens: make([]int64, len(rows))}
	for i, r := range rows {
		d, err := c.decision(i, r)
		if err != nil {
			return nil, err
		}
		rho, err := m.Score(d, false)
		if err != nil {
			return nil, fmt.Errorf("causal LM policy: row %d: %w", i, err)
		}
		s.Rho[i], s.H[i], s.Tokens[i] = toFloat32(rho.LogProbs), c.project(rho.Last), rho.Work.Tokens
		s.Theta[i] = s.Rho[i]
		if r.Legal() > 1 {
			theta, err := m.Score(d, true)
			if err != nil {
				return nil, fmt.Errorf("causal LM policy: row %d: %w", i, err)
			}
			s.Theta[i] = toFloat32(theta.LogProbs)
			s.Tokens[i] += theta.Work.Tokens
		}
	}
	return s, nil
}

// Behaviour scores each row under the policy a rollout samples it from: θ where theta[i], else ρ;
// one pass each.
func (c *CausalLM) Behaviour(e *Engine, rows []PolicyRow, theta []bool) ([][]float32, []int64, error) {
	m, err := c.on(e)
	if err != nil {
		return nil, nil, err
	}
	logp, tokens := make([][]float32, len(rows)), make([]int64, len(rows))
	for i, r := range rows {
		if r.Legal() == 1 {
			logp[i] = []float32{0}
			continue
		}
		d, err := c.decision(i, r)
		if err != nil {
			return nil, nil, err
		}
		s, err := m.Score(d, theta[i])
		if err != nil {
			return nil, nil, fmt.Errorf("causal LM policy: row %d: %w", i, err)
		}
		logp[i], tokens[i] = toFloat32(s.LogProbs), s.Work.Tokens
	}
	return logp, tokens, nil
}

// Encode is h_ρ(s) of every row.
func (c *CausalLM) Encode(e *Engine, rows []PolicyRow) ([][]float32, error) {
	m, err := c.on(e)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(rows))
	for i, r := range rows {
		d, err := c.decision(i, r)
		if err != nil {
			return nil, err
		}
		// h_ρ needs the prompt's last hidden state only: score one candidate, a single prefill.
		d.Actions = d.Actions[:1]
		rho, err := m.Score(d, false)
		if err != nil {
			return nil, fmt.Errorf("causal LM policy: row %d: %w", i, err)
		}
		out[i] = c.project(rho.Last)
	}
	return out, nil
}

// gradient is the gradient of Σ_d coef_d·log π_θ(a_d|s_d) with respect to the adapter, in
// AdapterParams order, and log π_θ(a_d|s_d) of every row: the rows with more than one legal
// action teacher-forced in micro-batches of policy.causal_lm.micro_batch (the gradient is a sum,
// so the micro-batches only bound the activations); a single legal action has log π = 0 and no
// gradient.
func (c *CausalLM) gradient(e *Engine, rows []PolicyRow, chosen []int, coef []float32) ([][]float32, []float64, error) {
	m, err := c.on(e)
	if err != nil {
		return nil, nil, err
	}
	sums := make([][]float64, len(c.params))
	for i, p := range c.params {
		sums[i] = make([]float64, len(p.Value))
	}
	logp := make([]float64, len(rows))
	var batch []qwen3.Example
	var at []int
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		g, err := m.Gradient(batch)
		if err != nil {
			return err
		}
		if len(g.Grads) != len(c.params)/2 {
			return fmt.Errorf("causal LM policy: %d gradient pairs for %d adapted projections", len(g.Grads), len(c.params)/2)
		}
		for k, pg := range g.Grads {
			for j, v := range pg.A {
				sums[2*k][j] += v
			}
			for j, v := range pg.B {
				sums[2*k+1][j] += v
			}
		}
		for k, i := range at {
			logp[i] = g.LogProbs[k]
		}
		batch, at = batch[:0], at[:0]
		return nil
	}
	for i, r := range rows {
		if r.Legal() < 2 {
			continue
		}
		d, err := c.decision(i, r)
		if err != nil {
			return nil, nil, err
		}
		batch, at = append(batch, qwen3.Example{Decision: d, Action: chosen[i], Weight: float64(coef[i])}), append(at, i)
		if len(batch) == c.micro {
			if err := flush(); err != nil {
				return nil, nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, nil, err
	}
	grads := make([][]float32, len(sums))
	for i, s := range sums {
		grads[i] = toFloat32(s)
	}
	return grads, logp, nil
}

// Template is the chat template the controller prompt is rendered with.
func (c *CausalLM) Template() tokenizer.ChatTemplate { return c.template }

// CountTokens is the rendered chat prompt's length in the model's tokens and each action's with
// the end of turn: what the model reads and would write.
func (c *CausalLM) CountTokens(system, user string, actions []string) (int, []int, error) {
	d, err := qwen3.NewDecision(c.folder.Tokenizer, c.template, system, user, actions)
	if err != nil {
		return 0, nil, fmt.Errorf("causal LM policy: %w", err)
	}
	lens := make([]int, len(d.Actions))
	for i, a := range d.Actions {
		lens[i] = len(a)
	}
	return len(d.Prompt), lens, nil
}
