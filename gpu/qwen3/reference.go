package qwen3

import (
	"fmt"
	"math"
	"slices"
)

// Reference is an independent float64 forward of Qwen3 with a KV cache: the oracle the gomlx
// graphs are checked against. It follows transformers' modeling_qwen3.py: the token embedding;
// per layer an RMSNorm (HF computes it in float32 then casts; here everything is float64), the
// q/k/v projections, RMSNorm of each query and key head (q_norm, k_norm) before the rotary
// embedding (rotate-half, inv_freq_i = θ^(-2i/head_dim), the position counted from the cache's
// length), grouped-query attention (query head h reads key/value head h / (heads/kv_heads))
// scaled by head_dim^-0.5 under a causal mask, o_proj and the residual; the post-attention
// RMSNorm, the SwiGLU MLP down(silu(gate(x)) · up(x)) and the residual; the final norm and
// lm_head. A LoRA adapter is merged into its projections in float64 (W + s·B·A, s = α/r, or
// α/√r with rsLoRA). It is plain loops, for tiny models: it favours being obviously right.
type Reference struct {
	cfg    Config
	embed  matrix
	layers []refLayer
	norm   []float64
	head   matrix
}

// matrix is a row-major float64 matrix [rows, cols].
type matrix struct {
	rows, cols int
	d          []float64
}

type refLayer struct {
	inNorm, qNorm, kNorm, postNorm []float64
	proj                           map[string]matrix // q_proj … down_proj
}

func (l *Layer) projection(name string) Tensor {
	return map[string]Tensor{"q_proj": l.QProj, "k_proj": l.KProj, "v_proj": l.VProj, "o_proj": l.OProj,
		"gate_proj": l.GateProj, "up_proj": l.UpProj, "down_proj": l.DownProj}[name]
}

func widen(t Tensor) []float64 {
	out := make([]float64, len(t.Data))
	for i, v := range t.Data {
		out[i] = float64(v)
	}
	return out
}

func toMatrix(t Tensor) matrix { return matrix{t.Shape[0], t.Shape[1], widen(t)} }

// NewReference builds the reference forward of cfg's model with w, and adapter merged when it
// is not nil.
func NewReference(cfg Config, w Weights, adapter *Adapter) (*Reference, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkWeights(cfg, w); err != nil {
		return nil, err
	}
	r := &Reference{cfg: cfg, embed: toMatrix(w.Embed), norm: widen(w.Norm), head: toMatrix(w.LMHead)}
	var scale float64
	if adapter != nil {
		var err error
		if scale, err = checkAdapter(cfg, adapter); err != nil {
			return nil, err
		}
	}
	for i, l := range w.Layers {
		rl := refLayer{inNorm: widen(l.InputNorm), qNorm: widen(l.QNorm), kNorm: widen(l.KNorm),
			postNorm: widen(l.PostAttnNorm), proj: map[string]matrix{}}
		for _, name := range ModuleNames {
			m := toMatrix(l.projection(name))
			if adapter != nil {
				if p, ok := adapter.Layers[i][name]; ok {
					merge(m, p, scale)
				}
			}
			rl.proj[name] = m
		}
		r.layers = append(r.layers, rl)
	}
	return r, nil
}

// merge adds s·B·A to m.
func merge(m matrix, p LoRAPair, s float64) {
	rank := p.A.Shape[0]
	for o := range m.rows {
		for i := range m.cols {
			var sum float64
			for k := range rank {
				sum += float64(p.B.Data[o*rank+k]) * float64(p.A.Data[k*m.cols+i])
			}
			m.d[o*m.cols+i] += s * sum
		}
	}
}

// checkAdapter checks a's shapes against cfg and returns its scale.
func checkAdapter(cfg Config, a *Adapter) (float64, error) {
	if a.Config.Rank <= 0 {
		return 0, fmt.Errorf("qwen3: adapter: rank %d is not positive", a.Config.Rank)
	}
	if len(a.Layers) != cfg.NumHiddenLayers {
		return 0, fmt.Errorf("qwen3: adapter: %d layers for num_hidden_layers %d", len(a.Layers), cfg.NumHiddenLayers)
	}
	r := a.Config.Rank
	for i, layer := range a.Layers {
		for name, p := range layer {
			out, in := projDims(cfg, name)
			d, ok := [2]int{out, in}, out > 0
			if !ok || !slices.Contains(a.Config.TargetModules, name) {
				return 0, fmt.Errorf("qwen3: adapter: layer %d: %q is not one of its target modules %v", i, name, a.Config.TargetModules)
			}
			if !slices.Equal(p.A.Shape, []int{r, d[1]}) || len(p.A.Data) != r*d[1] {
				return 0, fmt.Errorf("qwen3: adapter: layer %d: %s.lora_A: shape %v, want [%d %d]", i, name, p.A.Shape, r, d[1])
			}
			if !slices.Equal(p.B.Shape, []int{d[0], r}) || len(p.B.Data) != r*d[0] {
				return 0, fmt.Errorf("qwen3: adapter: layer %d: %s.lora_B: shape %v, want [%d %d]", i, name, p.B.Shape, d[0], r)
			}
		}
	}
	return a.Config.Scale(), nil
}

// RefCache is the reference's KV cache: per layer, the rotated keys and the values of every
// position so far, [position][kv_heads·head_dim] flattened.
type RefCache struct {
	k, v [][]float64
	n    int
}

// NewCache is an empty cache for r.
func (r *Reference) NewCache() *RefCache {
	return &RefCache{k: make([][]float64, len(r.layers)), v: make([][]float64, len(r.layers))}
}

// Len is the number of positions cached.
func (c *RefCache) Len() int { return c.n }

