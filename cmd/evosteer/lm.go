package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	gpubackend "github.com/evosteer/evosteer-go/gpu/backend"
	"github.com/evosteer/evosteer-go/gpu/qwen3"
	"github.com/evosteer/evosteer-go/internal/arrowfmt"
	"github.com/evosteer/evosteer-go/internal/tokenizer"
)

func newLMCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lm",
		Short: "The in-process language model: write a random Qwen3, check a local Qwen3 folder and its LoRA adapter",
		Long: `Commands for the in-process language model (gpu/qwen3): a dense Qwen3 causal language
model read from a local Hugging Face folder (config.json, safetensors weights, tokenizer.json and
tokenizer_config.json), optionally with a PEFT LoRA adapter folder (adapter_config.json and
adapter_model.safetensors, as huggingface/peft saves it and vLLM or SGLang load it). Nothing is
downloaded: a model is a folder you bring.

  evosteer lm random --out DIR [--layers N …]     write a random Qwen3 with Qwen3's real tokenizer (make lm-demo)
  evosteer lm check --model DIR [--adapter DIR]   what the folders hold, and whether this build runs them
  evosteer lm score --model DIR [--adapter DIR] --prompt FILE --actions FILE
                                                 each legal action's trie-masked log-probability`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newLMRandomCmd(), newLMCheckCmd(), newLMScoreCmd())
	return cmd
}

