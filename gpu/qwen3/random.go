package qwen3

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/evosteer/evosteer-go/gpu/qwen3/qwen3tok"
)

// RandomWeights are weights of cfg's shapes drawn from a seeded generator: projections and
// embeddings N(0, std²), norms 1 + N(0, 0.1²) so that a test sees them act. A random model of the
// real architecture is what the tests run, since no weights can be downloaded where this is built.
func RandomWeights(cfg Config, seed uint64, std float64) Weights {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	mat := func(dims ...int) Tensor {
		t := Tensor{Shape: dims, Data: make([]float32, product(dims))}
		for i := range t.Data {
			t.Data[i] = float32(rng.NormFloat64() * std)
		}
		return t
	}
	norm := func(n int) Tensor {
		t := Tensor{Shape: []int{n}, Data: make([]float32, n)}
		for i := range t.Data {
			t.Data[i] = float32(1 + 0.1*rng.NormFloat64())
		}
		return t
	}
	h, q, kv, in := cfg.HiddenSize, cfg.QDim(), cfg.KVDim(), cfg.IntermediateSize
	w := Weights{Embed: mat(cfg.VocabSize, h)}
	for range cfg.NumHiddenLayers {
		w.Layers = append(w.Layers, Layer{
			InputNorm: norm(h), QProj: mat(q, h), KProj: mat(kv, h), VProj: mat(kv, h), OProj: mat(h, q),
			QNorm: norm(cfg.HeadDim), KNorm: norm(cfg.HeadDim), PostAttnNorm: norm(h),
			GateProj: mat(in, h), UpProj: mat(in, h), DownProj: mat(h, in),
		})
	}
	w.Norm = norm(h)
	if cfg.TieWordEmbeddings {
		w.LMHead = w.Embed
	} else {
		w.LMHead = mat(cfg.VocabSize, h)
	}
	return w
}

func product(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// RandomStd is the standard deviation of the random models' projections and embeddings (the
// tests' and `evosteer lm random`'s): large enough that every part of the forward moves the
// logits (at hidden 32 a logit has a standard deviation of about √32 · 0.3 ≈ 1.7, so ρ is neither
// uniform nor one-hot over a decision's actions).
const RandomStd = 0.3

// Shape is the sizes of a dense Qwen3 model: what a random model folder is built from
// (QwenVocabConfig); the vocabulary is the tokenizer's.
type Shape struct {
	Layers       int  // num_hidden_layers
	Hidden       int  // hidden_size
	Intermediate int  // intermediate_size (the MLP)
	Heads        int  // num_attention_heads
	KVHeads      int  // num_key_value_heads
	HeadDim      int  // head_dim
	Tied         bool // tie_word_embeddings: lm_head is the embedding
}

// TinyShape is the shape of the tests' random Qwen3 with Qwen3's vocabulary and of
// `evosteer lm random`'s default (make lm-demo): 2 layers, hidden 32, one query head over one
// key/value head of width 16, MLP 64, tied. Attention over a controller prompt's thousands of
// tokens is what a forward costs on a CPU, and it grows with the heads; the vocabulary's
// embedding (151,936 × 32) is most of its 4.9 M parameters.
func TinyShape() Shape {
	return Shape{Layers: 2, Hidden: 32, Intermediate: 64, Heads: 1, KVHeads: 1, HeadDim: 16, Tied: true}
}

// QwenVocabConfig is the config.json of a Qwen3 of shape s with Qwen3's own vocabulary, read by
// its real tokenizer (qwen3tok): vocab_size 151,936, eos <|im_end|>, and the rest as Qwen3 ships
// it (rope θ 10⁶, RMSNorm ε 10⁻⁶, 40,960 positions, silu). It is not validated (Config.Validate).
func QwenVocabConfig(s Shape) Config {
	return Config{
		Architectures: []string{"Qwen3ForCausalLM"}, ModelType: "qwen3",
		VocabSize: qwen3tok.VocabSize, HiddenSize: s.Hidden, IntermediateSize: s.Intermediate, NumHiddenLayers: s.Layers,
		NumAttentionHeads: s.Heads, NumKeyValueHeads: s.KVHeads, HeadDim: s.HeadDim, HiddenAct: "silu",
		MaxPositionEmbeddings: 40960, RMSNormEps: 1e-6, RopeTheta: 1e6, TieWordEmbeddings: s.Tied,
		EOSTokenID: qwen3tok.EOSTokenID,
	}
}

// randomFolderFiles are the files WriteRandomFolder writes, the only ones a folder it replaces
// may hold.
var randomFolderFiles = []string{ConfigFile, SingleFile, TokenizerFile, TokenizerConfigFile}

// WriteRandomFolder writes a model folder dir of cfg (a Qwen3 vocabulary: QwenVocabConfig) with
// RandomWeights(cfg, seed, std) in dtype as model.safetensors, and Qwen3's own tokenizer.json and
// tokenizer_config.json (qwen3tok). The folder is written whole into a hidden temporary sibling
// and renamed into place, so dir is never a partial folder. An existing dir must be empty, or,
// with replace, hold nothing but the files this writes (a folder it wrote before); anything else
// is refused and left as it was.
func WriteRandomFolder(dir string, cfg Config, seed uint64, std float64, dtype DType, replace bool) error {
	if !(std > 0) || math.IsInf(std, 0) {
		return fmt.Errorf("qwen3: random weights: std %v: must be a positive finite number", std)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.VocabSize < qwen3tok.VocabSize {
		return fmt.Errorf("qwen3: random model: vocab_size %d is below Qwen3's %d, which its tokenizer needs", cfg.VocabSize, qwen3tok.VocabSize)
	}
	dir = filepath.Clean(dir)
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("qwen3: %w", err)
	case len(entries) > 0 && !replace:
		return fmt.Errorf("qwen3: %s: exists and is not empty (it holds %s): refusing to write a model folder there", dir, strconv.Quote(entries[0].Name()))
	default:
		for _, e := range entries {
			if !e.Type().IsRegular() || !slices.Contains(randomFolderFiles, e.Name()) {
				return fmt.Errorf("qwen3: %s: holds %s, which a random model folder does not (%s): refusing to replace it",
					dir, strconv.Quote(e.Name()), strings.Join(randomFolderFiles, ", "))
			}
		}
	}
	return writeFolder(dir, func(tmp string) error {
		if err := WriteFolder(tmp, cfg, RandomWeights(cfg, seed, std), dtype); err != nil {
			return err
		}
		return qwen3tok.Write(tmp)
	})
}
