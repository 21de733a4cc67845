package qwen3

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/evosteer/evosteer-go/internal/atomicfile"
	"github.com/evosteer/evosteer-go/internal/tokenizer"
)

// Tensor is a dense row-major float32 tensor: the weights are kept in float32 whatever their
// dtype on disk (bf16 widens exactly).
type Tensor struct {
	Shape []int
	Data  []float32
}

// Layer is one decoder layer's weights, named as in the Hugging Face checkpoint
// (model.layers.{i}.…). Projections are [out, in], as torch's Linear stores them.
type Layer struct {
	InputNorm    Tensor // input_layernorm.weight [hidden]
	QProj        Tensor // self_attn.q_proj.weight [heads·head_dim, hidden]
	KProj        Tensor // self_attn.k_proj.weight [kv_heads·head_dim, hidden]
	VProj        Tensor // self_attn.v_proj.weight [kv_heads·head_dim, hidden]
	OProj        Tensor // self_attn.o_proj.weight [hidden, heads·head_dim]
	QNorm        Tensor // self_attn.q_norm.weight [head_dim]
	KNorm        Tensor // self_attn.k_norm.weight [head_dim]
	PostAttnNorm Tensor // post_attention_layernorm.weight [hidden]
	GateProj     Tensor // mlp.gate_proj.weight [intermediate, hidden]
	UpProj       Tensor // mlp.up_proj.weight [intermediate, hidden]
	DownProj     Tensor // mlp.down_proj.weight [hidden, intermediate]
}

// Weights are a model's weights. LMHead is Embed when the configuration ties them.
type Weights struct {
	Embed  Tensor // model.embed_tokens.weight [vocab, hidden]
	Layers []Layer
	Norm   Tensor // model.norm.weight [hidden]
	LMHead Tensor // lm_head.weight [vocab, hidden]
}

// The files of a model folder.
const (
	SingleFile = "model.safetensors"
	IndexFile  = "model.safetensors.index.json"
)

// spec is one checkpoint tensor: its Hugging Face name, its shape under a Config, where it goes.
type spec struct {
	name  string
	shape []int
	at    func(*Weights) *Tensor
}

// specs are the tensors cfg's checkpoint holds, in checkpoint order (lm_head.weight only when
// untied).
func specs(cfg Config) []spec {
	h, q, kv, in, hd := cfg.HiddenSize, cfg.QDim(), cfg.KVDim(), cfg.IntermediateSize, cfg.HeadDim
	out := []spec{{"model.embed_tokens.weight", []int{cfg.VocabSize, h}, func(w *Weights) *Tensor { return &w.Embed }}}
	for i := range cfg.NumHiddenLayers {
		layer := func(f func(*Layer) *Tensor) func(*Weights) *Tensor {
			return func(w *Weights) *Tensor { return f(&w.Layers[i]) }
		}
		p := fmt.Sprintf("model.layers.%d.", i)
		out = append(out,
			spec{p + "input_layernorm.weight", []int{h}, layer(func(l *Layer) *Tensor { return &l.InputNorm })},
			spec{p + "self_attn.q_proj.weight", []int{q, h}, layer(func(l *Layer) *Tensor { return &l.QProj })},
			spec{p + "self_attn.k_proj.weight", []int{kv, h}, layer(func(l *Layer) *Tensor { return &l.KProj })},
			spec{p + "self_attn.v_proj.weight", []int{kv, h}, layer(func(l *Layer) *Tensor { return &l.VProj })},
			spec{p + "self_attn.o_proj.weight", []int{h, q}, layer(func(l *Layer) *Tensor { return &l.OProj })},
			spec{p + "self_attn.q_norm.weight", []int{hd}, layer(func(l *Layer) *Tensor { return &l.QNorm })},
			spec{p + "self_attn.k_norm.weight", []int{hd}, layer(func(l *Layer) *Tensor { return &l.KNorm })},
			spec{p + "post_attention_layernorm.weight", []int{h}, layer(func(l *Layer) *Tensor { return &l.PostAttnNorm })},
			spec{p + "mlp.gate_proj.weight", []int{in, h}, layer(func(l *Layer) *Tensor { return &l.GateProj })},
			spec{p + "mlp.up_proj.weight", []int{in, h}, layer(func(l *Layer) *Tensor { return &l.UpProj })},
			spec{p + "mlp.down_proj.weight", []int{h, in}, layer(func(l *Layer) *Tensor { return &l.DownProj })},
		)
	}
	out = append(out, spec{"model.norm.weight", []int{h}, func(w *Weights) *Tensor { return &w.Norm }})
	if !cfg.TieWordEmbeddings {
		out = append(out, spec{"lm_head.weight", []int{cfg.VocabSize, h}, func(w *Weights) *Tensor { return &w.LMHead }})
	}
	return out
}

