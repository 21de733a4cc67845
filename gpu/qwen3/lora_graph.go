package qwen3

import (
	"fmt"
	"math"
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
		m.dropAdapterPrefixes()
		m.mu.Unlock()
		return nil
	}
	if err := checkLoRAConfig(a.Config); err != nil {
		return fmt.Errorf("qwen3: adapter: %w", err)
	}
	if _, err := checkAdapter(m.cfg, a); err != nil {
		return err
	}
	d := &deviceAdapter{config: a.Config}
	for l, mods := range a.Layers {
		for _, name := range ModuleNames {
			p, ok := mods[name]
			if !ok {
				continue
			}
			out, in := projDims(m.cfg, name)
			r := a.Config.Rank
			d.slots = append(d.slots, loraSlot{l, name})
			d.tensors = append(d.tensors, m.tensor(p.A.Data, r, in), m.tensor(p.B.Data, out, r))
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.adapter != nil && !sameSlots(m.adapter, d) {
		// The graphs with an adapter are built for its slots and scale: start over.
		for k := range m.execs {
			if usesAdapter(k) {
				delete(m.execs, k)
			}
		}
	}
	m.adapter = d
	m.dropAdapterPrefixes()
	return nil
}

func sameSlots(a, b *deviceAdapter) bool {
	return slices.Equal(a.slots, b.slots) && a.config.Scale() == b.config.Scale()
}

// usesAdapter reports whether an exec of this key was built for an adapter.
func usesAdapter(k any) bool {
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
