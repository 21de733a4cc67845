package tokenizer_test

import (
	"testing"

	"github.com/evosteer/evosteer-go/internal/tokenizer"
	"github.com/evosteer/evosteer-go/internal/tokenizer/tokenizertest"
)

// BenchmarkEncode encodes the oracle test's corpus with Qwen3's tokenizer.json where the fixtures
// are installed (scripts/tokenizer-fixtures.sh), the tiny test tokenizer otherwise, and reports
// tokens/s: "cached" keeps the ids of repeated pre-tokens (the default), "uncached" merges every
// one afresh. Without -short, with the fixtures, it also times the Hugging Face library (npm
// tokenizers, one thread) on the same texts and reports its tokens/s, one encode call after another
// (each pays node's async call) and in one encodeBatch call per round, and Go's ratio to the latter. -short runs a tiny size, so the benchmark cannot rot.
func BenchmarkEncode(b *testing.B) {
	n := 2000
	if testing.Short() {
		n = 20
	}
	texts := corpus(n)
	o, findErr := tokenizertest.Find()
	load := func(b *testing.B, opt tokenizer.Options) *tokenizer.Tokenizer {
		if findErr == nil {
			tok, err := tokenizer.Load(o.Qwen3JSON(), opt)
			if err != nil {
				b.Fatal(err)
			}
			return tok
		}
		b.Logf("the tiny tokenizer (%v)", findErr)
		tok, err := parse(b, tiny(), opt)
		if err != nil {
			b.Fatal(err)
		}
		return tok
	}
	var goRate float64
	for _, c := range []struct {
		name  string
		cache int
	}{{"cached", 0}, {"uncached", -1}} {
		b.Run(c.name, func(b *testing.B) {
			tok := load(b, tokenizer.Options{CacheSize: c.cache})
			tokens := 0
			b.ResetTimer()
			for range b.N {
				for _, text := range texts {
					ids, err := tok.Encode(text)
					if err != nil {
						b.Fatal(err)
					}
					tokens += len(ids)
				}
			}
			rate := float64(tokens) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "tokens/s")
			b.ReportMetric(0, "ns/op")
			if c.cache == 0 {
				goRate = rate
			}
		})
	}
	if testing.Short() || findErr != nil {
		return
	}
	b.Run("oracle", func(b *testing.B) {
		reply := o.Run(b, tokenizertest.Request{Bench: &tokenizertest.Bench{Texts: texts, Rounds: max(b.N, 3)}})
		rate := float64(reply.Bench.Tokens) / reply.Bench.Seconds
		batch := float64(reply.Bench.Tokens) / reply.Bench.BatchSeconds
		b.ReportMetric(rate, "oracle-tokens/s")
		b.ReportMetric(batch, "oracle-batch-tokens/s")
		b.ReportMetric(goRate/batch, "go/oracle-batch")
		b.ReportMetric(0, "ns/op")
	})
}
