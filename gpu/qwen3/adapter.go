package qwen3

// PEFT adapter folders, as huggingface/peft saves a LoRA adapter (PeftModel.save_pretrained) and
// vLLM and SGLang load one: adapter_config.json (the LoraConfig's fields, keys sorted, indent 2)
// and adapter_model.safetensors (metadata {"format": "pt"}) holding, for every layer i and
// target module m, base_model.model.model.layers.{i}.{self_attn|mlp}.{m}.lora_A.weight [r, in]
// and ….lora_B.weight [out, r] — the module's path in Qwen3ForCausalLM under PeftModel's
// "base_model.model." with the adapter's name ("default") removed. The projection is then
// W + s·B·A with s = lora_alpha/r, or lora_alpha/√r when use_rslora. PEFT itself requires only
// peft_type in the configuration (the other fields default); vLLM requires r, lora_alpha and
// target_modules, and refuses modules_to_save and DoRA.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/evosteer/evosteer-go/internal/atomicfile"
)

// The files of a PEFT adapter folder.
const (
	AdapterConfigFile  = "adapter_config.json"
	AdapterWeightsFile = "adapter_model.safetensors"
	// adapterPickleFile is the older torch.save format, not read.
	adapterPickleFile = "adapter_model.bin"
)

// adapterKeyPrefix is where Qwen3ForCausalLM's decoder layers sit in a PEFT state dict.
const adapterKeyPrefix = "base_model.model.model.layers."

// adapterKey matches one LoRA tensor of the layout: layer, parent (self_attn or mlp), module, A|B.
var adapterKey = regexp.MustCompile(`^base_model\.model\.model\.layers\.(0|[1-9][0-9]*)\.(self_attn|mlp)\.([a-z_]+)\.lora_(A|B)\.weight$`)

// projectionParent is the submodule of a decoder layer that holds each projection.
func projectionParent(module string) string {
	if module == "gate_proj" || module == "up_proj" || module == "down_proj" {
		return "mlp"
	}
	return "self_attn"
}

// AdapterKey is the safetensors key of layer's module's lora_A (ab "A") or lora_B (ab "B").
func AdapterKey(layer int, module, ab string) string {
	return fmt.Sprintf("%s%d.%s.%s.lora_%s.weight", adapterKeyPrefix, layer, projectionParent(module), module, ab)
}

// checkLoRAConfig refuses a rank that is not positive, a non-finite α and target modules that are
// empty, repeated or not among ModuleNames.
func checkLoRAConfig(c LoRAConfig) error {
	if c.Rank <= 0 {
		return fmt.Errorf("r: %d is not positive", c.Rank)
	}
	if math.IsNaN(c.Alpha) || math.IsInf(c.Alpha, 0) {
		return fmt.Errorf("lora_alpha: %v is not a finite number", c.Alpha)
	}
	if len(c.TargetModules) == 0 {
		return errors.New("target_modules: empty (a LoRA adapter adapts at least one projection)")
	}
	seen := map[string]bool{}
	for _, m := range c.TargetModules {
		if !slices.Contains(ModuleNames, m) {
			return fmt.Errorf("target_modules: %q is not implemented (only %s)", m, strings.Join(ModuleNames, ", "))
		}
		if seen[m] {
			return fmt.Errorf("target_modules: %q appears twice", m)
		}
		seen[m] = true
	}
	return nil
}

// completeAdapter checks a against cfg as a file holds it: checkAdapter's shapes, and every target
// module present in every layer (PEFT adapts each target module of each layer).
func completeAdapter(cfg Config, a Adapter) error {
	if err := checkLoRAConfig(a.Config); err != nil {
		return fmt.Errorf("qwen3: adapter: %w", err)
	}
	if _, err := checkAdapter(cfg, &a); err != nil {
		return err
	}
	for i, layer := range a.Layers {
		for _, m := range a.Config.TargetModules {
			if _, ok := layer[m]; !ok {
				return fmt.Errorf("qwen3: adapter: layer %d: %s: missing (a target module of every layer)", i, m)
			}
		}
	}
	return nil
}

