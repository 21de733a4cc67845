package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/evosteer/evosteer-go/gpu/qwen3"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/rundir"
)

// orchestratorRows name the run's orchestrator for the report's header: its kind and sizes (the
// compact network's widths; for the language model the model folder, its shape and parameter
// count from config.json, without loading the weights), the adapter's r, α, target modules and
// scaling, and, for the language model, the PEFT adapter folder of the last step that wrote one.
// A model folder that cannot be read is said in the row, never an error: the report is a view of
// the run, and the folder is the user's.
func orchestratorRows(r *rundir.Folder, steps []int) []Row {
	p := r.Config.Policy
	if !p.IsCausalLM() {
		return []Row{
			{Cells: []string{"orchestrator", fmt.Sprintf("the compact network (policy.kind %s): hidden %d, h_ρ width (encoder_dim) %d, up to %d legal actions",
				config.PolicyCompact, p.Hidden, p.EncoderDim, p.MaxLegalActions)}},
			{Cells: []string{"adapter", fmt.Sprintf("low-rank adapter r %d, α %g; θ = the network with it, ρ = without", p.AdapterRank, p.AdapterAlpha)}},
		}
	}
	lm := p.CausalLM
	return []Row{
		{Cells: []string{"orchestrator", fmt.Sprintf("a language model (policy.kind %s): %s; h_ρ width (encoder_dim) %d", config.PolicyCausalLM, describeModel(lm.Model), p.EncoderDim)}},
		{Cells: []string{"adapter", describeLoRA(p)}},
		{Cells: []string{"adapter folder", adapterFolder(r, steps)}},
	}
}

// describeModel names the model folder and what its config.json says: the shape and the
// parameter count.
func describeModel(dir string) string {
	cfg, err := qwen3.ReadConfig(dir)
	if err != nil {
		return fmt.Sprintf("the Qwen3 folder %s (its config.json cannot be read here: %s)", dir, strings.TrimPrefix(err.Error(), "qwen3: "))
	}
	tied := "untied lm_head"
	if cfg.TieWordEmbeddings {
		tied = "tied embedding and lm_head"
	}
	n, _ := cfg.ParamCount()
	dtype := ""
	if cfg.TorchDtype != "" {
		dtype = " (" + cfg.TorchDtype + ")"
	}
	return fmt.Sprintf("the Qwen3 folder %s: %d layers, hidden %d, query/key-value heads %d/%d of width %d, MLP %d, vocab %s, %s; %s parameters%s",
		dir, cfg.NumHiddenLayers, cfg.HiddenSize, cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim, cfg.IntermediateSize,
		thousands(int64(cfg.VocabSize)), tied, thousands(n), dtype)
}

// describeLoRA is the adapter of the language model as configured.
func describeLoRA(p config.Policy) string {
	lm := p.CausalLM
	targets := strings.Join(lm.TargetModules, " ")
	if slices.Equal(lm.TargetModules, []string{"all-linear"}) {
		targets = "all-linear (" + strings.Join(qwen3.ModuleNames, " ") + ")"
	}
	scale := fmt.Sprintf("scale α/r = %.4g", p.AdapterAlpha/float64(p.AdapterRank))
	if lm.RSLoRA {
		scale = fmt.Sprintf("rsLoRA, scale α/√r = %.4g", qwen3.LoRAConfig{Rank: p.AdapterRank, Alpha: p.AdapterAlpha, RSLoRA: true}.Scale())
	}
	dtype := lm.DType
	if dtype == "" {
		dtype = "float32"
	}
	return fmt.Sprintf("LoRA r %d, α %g (%s) on %s; θ = the model with it, ρ = the adapter off; %s graphs",
		p.AdapterRank, p.AdapterAlpha, scale, targets, dtype)
}

// adapterFolder is the PEFT adapter folder of the last reported step whose update wrote one (or
// init's, step 0's), relative to the run folder.
func adapterFolder(r *rundir.Folder, steps []int) string {
	rel := filepath.Dir(filepath.FromSlash(layout.AdapterConfigFile))
	for _, s := range slices.Backward(steps) {
		dir := filepath.Join(r.StageDir(s, layout.Update), rel)
		if _, err := os.Stat(filepath.Join(dir, qwen3.AdapterConfigFile)); err == nil {
			return fmt.Sprintf("%s in the run folder (step %d's θ as a PEFT adapter folder, which evosteer lm check, peft, vLLM and SGLang read)",
				filepath.ToSlash(filepath.Join(layout.StepDir(s), layout.Update, rel)), s)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("step %d's cannot be read: %v", s, err)
		}
	}
	if _, err := os.Stat(filepath.Join(r.StageDir(0, layout.Update), rel, qwen3.AdapterConfigFile)); err == nil {
		return fmt.Sprintf("%s in the run folder (init's: B = 0, so θ = ρ; no update has run yet)", filepath.ToSlash(filepath.Join(layout.StepDir(0), layout.Update, rel)))
	}
	return "none yet: no update has written step-NNNNNN/update/" + filepath.ToSlash(rel)
}