func newLMCheckCmd() *cobra.Command {
	var model, adapter string
	cmd := &cobra.Command{
		Use:   "check --model DIR [--adapter DIR]",
		Short: "Report what a Qwen3 model folder (and a LoRA adapter) holds and whether it is supported",
		Long: `Report what a local Qwen3 model folder holds and whether the in-process model (gpu/qwen3)
supports it, reading the same files with the same checks as loading the model does, but only the
safetensors headers of the weights (so it is quick even for a large checkpoint):

  config       config.json: model type, layers, hidden size, heads / key-value heads, head_dim,
               vocabulary, tied embeddings, dtype; what is not implemented (MoE, sliding window,
               rope scaling, another model_type…) is refused naming the field and its value
  size         the parameter count and its bytes as float32, against the memory bound (half the
               machine's memory)
  weights      model.safetensors or the shards of model.safetensors.index.json: tensors, dtypes,
               every tensor config.json implies with its shape, no extra one
  tokenizer    tokenizer.json and tokenizer_config.json (special tokens in the vocabulary)
  chat template  recognised as Qwen3's (by sha256) or not; a folder without one is accepted
               (prompts are rendered with Qwen3's), one with another template is not
  adapter      with --adapter: the PEFT LoRA adapter folder (r, lora_alpha, rsLoRA, target
               modules, every A [r, in] and B [out, r] for this model); DoRA, biases,
               modules_to_save, per-layer ranks and the like are refused naming the field

It prints one line per check: "ok   CHECK: what it holds", "FAIL CHECK: what is wrong, naming
the file, the field and the value", or "skip CHECK: why" (a check that needs a config.json that
was refused). It exits 0 when everything is supported and 1 when anything is not. It writes
nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n := lmCheck(cmd.OutOrStdout(), model, adapter); n > 0 {
				return fmt.Errorf("lm check: %d problem(s) (the FAIL lines above)", n)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "the model folder (config.json, safetensors weights, tokenizer files)")
	cmd.Flags().StringVar(&adapter, "adapter", "", "a PEFT LoRA adapter folder (adapter_config.json, adapter_model.safetensors)")
	_ = cmd.MarkFlagRequired("model")
	return cmd
}

// lmCheck writes the check lines of a model folder (and an adapter folder, when not "") to w and
// returns the number of FAIL lines.
func lmCheck(w io.Writer, model, adapter string) int {
	failed := 0
	line := func(status, check, detail string) {
		if status == "FAIL" {
			failed++
		}
		// Paths, field values and errors come from the folder: escaped, one line each.
		fmt.Fprintf(w, "%-4s %s: %s\n", status, check, arrowfmt.Escape(detail))
	}
	fail := func(check string, err error) { line("FAIL", check, strings.TrimPrefix(err.Error(), "qwen3: ")) }

	lim := qwen3.Limits{}
	cfg, err := lim.ReadConfig(model)
	cfgOK := err == nil
	if err != nil {
		fail("config", err)
		// The parsed fields, when the file parses, still serve the tokenizer's vocabulary check.
		if data, rerr := os.ReadFile(filepath.Join(model, qwen3.ConfigFile)); rerr == nil {
			cfg, _ = qwen3.ParseConfig(filepath.Join(model, qwen3.ConfigFile), data)
		}
	} else {
		line("ok", "config", describeConfig(cfg))
		n, _ := cfg.ParamCount()
		line("ok", "size", fmt.Sprintf("%d parameters, %d bytes (%s) as float32, within the bound of %s", n, 4*n, gib(4*n), gib(qwen3.DefaultMaxWeightBytes())))
	}

	files, err := qwen3.InspectWeights(model)
	switch {
	case err != nil:
		fail("weights", err)
	case !cfgOK:
		line("skip", "weights", describeWeights(files)+"; the tensors' names and shapes are not checked (config.json is refused)")
	default:
		if err := lim.CheckWeights(model, cfg); err != nil {
			fail("weights", err)
		} else {
			line("ok", "weights", describeWeights(files)+"; every tensor config.json implies, with its shape, and no other")
		}
	}

	if cfg.VocabSize <= 0 {
		line("skip", "tokenizer", "needs config.json's vocab_size")
	} else if tok, tcfg, err := qwen3.ReadTokenizer(model, cfg); err != nil {
		fail("tokenizer", err)
	} else {
		line("ok", "tokenizer", fmt.Sprintf("%s: %d tokens (vocab_size %d); %s: eos %s, bos %s, pad %s", qwen3.TokenizerFile, tok.VocabSize(), cfg.VocabSize,
			qwen3.TokenizerConfigFile, quoteOrNull(tcfg.EOS), quoteOrNull(tcfg.BOS), quoteOrNull(tcfg.Pad)))
		checkChatTemplate(line, fail, tcfg)
	}

	if adapter != "" {
		if !cfgOK {
			line("skip", "adapter", "needs a supported config.json to check the shapes against")
		} else if f, err := qwen3.OpenAdapter(adapter, cfg); err != nil {
			fail("adapter", err)
		} else {
			line("ok", "adapter", describeAdapter(f))
		}
	}
	if failed == 0 {
		what := "the model folder"
		if adapter != "" {
			what = "the model folder and the adapter"
		}
		fmt.Fprintf(w, "supported: %s can be loaded by gpu/qwen3\n", what)
	}
	return failed
}

// checkChatTemplate reports tokenizer_config.json's chat template: Qwen3's, none (accepted: the
// prompts are rendered with Qwen3's), or another (a problem: the model would be prompted in a
// format it was not trained on).
func checkChatTemplate(line func(status, check, detail string), fail func(string, error), tcfg tokenizer.Config) {
	if tcfg.ChatTemplateSHA256 == "" {
		line("ok", "chat template", "none in "+qwen3.TokenizerConfigFile+": prompts are rendered with Qwen3's (thinking off)")
		return
	}
	t, err := tcfg.ChatTemplate()
	if err != nil {
		fail("chat template", errors.New(strings.TrimPrefix(err.Error(), "tokenizer: ")))
		return
	}
	line("ok", "chat template", fmt.Sprintf("%s's, recognised by its sha256 %s (end of turn %s)", strings.ToUpper(t.Name[:1])+t.Name[1:], tcfg.ChatTemplateSHA256, t.EndOfTurn))
}

func describeConfig(c qwen3.Config) string {
	tied := "untied embedding and lm_head"
	if c.TieWordEmbeddings {
		tied = "tied embedding and lm_head"
	}
	dtype := c.TorchDtype
	if dtype == "" {
		dtype = "absent"
	}
	arch := "architectures absent"
	if len(c.Architectures) > 0 {
		arch = strings.Join(c.Architectures, ", ")
	}
	return fmt.Sprintf("model_type %s (%s): %d layers, hidden %d, intermediate %d, %d heads / %d kv heads, head_dim %d, vocab %d, %s, torch_dtype %s",
		c.ModelType, arch, c.NumHiddenLayers, c.HiddenSize, c.IntermediateSize, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, c.VocabSize, tied, dtype)
}

func describeWeights(f qwen3.WeightFiles) string {
	where := fmt.Sprintf("%s (single file)", f.Files[0])
	if f.Sharded {
		where = fmt.Sprintf("%s: %d shards", qwen3.IndexFile, len(f.Files))
	}
	dtypes := make([]string, len(f.DTypes))
	for i, d := range f.DTypes {
		dtypes[i] = string(d)
	}
	return fmt.Sprintf("%s, %d tensors, %s, %d bytes", where, f.Tensors, strings.Join(dtypes, "+"), f.Bytes)
}

func describeAdapter(f *qwen3.AdapterFolder) string {
	c := f.Adapter.Config
	scale := fmt.Sprintf("scale α/r = %.4g", c.Scale())
	if c.RSLoRA {
		scale = fmt.Sprintf("rsLoRA, scale α/√r = %.4g", c.Scale())
	}
	dtypes := make([]string, len(f.DTypes))
	for i, d := range f.DTypes {
		dtypes[i] = string(d)
	}
	return fmt.Sprintf("LoRA r %d, lora_alpha %g (%s) on %s in all %d layers; %s: %d tensors, %s; base_model_name_or_path %s",
		c.Rank, c.Alpha, scale, strings.Join(c.TargetModules, " "), len(f.Adapter.Layers), qwen3.AdapterWeightsFile, f.Tensors,
		strings.Join(dtypes, "+"), quoteOrNull(f.BaseModel))
}

func quoteOrNull(s string) string {
	if s == "" {
		return "null"
	}
	return fmt.Sprintf("%q", s)
}

// gib is a byte count in GiB to one decimal (MiB below one GiB, KiB below one MiB).
func gib(n int64) string {
	switch {
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

func newLMScoreCmd() *cobra.Command {
	var model, adapter, system, prompt, actions, backend, dtype string
	cmd := &cobra.Command{
		Use:   "score --model DIR [--adapter DIR] --prompt FILE --actions FILE",
		Short: "Print each legal action's trie-masked log-probability under a Qwen3 model (and its adapter)",
		Long: `Score one decision with the in-process model: the chat prompt of the system message (--system
FILE, optional) and the user message (--prompt FILE), rendered with the folder's chat template
(Qwen3's), and the legal actions of --actions FILE, one per line (an action's canonical JSON;
empty lines are skipped, and the actions must differ). Each action's reply is its text followed
by the template's end of turn, as the served scorer sends it. The prompt is read once (one
prefill); the actions' token paths form a trie, and each branching position costs one cached
extension and a softmax over the tokens allowed there only.

It prints the prompt's token count, the forward calls made, and a line per action: its index,
log ρ (the model, adapter off) and, with --adapter, log θ (adapter on), then the action (control
characters escaped). The log-probabilities of the actions sum, as probabilities, to 1. It writes
nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return lmScore(cmd.OutOrStdout(), model, adapter, system, prompt, actions, backend, dtype)
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "the model folder (config.json, safetensors weights, tokenizer files)")
	cmd.Flags().StringVar(&adapter, "adapter", "", "a PEFT LoRA adapter folder: scores θ (adapter on) beside ρ")
	cmd.Flags().StringVar(&system, "system", "", "a file holding the system message (none when not given)")
	cmd.Flags().StringVar(&prompt, "prompt", "", "a file holding the user message (the controller prompt)")
	cmd.Flags().StringVar(&actions, "actions", "", "a file of the legal actions, one per line")
	cmd.Flags().StringVar(&backend, "backend", "simplego", "the gomlx backend: simplego (CPU), xla or xla:PLUGIN in builds with -tags xla")
	cmd.Flags().StringVar(&dtype, "dtype", "float32", "the graphs' dtype: float32 or float64")
	for _, f := range []string{"model", "prompt", "actions"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}