// NewAdapter is a fresh LoRA adapter of lcfg for cfg's model, initialised as PEFT's default
// (init_lora_weights true): every A drawn from kaiming_uniform_ with a = √5, which for A [r, in]
// is U(−1/√in, 1/√in) (gain √(2/(1+a²)) = 1/√3, bound gain·√(3/fan_in)); every B zero, so that
// the adapted model starts equal to the base model. The draws are seeded: layer by layer, the
// target modules in ModuleNames order, A row-major.
func NewAdapter(cfg Config, lcfg LoRAConfig, seed uint64) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkLoRAConfig(lcfg); err != nil {
		return nil, fmt.Errorf("qwen3: adapter: %w", err)
	}
	lcfg.TargetModules = slices.Clone(lcfg.TargetModules)
	rng := rand.New(rand.NewPCG(seed, 0x5851f42d4c957f2d))
	a := &Adapter{Config: lcfg, Layers: make([]map[string]LoRAPair, cfg.NumHiddenLayers)}
	for i := range a.Layers {
		a.Layers[i] = map[string]LoRAPair{}
		for _, m := range ModuleNames {
			if !slices.Contains(lcfg.TargetModules, m) {
				continue
			}
			out, in := projDims(cfg, m)
			bound := 1 / math.Sqrt(float64(in))
			A := Tensor{Shape: []int{lcfg.Rank, in}, Data: make([]float32, lcfg.Rank*in)}
			for j := range A.Data {
				A.Data[j] = float32((2*rng.Float64() - 1) * bound)
			}
			a.Layers[i][m] = LoRAPair{A: A, B: Tensor{Shape: []int{out, lcfg.Rank}, Data: make([]float32, out*lcfg.Rank)}}
		}
	}
	return a, nil
}

// AdapterConfigJSON is the adapter_config.json WriteAdapter writes for a (its bytes: PEFT's
// layout, keys sorted, indented by two spaces, a final newline). The fields are those PEFT's
// LoraConfig saves, with every feature this package does not implement at its off value, so
// that PEFT, vLLM and SGLang read the adapter as plain LoRA: peft_type LORA, task_type
// CAUSAL_LM, r, lora_alpha, target_modules (in ModuleNames order), use_rslora, lora_dropout 0,
// bias none, fan_in_fan_out false, use_dora false, init_lora_weights true, inference_mode true,
// base_model_name_or_path; null or empty layers_to_transform, layers_pattern, rank_pattern,
// alpha_pattern, modules_to_save, layer_replication, auto_mapping and revision.
func AdapterConfigJSON(a Adapter, baseModel string) ([]byte, error) {
	if err := checkLoRAConfig(a.Config); err != nil {
		return nil, fmt.Errorf("qwen3: adapter: %w", err)
	}
	var targets []string
	for _, m := range ModuleNames {
		if slices.Contains(a.Config.TargetModules, m) {
			targets = append(targets, m)
		}
	}
	var base any
	if baseModel != "" {
		base = baseModel
	}
	doc := map[string]any{
		"alpha_pattern":           map[string]any{},
		"auto_mapping":            nil,
		"base_model_name_or_path": base,
		"bias":                    "none",
		"fan_in_fan_out":          false,
		"inference_mode":          true,
		"init_lora_weights":       true,
		"layer_replication":       nil,
		"layers_pattern":          nil,
		"layers_to_transform":     nil,
		"lora_alpha":              json.Number(strconv.FormatFloat(a.Config.Alpha, 'g', -1, 64)),
		"lora_dropout":            json.Number("0.0"),
		"modules_to_save":         nil,
		"peft_type":               "LORA",
		"r":                       a.Config.Rank,
		"rank_pattern":            map[string]any{},
		"revision":                nil,
		"target_modules":          targets,
		"task_type":               "CAUSAL_LM",
		"use_dora":                false,
		"use_rslora":              a.Config.RSLoRA,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("qwen3: %s: %w", AdapterConfigFile, err)
	}
	return buf.Bytes(), nil
}

