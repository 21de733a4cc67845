package gpu

import (
	"fmt"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/gpu/qwen3"
	"github.com/evosteer/evosteer-go/gpu/qwen3/qwen3test"
	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/orchestra"
)

// benchLM is the causal-LM policy on qwen3test.QwenVocab's tiny model (Qwen3's tokenizer) with a
// rank-8 adapter on every projection.
func benchLM(b *testing.B) (*CausalLM, *Engine) {
	b.Helper()
	dir := qwen3test.QwenFolder(b, qwen3test.QwenVocab(), 3)
	f, err := qwen3.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	lm, err := NewCausalLM(f, config.Policy{EncoderDim: 64, AdapterRank: 8, AdapterAlpha: 16,
		CausalLM: &config.CausalLM{Model: dir, TargetModules: []string{"all-linear"}, MicroBatch: 2}}, 1)
	if err != nil {
		b.Fatal(err)
	}
	e, err := OpenEngine("simplego")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Close)
	return lm, e
}

// lmRow is a decision after the controller's system prompt with a user message of about words
// JSON words and legal actions ADD_AGENT of distinct roles (STOP first).
func lmRow(words, legal int) PolicyRow {
	var sb strings.Builder
	sb.WriteString(`{"execution":{"history":[`)
	for i := range words {
		fmt.Fprintf(&sb, `"step %d",`, i)
	}
	sb.WriteString(`"end"]}}`)
	acts := []string{orchestra.Action{Kind: orchestra.KindStop}.JSON()}
	for i := 1; i < legal; i++ {
		acts = append(acts, orchestra.Action{Kind: orchestra.KindAddAgent, NodeID: "n1", RoleID: fmt.Sprintf("role_%d", i)}.JSON())
	}
	return PolicyRow{Prior: make([]float32, legal), Text: &PolicyText{System: orchestra.ControllerSystemPrompt, User: sb.String(), Actions: acts}}
}

// lmSizes are the benchmarks' (user words, legal actions): how a decision's cost grows with the
// prompt's length and with the number of legal actions. -short runs one tiny size.
func lmSizes() [][2]int {
	if testing.Short() {
		return [][2]int{{8, 3}}
	}
	return [][2]int{{128, 8}, {512, 8}, {1024, 8}, {512, 2}, {512, 32}, {512, 128}}
}

// eachSize runs bench under a sub-benchmark per lmSizes entry, named by the prompt's tokens and
// the legal actions, after one untimed call (the shared prefix and the graphs' compilation).
func eachSize(b *testing.B, lm *CausalLM, bench func(b *testing.B, row PolicyRow) error) {
	for _, sz := range lmSizes() {
		row := lmRow(sz[0], sz[1])
		n, _, err := lm.CountTokens(row.Text.System, row.Text.User, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("prompt=%d/legal=%d", n, sz[1]), func(b *testing.B) {
			if err := bench(b, row); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if err := bench(b, row); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}

// BenchmarkCausalLMScore scores one decision under θ and ρ (rescore's work; a rollout does one of
// the two) on the tiny model and reports decisions/s. The controller's system prompt (about
// 1,600 tokens) is computed once and shared.
func BenchmarkCausalLMScore(b *testing.B) {
	lm, e := benchLM(b)
	eachSize(b, lm, func(_ *testing.B, row PolicyRow) error {
		_, err := lm.Score(e, []PolicyRow{row})
		return err
	})
}

// BenchmarkCausalLMGradient differentiates log π_θ of one decision's chosen action through the
// adapter (the update's work per decision: the prompt and the action teacher-forced, forward and
// backward).
func BenchmarkCausalLMGradient(b *testing.B) {
	lm, e := benchLM(b)
	eachSize(b, lm, func(_ *testing.B, row PolicyRow) error {
		_, _, err := lm.gradient(e, []PolicyRow{row}, []int{1}, []float32{1})
		return err
	})
}