// harmless are extra tensors a checkpoint may carry that are ignored: the rotary embedding's
// inv_freq buffer, which older transformers saved and which is recomputed from rope_theta.
var harmless = regexp.MustCompile(`^model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq$`)

// located is a tensor of a checkpoint and the file holding it.
type located struct {
	file *stFile
	e    stEntry
}

// ReadWeights reads dir's weights (model.safetensors, or the shards model.safetensors.index.json
// names) for cfg, validated with the default Limits.
func ReadWeights(dir string, cfg Config) (Weights, error) { return Limits{}.ReadWeights(dir, cfg) }

// ReadWeights reads dir's weights for cfg under l. Every tensor cfg implies must be present with
// its shape; an extra tensor is refused, except the rotary inv_freq buffers (ignored) and, when
// tie_word_embeddings, an lm_head.weight equal to the embedding. The files are mapped and each
// tensor widened to float32 once.
func (l Limits) ReadWeights(dir string, cfg Config) (Weights, error) {
	if err := l.Validate(cfg); err != nil {
		return Weights{}, err
	}
	tensors, files, err := locate(dir)
	for _, f := range files {
		defer f.Close()
	}
	if err != nil {
		return Weights{}, err
	}
	tiedHead, err := checkLocated(dir, cfg, tensors, files)
	if err != nil {
		return Weights{}, err
	}
	w := Weights{Layers: make([]Layer, cfg.NumHiddenLayers)}
	want := specs(cfg)
	for _, s := range want {
		t := tensors[s.name]
		*s.at(&w) = t.file.tensor(s.name)
	}
	if cfg.TieWordEmbeddings {
		w.LMHead = w.Embed
		if tiedHead != nil {
			if err := tiedHeadError(tiedHead, w.Embed); err != nil {
				return Weights{}, err
			}
		}
	}
	return w, nil
}

// checkLocated checks a checkpoint's tensors against cfg, from the headers: every tensor cfg
// implies, with its shape, and no extra one but the harmless and a tied lm_head.weight, which it
// returns (nil when absent) for its values to be compared with the embedding's.
func checkLocated(dir string, cfg Config, tensors map[string]located, files []*stFile) (*located, error) {
	want := specs(cfg)
	for _, s := range want {
		t, ok := tensors[s.name]
		if !ok {
			return nil, fmt.Errorf("qwen3: %s: %s: missing (config.json asks for it, shape %v)", where(dir, files), s.name, s.shape)
		}
		if !slices.Equal(t.e.Shape, s.shape) {
			return nil, fmt.Errorf("qwen3: %s: %s: shape %v disagrees with config.json, which gives %v", t.file.path, s.name, t.e.Shape, s.shape)
		}
	}
	known := map[string]bool{}
	for _, s := range want {
		known[s.name] = true
	}
	var tiedHead *located
	for _, name := range slices.Sorted(maps.Keys(tensors)) {
		switch t := tensors[name]; {
		case known[name] || harmless.MatchString(name):
		case name == "lm_head.weight" && cfg.TieWordEmbeddings:
			tiedHead = &t
		default:
			return nil, fmt.Errorf("qwen3: %s: %s: an extra tensor (shape %v) that a %s config.json does not have", t.file.path, name, t.e.Shape, describe(cfg))
		}
	}
	return tiedHead, nil
}