// lmScore scores the decision of the files with the model folder (and adapter) and writes the
// table to w.
func lmScore(w io.Writer, modelDir, adapterDir, systemFile, promptFile, actionsFile, backend, dtype string) error {
	dt, err := qwen3.GraphDType(dtype)
	if err != nil {
		return fmt.Errorf("lm score: --dtype: %w", err)
	}
	system := ""
	if systemFile != "" {
		data, err := os.ReadFile(systemFile)
		if err != nil {
			return fmt.Errorf("lm score: --system: %w", err)
		}
		system = string(data)
	}
	user, err := os.ReadFile(promptFile)
	if err != nil {
		return fmt.Errorf("lm score: --prompt: %w", err)
	}
	candidates, err := readActions(actionsFile)
	if err != nil {
		return fmt.Errorf("lm score: --actions: %w", err)
	}
	folder, err := qwen3.Open(modelDir)
	if err != nil {
		return fmt.Errorf("lm score: %w", err)
	}
	template, err := folder.ChatTemplate()
	if err != nil {
		return fmt.Errorf("lm score: %w", err)
	}
	d, err := qwen3.NewDecision(folder.Tokenizer, template, system, string(user), candidates)
	if err != nil {
		return fmt.Errorf("lm score: %w", err)
	}
	b, err := gpubackend.New(backend)
	if err != nil {
		return fmt.Errorf("lm score: %w", err)
	}
	m, err := qwen3.New(b, folder.Config, folder.Weights, qwen3.Options{DType: dt})
	if err != nil {
		return fmt.Errorf("lm score: %w", err)
	}
	rho, err := m.Score(d, false)
	if err != nil {
		return fmt.Errorf("lm score: %w", err)
	}
	var theta *qwen3.Scored
	if adapterDir != "" {
		a, err := qwen3.ReadAdapter(adapterDir, folder.Config)
		if err != nil {
			return fmt.Errorf("lm score: %w", err)
		}
		if err := m.SetAdapter(&a); err != nil {
			return fmt.Errorf("lm score: %w", err)
		}
		if theta, err = m.Score(d, true); err != nil {
			return fmt.Errorf("lm score: %w", err)
		}
	}
	fmt.Fprintf(w, "prompt: %d tokens; %d actions; forward calls of ρ: %d prefill, %d extensions, %d tokens\n",
		len(d.Prompt), len(d.Actions), rho.Work.Prefills, rho.Work.Extensions, rho.Work.Tokens)
	header := fmt.Sprintf("%4s  %12s", "#", "log ρ")
	if theta != nil {
		header += fmt.Sprintf("  %12s", "log θ")
	}
	fmt.Fprintln(w, header+"  action")
	for i, c := range candidates {
		row := fmt.Sprintf("%4d  %12.6f", i, rho.LogProbs[i])
		if theta != nil {
			row += fmt.Sprintf("  %12.6f", theta.LogProbs[i])
		}
		fmt.Fprintln(w, row+"  "+arrowfmt.Escape(c))
	}
	return nil
}

// readActions reads one action a line (CRLF or LF; empty lines skipped), refusing none and a
// repeated one, naming its lines.
func readActions(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	line := map[string]int{}
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSuffix(l, "\r")
		if l == "" {
			continue
		}
		if first, ok := line[l]; ok {
			return nil, fmt.Errorf("%s:%d: the action of line %d again (the legal actions differ)", path, i+1, first)
		}
		line[l] = i + 1
		out = append(out, l)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no action", path)
	}
	return out, nil
}