// AdapterTensors are a's tensors under their PEFT keys.
func AdapterTensors(a Adapter) map[string]Tensor {
	out := map[string]Tensor{}
	for i, layer := range a.Layers {
		for m, p := range layer {
			out[AdapterKey(i, m, "A")] = p.A
			out[AdapterKey(i, m, "B")] = p.B
		}
	}
	return out
}

// WriteAdapter writes a as a PEFT adapter folder dir for cfg's model with float32 tensors;
// baseModel is base_model_name_or_path ("" writes null). See WriteAdapterDType.
func WriteAdapter(dir string, cfg Config, a Adapter, baseModel string) error {
	return WriteAdapterDType(dir, cfg, a, baseModel, F32)
}

// WriteAdapterDType writes a as a PEFT adapter folder dir: adapter_config.json
// (AdapterConfigJSON) and adapter_model.safetensors in dtype (F32, or BF16/F16 rounded to nearest
// even), both deterministic bytes for the same adapter. a must fit cfg (shapes [r, in] and
// [out, r]) and hold every target module in every layer. The folder is written whole into a
// hidden temporary sibling and renamed into place, so that dir is never a partial folder; an
// existing dir is replaced only when it holds nothing but an adapter's files.
func WriteAdapterDType(dir string, cfg Config, a Adapter, baseModel string, dtype DType) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := completeAdapter(cfg, a); err != nil {
		return err
	}
	if dtype.Size() == 0 {
		return fmt.Errorf("qwen3: adapter: dtype %q is not implemented (BF16, F16, F32)", dtype)
	}
	conf, err := AdapterConfigJSON(a, baseModel)
	if err != nil {
		return err
	}
	dir = filepath.Clean(dir)
	if err := replaceableAdapterDir(dir); err != nil {
		return err
	}
	return writeFolder(dir, func(tmp string) error {
		if err := atomicfile.WriteBytes(filepath.Join(tmp, AdapterConfigFile), conf, 0o644); err != nil {
			return fmt.Errorf("qwen3: %w", err)
		}
		return WriteSafetensors(filepath.Join(tmp, AdapterWeightsFile), AdapterTensors(a), dtype, map[string]string{"format": "pt"})
	})
}

// writeFolder fills a new hidden sibling of dir with fill and renames it into place (replacing
// dir, which the caller has checked may be replaced): a reader never sees a partial folder, and
// an error leaves dir as it was.
func writeFolder(dir string, fill func(tmp string) error) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("qwen3: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("qwen3: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; the partial folder on an error
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("qwen3: %w", err)
	}
	if err := fill(tmp); err != nil {
		return err
	}
	if err := atomicfile.SyncDir(tmp); err != nil {
		return fmt.Errorf("qwen3: %w", err)
	}
	if err := atomicfile.ReplaceDir(tmp, dir); err != nil {
		return fmt.Errorf("qwen3: %s: %w", dir, err)
	}
	return nil
}

// adapterFiles are the files an adapter folder may hold that WriteAdapter replaces: its own two,
// the pickle format and the README PEFT writes beside them.
var adapterFiles = []string{AdapterConfigFile, AdapterWeightsFile, adapterPickleFile, "README.md"}

// replaceableAdapterDir refuses to replace dir when it exists and is not a folder of an adapter's
// files only (a model folder given by mistake, or anything else).
func replaceableAdapterDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("qwen3: adapter folder: %w", err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !slices.Contains(adapterFiles, e.Name()) {
			return fmt.Errorf("qwen3: %s: exists and holds %s, which is not an adapter's file (%s): refusing to replace it", dir, strconv.Quote(e.Name()), strings.Join(adapterFiles, ", "))
		}
	}
	return nil
}