// tiedHeadError is the error of a stored lm_head.weight that differs from the embedding emb
// although tie_word_embeddings is true.
func tiedHeadError(head *located, emb Tensor) error {
	t := head.file.tensor("lm_head.weight")
	if !slices.Equal(t.Shape, emb.Shape) || !slices.Equal(t.Data, emb.Data) {
		return fmt.Errorf("qwen3: %s: lm_head.weight: differs from model.embed_tokens.weight, but config.json's tie_word_embeddings is true", head.file.path)
	}
	return nil
}

// WeightFiles is what a model folder's safetensors files hold, from their headers.
type WeightFiles struct {
	Files   []string // the files' names in the folder, sorted
	Sharded bool     // model.safetensors.index.json and its shards, not model.safetensors
	Tensors int
	DTypes  []DType // sorted
	Bytes   int64   // the tensors' bytes on disk
}

// InspectWeights reads the headers of dir's weight files (model.safetensors, or the index and its
// shards, checked against each other) without reading the tensors.
func InspectWeights(dir string) (WeightFiles, error) {
	tensors, files, err := locate(dir)
	for _, f := range files {
		defer f.Close()
	}
	if err != nil {
		return WeightFiles{}, err
	}
	out := WeightFiles{Tensors: len(tensors)}
	for _, f := range files {
		out.Files = append(out.Files, filepath.Base(f.path))
		out.Bytes += int64(len(f.buf))
	}
	out.Sharded = len(files) != 1 || out.Files[0] != SingleFile
	dtypes := map[DType]bool{}
	for _, t := range tensors {
		dtypes[t.e.DType] = true
	}
	out.DTypes = slices.Sorted(maps.Keys(dtypes))
	return out, nil
}

// CheckWeights checks dir's weights against cfg as ReadWeights does, from the headers (a stored
// tied lm_head.weight and the embedding are the only tensors read), under l.
func (l Limits) CheckWeights(dir string, cfg Config) error {
	if err := l.Validate(cfg); err != nil {
		return err
	}
	tensors, files, err := locate(dir)
	for _, f := range files {
		defer f.Close()
	}
	if err != nil {
		return err
	}
	tiedHead, err := checkLocated(dir, cfg, tensors, files)
	if err != nil || tiedHead == nil {
		return err
	}
	emb := tensors["model.embed_tokens.weight"]
	return tiedHeadError(tiedHead, emb.file.tensor("model.embed_tokens.weight"))
}

func describe(cfg Config) string {
	tied := "untied"
	if cfg.TieWordEmbeddings {
		tied = "tied"
	}
	return fmt.Sprintf("%d-layer %s", cfg.NumHiddenLayers, tied)
}

// where names the files of a checkpoint for an error about a tensor none of them holds.
func where(dir string, files []*stFile) string {
	if len(files) == 1 {
		return files[0].path
	}
	return filepath.Join(dir, IndexFile)
}

