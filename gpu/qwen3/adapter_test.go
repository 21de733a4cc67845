package qwen3_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/gpu/qwen3"
	"github.com/evosteer/evosteer-go/gpu/qwen3/qwen3test"
)

var updateAdapterGolden = flag.Bool("update-adapter-golden", false, "rewrite testdata/adapter_config.golden.json")

func equalAdapters(t *testing.T, got, want qwen3.Adapter) {
	t.Helper()
	if got.Config.Rank != want.Config.Rank || got.Config.Alpha != want.Config.Alpha || got.Config.RSLoRA != want.Config.RSLoRA ||
		!slices.Equal(got.Config.TargetModules, want.Config.TargetModules) {
		t.Errorf("config %+v, want %+v", got.Config, want.Config)
	}
	if len(got.Layers) != len(want.Layers) {
		t.Fatalf("%d layers, want %d", len(got.Layers), len(want.Layers))
	}
	for i := range want.Layers {
		if !slices.Equal(slices.Sorted(maps.Keys(got.Layers[i])), slices.Sorted(maps.Keys(want.Layers[i]))) {
			t.Fatalf("layer %d: modules %v, want %v", i, slices.Sorted(maps.Keys(got.Layers[i])), slices.Sorted(maps.Keys(want.Layers[i])))
		}
		for m, w := range want.Layers[i] {
			g := got.Layers[i][m]
			if !slices.Equal(g.A.Shape, w.A.Shape) || !slices.Equal(g.A.Data, w.A.Data) || !slices.Equal(g.B.Shape, w.B.Shape) || !slices.Equal(g.B.Data, w.B.Data) {
				t.Errorf("layer %d %s differs", i, m)
			}
		}
	}
}

