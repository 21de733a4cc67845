package qwen3

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// Scale is LoRA's s: α/r, or α/√r with rsLoRA (PEFT's scaling).
func (c LoRAConfig) Scale() float64 {
	if c.RSLoRA {
		return c.Alpha / math.Sqrt(float64(c.Rank))
	}
	return c.Alpha / float64(c.Rank)
}

// projDims are the [out, in] of a layer's projection.
func projDims(cfg Config, name string) (out, in int) {
	h, q, kv, im := cfg.HiddenSize, cfg.QDim(), cfg.KVDim(), cfg.IntermediateSize
	switch name {
	case "q_proj":
		return q, h
	case "k_proj", "v_proj":
		return kv, h
	case "o_proj":
		return h, q
	case "gate_proj", "up_proj":
		return im, h
	case "down_proj":
		return h, im
	}
	return 0, 0
}

// NewAdapter is a fresh adapter of lc on every layer's target modules, initialised as PEFT does
// (init_lora_weights=True): A [r, in] Kaiming-uniform with a = √5, that is U(−1/√in, 1/√in), from a
// PCG generator seeded with seed, and B [out, r] zero, so that the adapted model equals the base
// model until B moves.
func NewAdapter(cfg Config, lc LoRAConfig, seed uint64) (*Adapter, error) {
	if err := lc.check(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x5851f42d4c957f2d))
	a := &Adapter{Config: lc}
	for range cfg.NumHiddenLayers {
		l := map[string]LoRAPair{}
		for _, name := range ModuleNames {
			if !slices.Contains(lc.TargetModules, name) {
				continue
			}
			out, in := projDims(cfg, name)
			p := LoRAPair{A: Tensor{Shape: []int{lc.Rank, in}, Data: make([]float32, lc.Rank*in)}, B: Tensor{Shape: []int{out, lc.Rank}, Data: make([]float32, out*lc.Rank)}}
			bound := 1 / math.Sqrt(float64(in))
			for i := range p.A.Data {
				p.A.Data[i] = float32((2*rng.Float64() - 1) * bound)
			}
			l[name] = p
		}
		a.Layers = append(a.Layers, l)
	}
	return a, nil
}

func (c LoRAConfig) check() error {
	if c.Rank <= 0 {
		return fmt.Errorf("qwen3: LoRA rank %d", c.Rank)
	}
	if len(c.TargetModules) == 0 {
		return fmt.Errorf("qwen3: LoRA with no target modules")
	}
	for _, name := range c.TargetModules {
		if _, ok := projIndex[name]; !ok {
			return fmt.Errorf("qwen3: LoRA target module %q is not one of %v", name, ModuleNames)
		}
	}
	return nil
}

// loraSlot is one adapted projection, in the order the graphs take adapter tensors.
type loraSlot struct {
	layer int
	name  string
}

// deviceAdapter is an adapter's tensors as graph inputs: A then B per slot.
type deviceAdapter struct {
	config  LoRAConfig
	slots   []loraSlot
	tensors []*tensors.Tensor
}

// SetAdapter makes a the adapter that calls with Query.Adapter (and the gradient) run; nil removes
// it. Its tensors are copied, so a may change afterwards.
func (m *Model) SetAdapter(a *Adapter) error {
	if a == nil {
		m.mu.Lock()
		m.adapter = nil
		m.mu.Unlock()
		return nil
	}
	if err := a.Config.check(); err != nil {
		return err
	}
	if len(a.Layers) != m.cfg.NumHiddenLayers {
		return fmt.Errorf("qwen3: adapter of %d layers for %d", len(a.Layers), m.cfg.NumHiddenLayers)
	}
	d := &deviceAdapter{config: a.Config}
	for l, mods := range a.Layers {
		for _, name := range ModuleNames {
			p, ok := mods[name]
			if !ok {
				continue
			}
			if !slices.Contains(a.Config.TargetModules, name) {
				return fmt.Errorf("qwen3: adapter layer %d has %s, not a target module", l, name)
			}
			out, in := projDims(m.cfg, name)
			r := a.Config.Rank
			if !slices.Equal(p.A.Shape, []int{r, in}) || len(p.A.Data) != r*in || !slices.Equal(p.B.Shape, []int{out, r}) || len(p.B.Data) != out*r {
				return fmt.Errorf("qwen3: adapter layer %d %s has A %v and B %v, want [%d %d] and [%d %d]", l, name, p.A.Shape, p.B.Shape, r, in, out, r)
			}
			d.slots = append(d.slots, loraSlot{l, name})
			d.tensors = append(d.tensors, m.tensor(p.A.Data, r, in), m.tensor(p.B.Data, out, r))
		}
		for name := range mods {
			if _, ok := projIndex[name]; !ok {
				return fmt.Errorf("qwen3: adapter layer %d has module %q, not one of %v", l, name, ModuleNames)
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.adapter != nil && !sameSlots(m.adapter, d) {
		// The graphs with an adapter are built for its slots and scale: start over.
		for k := range m.execs {
			if adapterKey(k) {
				delete(m.execs, k)
			}
		}
	}
	m.adapter = d
	return nil
}

func sameSlots(a, b *deviceAdapter) bool {
	return slices.Equal(a.slots, b.slots) && a.config.Scale() == b.config.Scale()
}

func adapterKey(k any) bool {
	switch k := k.(type) {
	case stepKey:
		return k.adapter
	case gradKey:
		return true
	}
	return false
}

// loraNodes are one projection's A, B and s inside a graph.
type loraNodes struct {
	a, b  *graph.Node
	scale float64
}

// adapterNodes are an adapter's tensors inside a graph, by layer and module.
type adapterNodes struct {
	pairs []map[string]*loraNodes
	flat  []*graph.Node // A, B per slot, as given
}

func (d *deviceAdapter) nodes(in []*graph.Node) *adapterNodes {
	s := d.config.Scale()
	ad := &adapterNodes{flat: in[:2*len(d.slots)]}
	for i, sl := range d.slots {
		for len(ad.pairs) <= sl.layer {
			ad.pairs = append(ad.pairs, map[string]*loraNodes{})
		}
		ad.pairs[sl.layer][sl.name] = &loraNodes{a: in[2*i], b: in[2*i+1], scale: s}
	}
	return ad
}

func (ad *adapterNodes) get(layer int, name string) *loraNodes {
	if ad == nil || layer >= len(ad.pairs) {
		return nil
	}
	return ad.pairs[layer][name]
}