// locate opens dir's safetensors files and maps each tensor name to its file, checking a sharded
// checkpoint's index against the shards' headers. The files are returned to be closed even on an
// error.
func locate(dir string) (map[string]located, []*stFile, error) {
	single, index := filepath.Join(dir, SingleFile), filepath.Join(dir, IndexFile)
	hasSingle, err := fileExists(single)
	if err != nil {
		return nil, nil, err
	}
	hasIndex, err := fileExists(index)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case hasSingle && hasIndex:
		return nil, nil, fmt.Errorf("qwen3: %s: both %s and %s: which holds the weights is ambiguous", dir, SingleFile, IndexFile)
	case !hasSingle && !hasIndex:
		return nil, nil, fmt.Errorf("qwen3: %s: neither %s nor %s (a sharded checkpoint's index)", dir, SingleFile, IndexFile)
	case hasSingle:
		f, err := openSafetensors(single)
		if err != nil {
			return nil, nil, err
		}
		out := map[string]located{}
		for _, name := range f.names {
			out[name] = located{f, f.entries[name]}
		}
		return out, []*stFile{f}, nil
	}
	data, err := os.ReadFile(index)
	if err != nil {
		return nil, nil, fmt.Errorf("qwen3: %w", err)
	}
	var idx struct {
		Metadata  map[string]any    `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, nil, fmt.Errorf("qwen3: %s: %v", index, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, nil, fmt.Errorf("qwen3: %s: weight_map: absent or empty", index)
	}
	byShard := map[string][]string{}
	for name, shard := range idx.WeightMap {
		if shard != filepath.Base(shard) || shard == "." || shard == ".." || !strings.HasSuffix(shard, ".safetensors") {
			return nil, nil, fmt.Errorf("qwen3: %s: weight_map[%q]: %q is not a .safetensors file of the folder", index, name, shard)
		}
		byShard[shard] = append(byShard[shard], name)
	}
	out := map[string]located{}
	var files []*stFile
	for _, shard := range slices.Sorted(maps.Keys(byShard)) {
		path := filepath.Join(dir, shard)
		if ok, err := fileExists(path); err != nil {
			return nil, files, err
		} else if !ok {
			names := byShard[shard]
			slices.Sort(names)
			return nil, files, fmt.Errorf("qwen3: %s: weight_map[%q]: the shard %s does not exist", index, names[0], shard)
		}
		f, err := openSafetensors(path)
		if err != nil {
			return nil, files, err
		}
		files = append(files, f)
		for _, name := range f.names {
			if prev, ok := out[name]; ok {
				return nil, files, fmt.Errorf("qwen3: %s: %s: the tensor is in two shards, %s and %s", index, name, filepath.Base(prev.file.path), shard)
			}
			out[name] = located{f, f.entries[name]}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(out)) {
		if got, in := filepath.Base(out[name].file.path), idx.WeightMap[name]; got != in {
			if in == "" {
				return nil, files, fmt.Errorf("qwen3: %s: %s: the tensor of shard %s is not in weight_map", index, name, got)
			}
			return nil, files, fmt.Errorf("qwen3: %s: weight_map[%q]: names shard %s, but the tensor is in %s", index, name, in, got)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(idx.WeightMap)) {
		if _, ok := out[name]; !ok {
			return nil, files, fmt.Errorf("qwen3: %s: weight_map[%q]: the shard %s does not hold the tensor", index, name, idx.WeightMap[name])
		}
	}
	return out, files, nil
}

// checkWeights checks w's tensors against cfg's shapes.
func checkWeights(cfg Config, w Weights) error {
	if len(w.Layers) != cfg.NumHiddenLayers {
		return fmt.Errorf("qwen3: the weights have %d layers, config num_hidden_layers is %d", len(w.Layers), cfg.NumHiddenLayers)
	}
	for _, s := range specs(cfg) {
		t := s.at(&w)
		if !slices.Equal(t.Shape, s.shape) || len(t.Data) != product(s.shape) {
			return fmt.Errorf("qwen3: %s: shape %v with %d values, the config gives %v", s.name, t.Shape, len(t.Data), s.shape)
		}
	}
	if !cfg.TieWordEmbeddings && (!slices.Equal(w.LMHead.Shape, []int{cfg.VocabSize, cfg.HiddenSize})) {
		return fmt.Errorf("qwen3: lm_head.weight: shape %v, the config gives %v", w.LMHead.Shape, []int{cfg.VocabSize, cfg.HiddenSize})
	}
	return nil
}

// WriteFolder writes cfg and w as a Hugging Face model folder: config.json (torch_dtype set to
// dtype) and model.safetensors in dtype. Tied weights write no lm_head.weight.
func WriteFolder(dir string, cfg Config, w Weights, dtype DType) error {
	return WriteShardedFolder(dir, cfg, w, dtype, 1)
}

// WriteShardedFolder is WriteFolder with the tensors split into shards files
// model-0000i-of-0000n.safetensors (contiguous runs of the checkpoint order) and their
// model.safetensors.index.json; shards 1 writes the single model.safetensors.
func WriteShardedFolder(dir string, cfg Config, w Weights, dtype DType, shards int) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := checkWeights(cfg, w); err != nil {
		return err
	}
	if dtype.Size() == 0 {
		return fmt.Errorf("qwen3: dtype %q is not implemented (BF16, F16, F32)", dtype)
	}
	all := specs(cfg)
	if shards < 1 || shards > len(all) {
		return fmt.Errorf("qwen3: %d shards for %d tensors", shards, len(all))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("qwen3: %w", err)
	}
	cfg.TorchDtype = dtype.torchName()
	cfg.file = ""
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("qwen3: config.json: %w", err)
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, ConfigFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("qwen3: %w", err)
	}
	if shards == 1 {
		tensors := map[string]Tensor{}
		for _, s := range all {
			tensors[s.name] = *s.at(&w)
		}
		return WriteSafetensors(filepath.Join(dir, SingleFile), tensors, dtype, map[string]string{"format": "pt"})
	}
	weightMap := map[string]string{}
	total := 0
	for i := range shards {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, shards)
		tensors := map[string]Tensor{}
		for _, s := range all[i*len(all)/shards : (i+1)*len(all)/shards] {
			tensors[s.name] = *s.at(&w)
			weightMap[s.name] = name
			total += product(s.shape) * dtype.Size()
		}
		if err := WriteSafetensors(filepath.Join(dir, name), tensors, dtype, map[string]string{"format": "pt"}); err != nil {
			return err
		}
	}
	index, err := json.MarshalIndent(map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}, "", "  ")
	if err != nil {
		return fmt.Errorf("qwen3: %s: %w", IndexFile, err)
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, IndexFile), append(index, '\n'), 0o644); err != nil {
		return fmt.Errorf("qwen3: %w", err)
	}
	return nil
}

// The tokenizer's files in a model folder.
const (
	TokenizerFile       = "tokenizer.json"
	TokenizerConfigFile = "tokenizer_config.json"
)

// Folder is a model folder read whole: its configuration, weights and tokenizer.
type Folder struct {
	Dir             string
	Config          Config
	Weights         Weights
	Tokenizer       *tokenizer.Tokenizer
	TokenizerConfig tokenizer.Config // its ChatTemplate() says whether the template is implemented
}

// Open reads a model folder with the default Limits.
func Open(dir string) (*Folder, error) { return Limits{}.Open(dir) }

// Open reads dir's config.json (validated under l before anything is allocated), tokenizer.json
// and tokenizer_config.json (checked against the configuration: every token id below vocab_size,
// the special tokens in the vocabulary), then the weights.
func (l Limits) Open(dir string) (*Folder, error) {
	cfg, err := l.ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	tok, tcfg, err := ReadTokenizer(dir, cfg)
	if err != nil {
		return nil, err
	}
	w, err := l.ReadWeights(dir, cfg)
	if err != nil {
		return nil, err
	}
	return &Folder{Dir: dir, Config: cfg, Weights: w, Tokenizer: tok, TokenizerConfig: tcfg}, nil
}

// ReadTokenizer reads dir's tokenizer.json and tokenizer_config.json and checks them against cfg:
// no more tokens than vocab_size, the special tokens (eos, bos, pad) in the vocabulary. Whether
// the chat template is one this project renders is tcfg.ChatTemplate()'s answer.
func ReadTokenizer(dir string, cfg Config) (tok *tokenizer.Tokenizer, tcfg tokenizer.Config, err error) {
	tok, err = tokenizer.Load(filepath.Join(dir, TokenizerFile), tokenizer.Options{})
	if err != nil {
		return nil, tokenizer.Config{}, fmt.Errorf("qwen3: %w", err)
	}
	if tok.VocabSize() > cfg.VocabSize {
		return nil, tokenizer.Config{}, fmt.Errorf("qwen3: %s: %d tokens, more than %s's vocab_size %d", filepath.Join(dir, TokenizerFile), tok.VocabSize(), ConfigFile, cfg.VocabSize)
	}
	tcfg, err = tokenizer.LoadConfig(filepath.Join(dir, TokenizerConfigFile))
	if err != nil {
		return nil, tokenizer.Config{}, fmt.Errorf("qwen3: %w", err)
	}
	for _, sp := range []struct{ field, token string }{{"eos_token", tcfg.EOS}, {"bos_token", tcfg.BOS}, {"pad_token", tcfg.Pad}} {
		if _, ok := tok.TokenID(sp.token); sp.token != "" && !ok {
			return nil, tokenizer.Config{}, fmt.Errorf("qwen3: %s: %s: %q is not a token of %s", filepath.Join(dir, TokenizerConfigFile), sp.field, sp.token, TokenizerFile)
		}
	}
	return tok, tcfg, nil
}