// AdapterFolder is a PEFT adapter folder as read: the adapter, and what a check reports of it.
type AdapterFolder struct {
	Dir       string
	Adapter   Adapter
	BaseModel string  // base_model_name_or_path ("" when null or absent)
	DTypes    []DType // the tensors' dtypes on disk, sorted
	Tensors   int     // the tensors of adapter_model.safetensors
}

// ReadAdapter reads the PEFT adapter folder dir for cfg's model (OpenAdapter).
func ReadAdapter(dir string, cfg Config) (Adapter, error) {
	f, err := OpenAdapter(dir, cfg)
	if err != nil {
		return Adapter{}, err
	}
	return f.Adapter, nil
}

// offValue reports whether a JSON value is a feature's off value: null, false, 0, "", {} or [].
func offValue(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case float64:
		return x == 0
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// ignoredAdapterFields are the adapter_config.json fields read as they are, whatever their value:
// provenance, training-only settings (dropout, Megatron's tensor parallelism), the configurations
// of initialisations (their init_lora_weights is what is checked), PEFT's own bookkeeping.
var ignoredAdapterFields = []string{"base_model_name_or_path", "revision", "inference_mode", "auto_mapping", "peft_version",
	"lora_dropout", "megatron_config", "megatron_core", "loftq_config", "eva_config", "corda_config", "lora_ga_config",
	"layers_pattern", "runtime_config", "ensure_weight_tying"}

// OpenAdapter reads the PEFT adapter folder dir for cfg's model. It refuses, naming the file, the
// field or tensor and the value: a peft_type other than LORA, a task_type other than CAUSAL_LM
// (or null); r, lora_alpha or target_modules absent; a target module not among the seven
// projections (target_modules may also be "all-linear", which for Qwen3 is all seven; another
// string is a regular expression, not implemented); fields of features not implemented when not
// at their off value: use_dora, bias other than "none", lora_bias, modules_to_save,
// layers_to_transform, rank_pattern, alpha_pattern, layer_replication, exclude_modules,
// target_parameters, fan_in_fan_out, init_lora_weights other than true, false or "gaussian" (the
// others — PiSSA, OLoRA, LoftQ … — change the base weights), and any field it does not know;
// adapter_model.bin without adapter_model.safetensors; a key not of the layout (or of a module
// not targeted, or a layer past num_hidden_layers); an A or B missing; a shape other than
// [r, in] for A and [out, r] for B.
func OpenAdapter(dir string, cfg Config) (*AdapterFolder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	confPath := filepath.Join(dir, AdapterConfigFile)
	data, err := os.ReadFile(confPath)
	if err != nil {
		return nil, fmt.Errorf("qwen3: %w", err)
	}
	lcfg, base, err := parseAdapterConfig(confPath, data)
	if err != nil {
		return nil, err
	}
	wpath := filepath.Join(dir, AdapterWeightsFile)
	if ok, err := fileExists(wpath); err != nil {
		return nil, err
	} else if !ok {
		if pickle, _ := fileExists(filepath.Join(dir, adapterPickleFile)); pickle {
			return nil, fmt.Errorf("qwen3: %s: %s (torch's pickle format) is not read: save the adapter with safe_serialization (the default) to write %s", dir, adapterPickleFile, AdapterWeightsFile)
		}
		return nil, fmt.Errorf("qwen3: %s: %s: absent", dir, AdapterWeightsFile)
	}
	f, err := openSafetensors(wpath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	a := Adapter{Config: lcfg, Layers: make([]map[string]LoRAPair, cfg.NumHiddenLayers)}
	type pairKey struct {
		layer  int
		module string
	}
	seen := map[pairKey]map[string]bool{} // "A", "B" found
	dtypes := map[DType]bool{}
	for _, name := range f.names {
		e := f.entries[name]
		m := adapterKey.FindStringSubmatch(name)
		if m == nil {
			hint := ""
			if strings.Contains(name, ".default.") {
				hint = "; the adapter's name (\"default\") is still in it, which PEFT removes when it saves"
			} else if strings.Contains(name, "lora_magnitude_vector") {
				hint = "; DoRA's magnitude is not implemented"
			}
			return nil, fmt.Errorf("qwen3: %s: %s: a key not of PEFT's layout for Qwen3 (%s{i}.self_attn|mlp.{module}.lora_A|lora_B.weight)%s", wpath, name, adapterKeyPrefix, hint)
		}
		layer, _ := strconv.Atoi(m[1])
		parent, module, ab := m[2], m[3], m[4]
		switch {
		case !slices.Contains(ModuleNames, module) || projectionParent(module) != parent:
			return nil, fmt.Errorf("qwen3: %s: %s: %s.%s is not one of Qwen3's projections (%s)", wpath, name, parent, module, strings.Join(ModuleNames, ", "))
		case !slices.Contains(lcfg.TargetModules, module):
			return nil, fmt.Errorf("qwen3: %s: %s: %s is not among %s's target_modules %v", wpath, name, module, AdapterConfigFile, lcfg.TargetModules)
		case layer >= cfg.NumHiddenLayers:
			return nil, fmt.Errorf("qwen3: %s: %s: layer %d is past config.json's num_hidden_layers %d", wpath, name, layer, cfg.NumHiddenLayers)
		}
		out, in := projDims(cfg, module)
		want := []int{lcfg.Rank, in}
		if ab == "B" {
			want = []int{out, lcfg.Rank}
		}
		if !slices.Equal(e.Shape, want) {
			return nil, fmt.Errorf("qwen3: %s: %s: shape %v, but r %d and config.json give %v", wpath, name, e.Shape, lcfg.Rank, want)
		}
		key := pairKey{layer, module}
		if seen[key] == nil {
			seen[key] = map[string]bool{}
		}
		seen[key][ab] = true
		if a.Layers[layer] == nil {
			a.Layers[layer] = map[string]LoRAPair{}
		}
		p := a.Layers[layer][module]
		if ab == "A" {
			p.A = f.tensor(name)
		} else {
			p.B = f.tensor(name)
		}
		a.Layers[layer][module] = p
		dtypes[e.DType] = true
	}
	for i := range a.Layers {
		if a.Layers[i] == nil {
			a.Layers[i] = map[string]LoRAPair{}
		}
		for _, module := range lcfg.TargetModules {
			for _, ab := range []string{"A", "B"} {
				if !seen[pairKey{i, module}][ab] {
					return nil, fmt.Errorf("qwen3: %s: %s: missing (target_modules has %s, and PEFT adapts it in every layer)", wpath, AdapterKey(i, module, ab), module)
				}
			}
		}
	}
	return &AdapterFolder{Dir: dir, Adapter: a, BaseModel: base, DTypes: slices.Sorted(maps.Keys(dtypes)), Tensors: len(f.names)}, nil
}

// parseAdapterConfig reads an adapter_config.json's LoRA configuration and base model, refusing
// what OpenAdapter says.
func parseAdapterConfig(path string, data []byte) (LoRAConfig, string, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return LoRAConfig{}, "", fmt.Errorf("qwen3: %s: not a JSON object: %v", path, err)
	}
	bad := func(field string, why string) error {
		v := string(bytes.TrimSpace(raw[field]))
		if v == "" {
			v = "absent"
		} else if len(v) > 120 {
			v = v[:117] + "..."
		}
		return fmt.Errorf("qwen3: %s: %s: %s %s", path, field, v, why)
	}
	get := func(field string, to any) error {
		if err := json.Unmarshal(raw[field], to); err != nil {
			return bad(field, fmt.Sprintf("is not of the type PEFT saves (%v)", err))
		}
		return nil
	}
	has := func(field string) bool { v, ok := raw[field]; return ok && string(v) != "null" }
	var c LoRAConfig
	var s string
	if !has("peft_type") {
		return c, "", bad("peft_type", "(required)")
	}
	if err := get("peft_type", &s); err != nil {
		return c, "", err
	}
	if s != "LORA" {
		return c, "", bad("peft_type", `is not implemented (only "LORA")`)
	}
	if has("task_type") {
		if err := get("task_type", &s); err != nil {
			return c, "", err
		}
		if s != "CAUSAL_LM" {
			return c, "", bad("task_type", `is not implemented (only "CAUSAL_LM", or null)`)
		}
	}
	for _, f := range []string{"r", "lora_alpha", "target_modules"} {
		if !has(f) {
			return c, "", bad(f, "(required: vLLM refuses an adapter without it)")
		}
	}
	var r float64
	if err := get("r", &r); err != nil {
		return c, "", err
	}
	if r != math.Trunc(r) || r <= 0 || r > 1<<20 {
		return c, "", bad("r", "is not a positive integer")
	}
	c.Rank = int(r)
	if err := get("lora_alpha", &c.Alpha); err != nil {
		return c, "", err
	}
	var targets any
	if err := get("target_modules", &targets); err != nil {
		return c, "", err
	}
	switch t := targets.(type) {
	case string:
		if t != "all-linear" {
			return c, "", bad("target_modules", "is a regular expression, which is not implemented (a list of the projections, or \"all-linear\")")
		}
		c.TargetModules = slices.Clone(ModuleNames)
	case []any:
		for _, m := range t {
			name, ok := m.(string)
			if !ok {
				return c, "", bad("target_modules", "is not a list of module names")
			}
			c.TargetModules = append(c.TargetModules, name)
		}
	default:
		return c, "", bad("target_modules", "is not a list of module names")
	}
	if err := checkLoRAConfig(c); err != nil {
		return c, "", fmt.Errorf("qwen3: %s: %w", path, err)
	}
	if has("use_rslora") {
		if err := get("use_rslora", &c.RSLoRA); err != nil {
			return c, "", err
		}
	}
	if has("bias") {
		if err := get("bias", &s); err != nil {
			return c, "", err
		}
		if s != "none" {
			return c, "", bad("bias", `is not implemented (only "none": Qwen3's projections have no biases to train)`)
		}
	}
	if has("init_lora_weights") {
		var init any
		_ = json.Unmarshal(raw["init_lora_weights"], &init)
		if init != true && init != false && init != "gaussian" {
			return c, "", bad("init_lora_weights", "is not implemented (true, false or \"gaussian\": the other initialisations change the base model's weights, and an adapter saved without converting them does not apply to the base model)")
		}
	}
	offWhy := map[string]string{
		"use_dora":            "is not implemented (DoRA: only plain LoRA)",
		"lora_bias":           "is not implemented (a bias on lora_B)",
		"modules_to_save":     "is not implemented (fully trained copies of modules; vLLM refuses them too)",
		"layers_to_transform": "is not implemented (every layer is adapted)",
		"rank_pattern":        "is not implemented (one rank r for every module)",
		"alpha_pattern":       "is not implemented (one lora_alpha for every module)",
		"layer_replication":   "is not implemented (no replicated layers)",
		"exclude_modules":     "is not implemented (every target module of every layer is adapted)",
		"target_parameters":   "is not implemented (LoRA on modules, not on parameters)",
		"fan_in_fan_out":      "is not implemented (Qwen3's projections are torch Linear layers, stored [out, in])",
	}
	for _, f := range slices.Sorted(maps.Keys(raw)) {
		known := slices.Contains([]string{"peft_type", "task_type", "r", "lora_alpha", "target_modules", "use_rslora", "bias", "init_lora_weights"}, f) ||
			slices.Contains(ignoredAdapterFields, f)
		switch why, listed := offWhy[f]; {
		case listed && !offValue(raw[f]):
			return c, "", bad(f, why)
		case !listed && !known && !offValue(raw[f]):
			return c, "", bad(f, "is a field this reader does not know, not at an off value (null, false, 0, empty): a LoRA variant not implemented")
		}
	}
	var base string
	if has("base_model_name_or_path") {
		if err := get("base_model_name_or_path", &base); err != nil {
			return c, "", err
		}
	}
	return c, base, nil
}