// An adapter with a non-zero B written in F32 reads back identical, tensor for tensor, and the
// float64 reference with it gives identical logits (which differ from the base model's); the
// same adapter writes the same bytes; rewriting the folder replaces it whole and leaves nothing
// beside it; the safetensors keys are PEFT's.
func TestAdapterRoundTrip(t *testing.T) {
	cfg := qwen3test.Config()
	w := qwen3test.Weights(cfg, 3)
	dir, a := qwen3test.AdapterFolder(t, cfg, qwen3test.LoRAConfig(), 5, qwen3.F32)
	got, err := qwen3.ReadAdapter(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	equalAdapters(t, got, a)
	tokens := randomTokens(2, 9, cfg.VocabSize)
	want := prefill(t, newRef(t, cfg, w, &a), tokens)
	if d := maxDiff(t, prefill(t, newRef(t, cfg, w, &got), tokens), want); d != 0 {
		t.Errorf("logits with the adapter read back: max |Δ| %g, want 0", d)
	}
	if d := maxDiff(t, want, prefill(t, newRef(t, cfg, w, nil), tokens)); d < 1e-2 {
		t.Errorf("the adapter does not move the logits: max |Δ| %g", d)
	}

	tensors, meta, err := qwen3.ReadSafetensors(filepath.Join(dir, qwen3.AdapterWeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	if meta["format"] != "pt" || len(tensors) != 2*len(qwen3.ModuleNames)*cfg.NumHiddenLayers {
		t.Errorf("metadata %v, %d tensors", meta, len(tensors))
	}
	for _, key := range []string{"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", "base_model.model.model.layers.1.self_attn.o_proj.lora_B.weight",
		"base_model.model.model.layers.0.mlp.gate_proj.lora_A.weight", "base_model.model.model.layers.1.mlp.down_proj.lora_B.weight"} {
		if _, ok := tensors[key]; !ok {
			t.Errorf("no %s in %v", key, slices.Sorted(maps.Keys(tensors)))
		}
	}
	if s := tensors["base_model.model.model.layers.1.mlp.down_proj.lora_B.weight"].Shape; !slices.Equal(s, []int{cfg.HiddenSize, 2}) {
		t.Errorf("down_proj lora_B shape %v", s)
	}

	again := filepath.Join(t.TempDir(), "again")
	if err := qwen3.WriteAdapter(again, cfg, a, "tiny/qwen3"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{qwen3.AdapterConfigFile, qwen3.AdapterWeightsFile} {
		x, _ := os.ReadFile(filepath.Join(dir, f))
		y, _ := os.ReadFile(filepath.Join(again, f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s: not the same bytes for the same adapter", f)
		}
	}

	other := qwen3test.Adapter(t, cfg, qwen3test.LoRAConfig(), 6)
	if err := qwen3.WriteAdapter(dir, cfg, other, "tiny/qwen3"); err != nil {
		t.Fatalf("replacing an adapter folder: %v", err)
	}
	if got, err := qwen3.ReadAdapter(dir, cfg); err != nil {
		t.Fatal(err)
	} else {
		equalAdapters(t, got, other)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 || entries[0].Name() != "adapter" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("beside the adapter folder: %v", names)
	}
}

// In BF16 every value reads back within half a bf16 step (2⁻⁸ relative), and the logits stay
// near the float32 adapter's.
func TestAdapterBF16RoundTrip(t *testing.T) {
	cfg := qwen3test.Config()
	dir, a := qwen3test.AdapterFolder(t, cfg, qwen3test.LoRAConfig(), 8, qwen3.BF16)
	f, err := qwen3.OpenAdapter(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.DTypes, []qwen3.DType{qwen3.BF16}) || f.BaseModel != "tiny/qwen3" || f.Tensors != 28 {
		t.Errorf("read %v %q %d", f.DTypes, f.BaseModel, f.Tensors)
	}
	worst := 0.0
	for i, layer := range a.Layers {
		for m, p := range layer {
			g := f.Adapter.Layers[i][m]
			for _, pair := range [][2]qwen3.Tensor{{g.A, p.A}, {g.B, p.B}} {
				for j, v := range pair[1].Data {
					d := math.Abs(float64(pair[0].Data[j]) - float64(v))
					if d > math.Abs(float64(v))/256 {
						t.Fatalf("layer %d %s: %v read back as %v", i, m, v, pair[0].Data[j])
					}
					worst = max(worst, d/math.Abs(float64(v)))
				}
			}
		}
	}
	t.Logf("bf16 round trip: worst relative error %.3g (bound 2^-8 = %.3g)", worst, 1.0/256)
	w := qwen3test.Weights(cfg, 3)
	tokens := randomTokens(2, 9, cfg.VocabSize)
	if d := maxDiff(t, prefill(t, newRef(t, cfg, w, &f.Adapter), tokens), prefill(t, newRef(t, cfg, w, &a), tokens)); d > 0.05 || d == 0 {
		t.Errorf("bf16 adapter against f32: max |Δ| %g", d)
	}
}

// The adapter_config.json written is the golden file, byte for byte (go test -run
// AdapterConfigGolden -update-adapter-golden rewrites it): its layout cannot drift unnoticed.
func TestAdapterConfigGolden(t *testing.T) {
	cfg := qwen3test.Config()
	dir, _ := qwen3test.AdapterFolder(t, cfg, qwen3test.LoRAConfig(), 1, qwen3.F32)
	got, err := os.ReadFile(filepath.Join(dir, qwen3.AdapterConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "adapter_config.golden.json")
	if *updateAdapterGolden {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("adapter_config.json drifted from %s:\n%s", golden, got)
	}
	var doc map[string]any
	if err := json.Unmarshal(got, &doc); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": 2.0, "lora_alpha": 4.0, "use_rslora": true,
		"bias": "none", "use_dora": false, "base_model_name_or_path": "tiny/qwen3", "inference_mode": true} {
		if doc[k] != v {
			t.Errorf("%s: %v, want %v", k, doc[k], v)
		}
	}
}

// NewAdapter is PEFT's default initialisation: B zero (the logits are the base model's exactly),
// A uniform within ±1/√in (kaiming_uniform_ with a = √5), seeded.
func TestNewAdapter(t *testing.T) {
	cfg := qwen3test.Config()
	lcfg := qwen3.LoRAConfig{Rank: 4, Alpha: 8, TargetModules: []string{"down_proj", "q_proj"}}
	a, err := qwen3.NewAdapter(cfg, lcfg, 9)
	if err != nil {
		t.Fatal(err)
	}
	for i, layer := range a.Layers {
		if len(layer) != 2 {
			t.Fatalf("layer %d: %d modules", i, len(layer))
		}
		for m, p := range layer {
			in := map[string]int{"q_proj": cfg.HiddenSize, "down_proj": cfg.IntermediateSize}[m]
			bound := 1 / math.Sqrt(float64(in))
			var top, sq float64
			for _, v := range p.A.Data {
				top, sq = max(top, math.Abs(float64(v))), sq+float64(v)*float64(v)
			}
			variance := sq / float64(len(p.A.Data))
			if top > bound || top < 0.8*bound || math.Abs(variance/(bound*bound/3)-1) > 0.35 {
				t.Errorf("layer %d %s: A max %.4g, variance %.4g; want within ±%.4g, variance %.4g", i, m, top, variance, bound, bound*bound/3)
			}
			if slices.ContainsFunc(p.B.Data, func(v float32) bool { return v != 0 }) {
				t.Errorf("layer %d %s: B is not zero", i, m)
			}
		}
	}
	b, _ := qwen3.NewAdapter(cfg, lcfg, 9)
	c, _ := qwen3.NewAdapter(cfg, lcfg, 10)
	if !slices.Equal(a.Layers[1]["q_proj"].A.Data, b.Layers[1]["q_proj"].A.Data) || slices.Equal(a.Layers[1]["q_proj"].A.Data, c.Layers[1]["q_proj"].A.Data) {
		t.Error("not seeded: the same seed differs or another seed does not")
	}
	w := qwen3test.Weights(cfg, 3)
	tokens := randomTokens(2, 5, cfg.VocabSize)
	if d := maxDiff(t, prefill(t, newRef(t, cfg, w, a), tokens), prefill(t, newRef(t, cfg, w, nil), tokens)); d != 0 {
		t.Errorf("a fresh adapter moves the logits: %g", d)
	}
	for _, c := range []struct {
		lcfg qwen3.LoRAConfig
		want string
	}{
		{qwen3.LoRAConfig{Rank: 0, Alpha: 1, TargetModules: []string{"q_proj"}}, "r: 0 is not positive"},
		{qwen3.LoRAConfig{Rank: 1, Alpha: 1, TargetModules: []string{"lm_head"}}, `target_modules: "lm_head" is not implemented`},
		{qwen3.LoRAConfig{Rank: 1, Alpha: 1, TargetModules: []string{"q_proj", "q_proj"}}, `target_modules: "q_proj" appears twice`},
		{qwen3.LoRAConfig{Rank: 1, Alpha: math.NaN(), TargetModules: []string{"q_proj"}}, "lora_alpha: NaN is not a finite number"},
		{qwen3.LoRAConfig{Rank: 1, Alpha: 1}, "target_modules: empty"},
	} {
		if _, err := qwen3.NewAdapter(cfg, c.lcfg, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.lcfg, err, c.want)
		}
	}
}

// WriteAdapter refuses an adapter that does not fit the model or is incomplete, an unknown
// dtype, and replacing a folder that is not an adapter's.
func TestWriteAdapterRefusals(t *testing.T) {
	cfg := qwen3test.Config()
	a := qwen3test.Adapter(t, cfg, qwen3test.LoRAConfig(), 1)
	missing := qwen3test.Adapter(t, cfg, qwen3test.LoRAConfig(), 1)
	delete(missing.Layers[1], "v_proj")
	misshapen := qwen3test.Adapter(t, cfg, qwen3test.LoRAConfig(), 1)
	p := misshapen.Layers[0]["up_proj"]
	p.A.Shape = []int{p.A.Shape[1], p.A.Shape[0]}
	misshapen.Layers[0]["up_proj"] = p
	model := qwen3test.Folder(t, cfg, 1, qwen3.F32, 1)
	for _, c := range []struct {
		name  string
		dir   string
		a     qwen3.Adapter
		dtype qwen3.DType
		want  string
	}{
		{"missing", "", missing, qwen3.F32, "layer 1: v_proj: missing"},
		{"misshapen", "", misshapen, qwen3.F32, "layer 0: up_proj.lora_A: shape [16 2], want [2 16]"},
		{"dtype", "", a, "F64", `dtype "F64" is not implemented`},
		{"model folder", model, a, qwen3.F32, `exists and holds "config.json", which is not an adapter's file`},
	} {
		dir := c.dir
		if dir == "" {
			dir = filepath.Join(t.TempDir(), "adapter")
		}
		err := qwen3.WriteAdapterDType(dir, cfg, c.a, "", c.dtype)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if c.dir == "" {
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("%s: the folder exists after the refusal", c.name)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(model, qwen3.ConfigFile)); err != nil {
		t.Errorf("the model folder was touched: %v", err)
	}
}

// editAdapter rewrites a copy of the adapter folder src: edit changes adapter_config.json's
// document and tensors the safetensors' tensors.
func editAdapter(t *testing.T, src string, edit func(doc map[string]any), tensors func(map[string]qwen3.Tensor)) string {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(src, qwen3.AdapterConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(doc)
	}
	data, _ = json.Marshal(doc)
	if err := os.WriteFile(filepath.Join(dir, qwen3.AdapterConfigFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	ts, _, err := qwen3.ReadSafetensors(filepath.Join(src, qwen3.AdapterWeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	if tensors != nil {
		tensors(ts)
	}
	if err := qwen3.WriteSafetensors(filepath.Join(dir, qwen3.AdapterWeightsFile), ts, qwen3.F32, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// ReadAdapter refuses what it does not implement and what disagrees with the model, naming the
// file, the field or tensor and the value; it accepts the off values of the features it refuses,
// fields that only concern training, and "all-linear".
func TestAdapterRefusals(t *testing.T) {
	cfg := qwen3test.Config()
	src, _ := qwen3test.AdapterFolder(t, cfg, qwen3test.LoRAConfig(), 2, qwen3.F32)
	set := func(k string, v any) func(map[string]any) { return func(d map[string]any) { d[k] = v } }
	del := func(k string) func(map[string]any) { return func(d map[string]any) { delete(d, k) } }
	const q0 = "base_model.model.model.layers.0.self_attn.q_proj."
	rename := func(from, to string) func(map[string]qwen3.Tensor) {
		return func(ts map[string]qwen3.Tensor) { ts[to] = ts[from]; delete(ts, from) }
	}
	conf, weights := qwen3.AdapterConfigFile+": ", qwen3.AdapterWeightsFile+": "
	for _, c := range []struct {
		name    string
		edit    func(map[string]any)
		tensors func(map[string]qwen3.Tensor)
		want    string
	}{
		{"peft_type", set("peft_type", "IA3"), nil, conf + `peft_type: "IA3" is not implemented (only "LORA")`},
		{"no peft_type", del("peft_type"), nil, conf + "peft_type: absent (required)"},
		{"task_type", set("task_type", "SEQ_CLS"), nil, conf + `task_type: "SEQ_CLS" is not implemented`},
		{"no r", del("r"), nil, conf + "r: absent (required"},
		{"fractional r", set("r", 2.5), nil, conf + "r: 2.5 is not a positive integer"},
		{"no lora_alpha", del("lora_alpha"), nil, conf + "lora_alpha: absent (required"},
		{"no target_modules", del("target_modules"), nil, conf + "target_modules: absent (required"},
		{"lm_head", set("target_modules", []string{"q_proj", "lm_head"}), nil, conf + `target_modules: "lm_head" is not implemented`},
		{"regex", set("target_modules", ".*proj"), nil, conf + `target_modules: ".*proj" is a regular expression, which is not implemented`},
		{"dora", set("use_dora", true), nil, conf + "use_dora: true is not implemented (DoRA"},
		{"bias", set("bias", "all"), nil, conf + `bias: "all" is not implemented (only "none"`},
		{"lora_bias", set("lora_bias", true), nil, conf + "lora_bias: true is not implemented"},
		{"modules_to_save", set("modules_to_save", []string{"lm_head"}), nil, conf + `modules_to_save: ["lm_head"] is not implemented`},
		{"layers_to_transform", set("layers_to_transform", []int{0}), nil, conf + "layers_to_transform: [0] is not implemented"},
		{"rank_pattern", set("rank_pattern", map[string]int{"q_proj": 4}), nil, conf + `rank_pattern: {"q_proj":4} is not implemented`},
		{"alpha_pattern", set("alpha_pattern", map[string]int{"q_proj": 4}), nil, conf + `alpha_pattern: {"q_proj":4} is not implemented`},
		{"layer_replication", set("layer_replication", [][]int{{0, 2}}), nil, conf + "layer_replication: [[0,2]] is not implemented"},
		{"fan_in_fan_out", set("fan_in_fan_out", true), nil, conf + "fan_in_fan_out: true is not implemented"},
		{"pissa", set("init_lora_weights", "pissa"), nil, conf + `init_lora_weights: "pissa" is not implemented`},
		{"unknown", set("alora_invocation_tokens", []int{7, 8}), nil, conf + "alora_invocation_tokens: [7,8] is a field this reader does not know"},
		{"no B", nil, func(ts map[string]qwen3.Tensor) { delete(ts, q0+"lora_B.weight") }, weights + q0 + "lora_B.weight: missing"},
		{"no A", nil, func(ts map[string]qwen3.Tensor) { delete(ts, q0+"lora_A.weight") }, weights + q0 + "lora_A.weight: missing"},
		{"adapter name kept", nil, rename(q0+"lora_A.weight", q0+"lora_A.default.weight"), weights + q0 + `lora_A.default.weight: a key not of PEFT's layout for Qwen3 (base_model.model.model.layers.{i}.self_attn|mlp.{module}.lora_A|lora_B.weight); the adapter's name ("default") is still in it`},
		{"dora magnitude", nil, func(ts map[string]qwen3.Tensor) { ts[q0+"lora_magnitude_vector"] = ts[q0+"lora_A.weight"] }, "DoRA's magnitude is not implemented"},
		{"bare key", nil, rename(q0+"lora_A.weight", "model.layers.0.self_attn.q_proj.lora_A.weight"), weights + "model.layers.0.self_attn.q_proj.lora_A.weight: a key not of PEFT's layout"},
		{"wrong parent", nil, rename(q0+"lora_A.weight", "base_model.model.model.layers.0.mlp.q_proj.lora_A.weight"), "mlp.q_proj is not one of Qwen3's projections"},
		{"past the layers", nil, func(ts map[string]qwen3.Tensor) {
			ts["base_model.model.model.layers.2.self_attn.q_proj.lora_A.weight"] = ts[q0+"lora_A.weight"]
		}, "layer 2 is past config.json's num_hidden_layers 2"},
		{"not targeted", set("target_modules", []string{"q_proj"}), nil, "base_model.model.model.layers.0.mlp.down_proj.lora_A.weight: down_proj is not among adapter_config.json's target_modules [q_proj]"},
		{"transposed A", nil, func(ts map[string]qwen3.Tensor) {
			a := ts[q0+"lora_A.weight"]
			a.Shape = []int{a.Shape[1], a.Shape[0]}
			ts[q0+"lora_A.weight"] = a
		}, weights + q0 + "lora_A.weight: shape [16 2], but r 2 and config.json give [2 16]"},
		{"rank disagrees", set("r", 3), nil, "but r 3 and config.json give"},
	} {
		dir := editAdapter(t, src, c.edit, c.tensors)
		_, err := qwen3.ReadAdapter(dir, cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %q", c.name, err, c.want)
		}
	}
	for name, edit := range map[string]func(map[string]any){
		"all-linear": set("target_modules", "all-linear"),
		"off values": func(d map[string]any) {
			d["use_qalora"], d["exclude_modules"], d["rank_pattern"], d["trainable_token_indices"] = false, nil, nil, nil
		},
		"training": func(d map[string]any) {
			d["lora_dropout"], d["peft_version"], d["megatron_core"], d["init_lora_weights"] = 0.1, "0.17.1", "megatron.core", "gaussian"
		},
		"minimal": func(d map[string]any) {
			maps.DeleteFunc(d, func(k string, _ any) bool {
				return !slices.Contains([]string{"peft_type", "r", "lora_alpha", "target_modules", "use_rslora"}, k)
			})
		},
		"null task_type": set("task_type", nil),
	} {
		if _, err := qwen3.ReadAdapter(editAdapter(t, src, edit, nil), cfg); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	pickle := t.TempDir()
	data, _ := os.ReadFile(filepath.Join(src, qwen3.AdapterConfigFile))
	_ = os.WriteFile(filepath.Join(pickle, qwen3.AdapterConfigFile), data, 0o644)
	_ = os.WriteFile(filepath.Join(pickle, "adapter_model.bin"), []byte("PK"), 0o644)
	if _, err := qwen3.ReadAdapter(pickle, cfg); err == nil || !strings.Contains(err.Error(), "adapter_model.bin (torch's pickle format) is not read") {
		t.Errorf("pickle: %v", err)
	}
	if err := os.Remove(filepath.Join(pickle, "adapter_model.bin")); err != nil {
		t.Fatal(err)
	}
	if _, err := qwen3.ReadAdapter(pickle, cfg); err == nil || !strings.Contains(err.Error(), "adapter_model.safetensors: absent") {
		t.Errorf("no weights: %v", err)
	}
	other := qwen3test.Config()
	other.HiddenSize = 24
	if _, err := qwen3.ReadAdapter(src, other); err == nil || !strings.Contains(err.Error(), "mlp.down_proj.lora_B.weight: shape [16 2], but r 2 and config.json give [24 2]") {
		t.Errorf("another model: %v", err)
	}
}

// Where /usr/bin/python3 imports peft, peft reads the folder: LoraConfig.from_pretrained gives the
// same r, α, targets and rsLoRA, and load_peft_weights the same keys and shapes.
func TestAdapterLoadsInPEFT(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import peft").Run(); err != nil {
		t.Skipf("%s cannot import peft (%v): the check with peft did not run", py, err)
	}
	cfg := qwen3test.Config()
	dir, a := qwen3test.AdapterFolder(t, cfg, qwen3test.LoRAConfig(), 4, qwen3.BF16)
	script := `import json, sys
from peft import LoraConfig
from peft.utils import load_peft_weights
c = LoraConfig.from_pretrained(sys.argv[1])
w = load_peft_weights(sys.argv[1], device="cpu")
print(json.dumps({"r": c.r, "alpha": c.lora_alpha, "rslora": c.use_rslora, "targets": sorted(c.target_modules),
    "shapes": {k: list(v.shape) for k, v in w.items()}}))`
	out, err := exec.Command(py, "-c", script, dir).Output()
	if err != nil {
		t.Fatalf("peft: %v", err)
	}
	var got struct {
		R       int
		Alpha   float64
		RSLoRA  bool `json:"rslora"`
		Targets []string
		Shapes  map[string][]int
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.R != a.Config.Rank || got.Alpha != a.Config.Alpha || !got.RSLoRA || !slices.Equal(got.Targets, slices.Sorted(slices.Values(a.Config.TargetModules))) {
		t.Errorf("peft read %+v", got)
	}
	for k, v := range qwen3.AdapterTensors(a) {
		if !slices.Equal(got.Shapes[k], v.Shape) {
			t.Errorf("peft: %s shape %v, want %v", k, got.Shapes[k], v.Shape)
		}
	}
}