// Clone is an independent copy, to branch two continuations from one prefix.
func (c *RefCache) Clone() *RefCache {
	out := &RefCache{k: make([][]float64, len(c.k)), v: make([][]float64, len(c.v)), n: c.n}
	for i := range c.k {
		out.k[i], out.v[i] = slices.Clone(c.k[i]), slices.Clone(c.v[i])
	}
	return out
}

// Prefill runs tokens from an empty cache: the cache and the logits of every position.
func (r *Reference) Prefill(tokens []int) (*RefCache, [][]float64, error) {
	c := r.NewCache()
	logits, err := r.Extend(c, tokens)
	return c, logits, err
}

// Extend appends tokens to c (their positions follow c's) and returns the logits [vocab] of each
// new position. On an error c is unchanged.
func (r *Reference) Extend(c *RefCache, tokens []int) ([][]float64, error) {
	cfg := r.cfg
	if len(c.k) != len(r.layers) {
		return nil, fmt.Errorf("qwen3: reference: a cache of %d layers for a model of %d", len(c.k), len(r.layers))
	}
	if c.n+len(tokens) > cfg.MaxPositionEmbeddings {
		return nil, fmt.Errorf("qwen3: reference: positions up to %d, past max_position_embeddings %d", c.n+len(tokens), cfg.MaxPositionEmbeddings)
	}
	x := make([][]float64, len(tokens)) // the residual stream of each new position
	for i, t := range tokens {
		if t < 0 || t >= cfg.VocabSize {
			return nil, fmt.Errorf("qwen3: reference: token %d at %d is outside the vocabulary [0, %d)", t, i, cfg.VocabSize)
		}
		x[i] = slices.Clone(r.embed.d[t*cfg.HiddenSize : (t+1)*cfg.HiddenSize])
	}
	hd, kvd := cfg.HeadDim, cfg.KVDim()
	group := cfg.NumAttentionHeads / cfg.NumKeyValueHeads
	scale := 1 / math.Sqrt(float64(hd))
	for li, l := range r.layers {
		qs := make([][]float64, len(tokens))
		for i := range tokens {
			h := refRMSNorm(x[i], l.inNorm, cfg.RMSNormEps)
			q, k, v := matVec(l.proj["q_proj"], h), matVec(l.proj["k_proj"], h), matVec(l.proj["v_proj"], h)
			pos := c.n + i
			for hh := range cfg.NumAttentionHeads {
				head := q[hh*hd : (hh+1)*hd]
				copy(head, rotary(refRMSNorm(head, l.qNorm, cfg.RMSNormEps), pos, cfg.RopeTheta))
			}
			for g := range cfg.NumKeyValueHeads {
				head := k[g*hd : (g+1)*hd]
				copy(head, rotary(refRMSNorm(head, l.kNorm, cfg.RMSNormEps), pos, cfg.RopeTheta))
			}
			qs[i] = q
			c.k[li] = append(c.k[li], k...)
			c.v[li] = append(c.v[li], v...)
		}
		for i := range tokens {
			pos := c.n + i // attends to positions 0 … pos
			attn := make([]float64, cfg.QDim())
			for hh := range cfg.NumAttentionHeads {
				g := hh / group
				q := qs[i][hh*hd : (hh+1)*hd]
				scores := make([]float64, pos+1)
				for j := range scores {
					scores[j] = dot(q, c.k[li][j*kvd+g*hd:j*kvd+(g+1)*hd]) * scale
				}
				softmax(scores)
				out := attn[hh*hd : (hh+1)*hd]
				for j, p := range scores {
					for d, v := range c.v[li][j*kvd+g*hd : j*kvd+(g+1)*hd] {
						out[d] += p * v
					}
				}
			}
			add(x[i], matVec(l.proj["o_proj"], attn))
			h := refRMSNorm(x[i], l.postNorm, cfg.RMSNormEps)
			gate, up := matVec(l.proj["gate_proj"], h), matVec(l.proj["up_proj"], h)
			for j := range gate {
				gate[j] = gate[j] / (1 + math.Exp(-gate[j])) * up[j]
			}
			add(x[i], matVec(l.proj["down_proj"], gate))
		}
	}
	c.n += len(tokens)
	logits := make([][]float64, len(tokens))
	for i := range tokens {
		logits[i] = matVec(r.head, refRMSNorm(x[i], r.norm, cfg.RMSNormEps))
	}
	return logits, nil
}

// refRMSNorm is RMSNorm in float64: x / √(mean(x²) + eps) · w.
func refRMSNorm(x, w []float64, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * inv * w[i]
	}
	return out
}

// rotary rotates x (one head) to position pos: the rotate-half convention, pairing dimension i
// with i + d/2 at the angle pos·θ^(-2i/d).
func rotary(x []float64, pos int, theta float64) []float64 {
	d := len(x)
	half := d / 2
	out := make([]float64, d)
	for i := range half {
		angle := float64(pos) * math.Pow(theta, -float64(2*i)/float64(d))
		cos, sin := math.Cos(angle), math.Sin(angle)
		out[i] = x[i]*cos - x[i+half]*sin
		out[i+half] = x[i+half]*cos + x[i]*sin
	}
	return out
}

func matVec(m matrix, x []float64) []float64 {
	out := make([]float64, m.rows)
	for r := range m.rows {
		out[r] = dot(m.d[r*m.cols:(r+1)*m.cols], x)
	}
	return out
}

func dot(a, b []float64) float64 {
	var s float64
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

func add(x, y []float64) {
	for i, v := range y {
		x[i] += v
	}
}

func softmax(s []float64) {
	m := math.Inf(-1)
	for _, v := range s {
		m = max(m, v)
	}
	var z float64
	for i, v := range s {
		s[i] = math.Exp(v - m)
		z += s[i]
	}
	for i := range s {
		s[i] /= z
	}
}
