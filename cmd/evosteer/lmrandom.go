package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/gpu/qwen3"
	"github.com/evosteer/evosteer-go/gpu/qwen3/qwen3tok"
)

func newLMRandomCmd() *cobra.Command {
	var (
		out   string
		seed  uint64
		std   float64
		dtype string
		force bool
		def   = qwen3.TinyShape()
		shape = def
	)
	cmd := &cobra.Command{
		Use:   "random --out DIR [--layers N] [--hidden N] [--heads N] [--kv-heads N] [--head-dim N] [--intermediate N] [--tied=false] [--seed S] [--std X]",
		Short: "Write a random Qwen3 model folder with Qwen3's real tokenizer (the model of make lm-demo)",
		Long: `Write a Hugging Face model folder of a dense Qwen3 with random weights and Qwen3's own tokenizer,
for running the language-model orchestrator (policy.kind causal_lm) where no real checkpoint is
at hand; make lm-demo trains one. Nothing is downloaded: the tokenizer files are embedded in the
program (byte for byte as Qwen/Qwen3 ships them), and the weights are drawn from a seeded
generator, so the same flags write the same bytes. A random model knows nothing: it shows that the
machinery runs, never what a trained language model would do.

DIR receives:

  config.json             model_type qwen3 (Qwen3ForCausalLM), the shape of the flags, Qwen3's
                          vocabulary (151,936) and eos <|im_end|>, rope θ 10⁶, RMSNorm ε 10⁻⁶
  model.safetensors       the weights (--dtype): projections and embeddings N(0, std²), norms
                          1 + N(0, 0.1²)
  tokenizer.json, tokenizer_config.json
                          Qwen3's byte-level BPE and its chat template

The default shape is the tests' tiny one: 2 layers, hidden 32, 1 attention head over 1 key/value
head of width 16, MLP 64, tied embedding and lm_head; about 4.9 M parameters, nearly all of them
the vocabulary's embedding (19 MiB as F32). --std 0.3 (the tests' value) makes every part of the
forward move the logits: at hidden 32 a logit's spread is about √32 · 0.3 ≈ 1.7, so the untrained
model's distribution over a decision's legal actions is neither uniform nor one-hot.

The folder is written whole into a hidden temporary folder beside DIR and renamed into place, so
DIR is never left half written. An existing DIR must be empty; --force replaces a folder that
holds nothing but the four files above (one this command wrote), never anything else.
` + "`evosteer lm check --model DIR`" + ` reports what was written.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return lmRandom(cmd.OutOrStdout(), out, shape, seed, std, dtype, force)
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "the model folder to write (new, or empty; --force to replace one this command wrote)")
	f.IntVar(&shape.Layers, "layers", def.Layers, "num_hidden_layers")
	f.IntVar(&shape.Hidden, "hidden", def.Hidden, "hidden_size")
	f.IntVar(&shape.Heads, "heads", def.Heads, "num_attention_heads")
	f.IntVar(&shape.KVHeads, "kv-heads", def.KVHeads, "num_key_value_heads (must divide --heads)")
	f.IntVar(&shape.HeadDim, "head-dim", def.HeadDim, "head_dim (even: the rotary embedding rotates pairs)")
	f.IntVar(&shape.Intermediate, "intermediate", def.Intermediate, "intermediate_size, the MLP's width")
	f.BoolVar(&shape.Tied, "tied", def.Tied, "tie the lm_head to the embedding (--tied=false: a separate lm_head)")
	f.Uint64Var(&seed, "seed", 1, "the weights' generator seed")
	f.Float64Var(&std, "std", qwen3.RandomStd, "standard deviation of the projections and embeddings")
	f.StringVar(&dtype, "dtype", string(qwen3.F32), "the weights' dtype in model.safetensors: F32, BF16 or F16")
	f.BoolVar(&force, "force", false, "replace DIR when it holds only a random model folder's files")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

// lmRandom writes the random model folder and says what it wrote.
func lmRandom(w io.Writer, out string, s qwen3.Shape, seed uint64, std float64, dtype string, force bool) error {
	if out == "" {
		return fmt.Errorf("lm random: --out is empty: give the model folder to write")
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"--layers", s.Layers}, {"--hidden", s.Hidden}, {"--heads", s.Heads}, {"--kv-heads", s.KVHeads}, {"--head-dim", s.HeadDim}, {"--intermediate", s.Intermediate}} {
		if f.v <= 0 {
			return fmt.Errorf("lm random: %s %d: must be positive", f.name, f.v)
		}
	}
	if s.Heads%s.KVHeads != 0 {
		return fmt.Errorf("lm random: --kv-heads %d does not divide --heads %d (grouped-query attention shares each key/value head among a whole number of query heads)", s.KVHeads, s.Heads)
	}
	if s.HeadDim%2 != 0 {
		return fmt.Errorf("lm random: --head-dim %d: must be even (the rotary embedding rotates pairs of a head's dimensions)", s.HeadDim)
	}
	if !(std > 0) || math.IsInf(std, 0) {
		return fmt.Errorf("lm random: --std %v: must be a positive finite number", std)
	}
	dt := qwen3.DType(dtype)
	if dt.Size() == 0 {
		return fmt.Errorf("lm random: --dtype %q: not one of F32, BF16, F16", dtype)
	}
	cfg := qwen3.QwenVocabConfig(s)
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("lm random: the flags' shape would be refused: %s", strings.TrimPrefix(err.Error(), "qwen3: "))
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 && !force {
		return fmt.Errorf("lm random: %s exists and is not empty (it holds %q): give a new or empty folder, or --force to replace a model folder lm random wrote", out, entries[0].Name())
	}
	if err := qwen3.WriteRandomFolder(out, cfg, seed, std, dt, force); err != nil {
		return fmt.Errorf("lm random: %s", strings.TrimPrefix(err.Error(), "qwen3: "))
	}
	n, _ := cfg.ParamCount()
	tied := "tied"
	if !s.Tied {
		tied = "untied"
	}
	fmt.Fprintf(w, "wrote %s: a random Qwen3 (%d layers, hidden %d, %d heads / %d kv heads, head_dim %d, MLP %d, %s; vocab %d) of %d parameters, %s weights (seed %d, std %g), and Qwen3's tokenizer\n",
		out, s.Layers, s.Hidden, s.Heads, s.KVHeads, s.HeadDim, s.Intermediate, tied, qwen3tok.VocabSize, n, dt, seed, std)
	return nil
}
