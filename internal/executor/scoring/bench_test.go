package scoring_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"testing"

	"github.com/evosteer/evosteer-go/internal/executor/scoring"
	"github.com/evosteer/evosteer-go/internal/executor/scoring/fakeengine"
)

// BenchmarkScorer scores decisions of fresh prompts through the fake SGLang server over loopback
// HTTP and reports decisions/s, scoring requests and the tokens sent per decision (prompt plus
// candidate paths). -short runs a tiny size, so the benchmark cannot rot.
func BenchmarkScorer(b *testing.B) {
	ctx := context.Background()
	m := fakeengine.Model{Name: "fake/qwen"}
	fake := fakeengine.NewSGLang(m, fakeengine.SGLangOptions{})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	s, err := scoring.NewScorer(ctx, scoring.NewSGLang(testClient(b, srv.URL, m.Name)), scoring.Qwen3, 1024)
	if err != nil {
		b.Fatal(err)
	}
	userBytes := 2000
	if testing.Short() {
		userBytes = 100
	}
	r := rand.New(rand.NewPCG(5, 6))
	actions := randomActions(r)
	filler := make([]byte, userBytes)
	for i := range filler {
		filler[i] = 'a' + byte(i%26)
	}
	sent := 0
	b.ResetTimer()
	for i := range b.N {
		got, err := s.Score(ctx, "system", fmt.Sprintf(`{"decision":%d,"state":%q}`, i, filler), actions)
		if err != nil {
			b.Fatal(err)
		}
		sent += got.TokensSent
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	b.ReportMetric(float64(fake.Generates())/float64(b.N), "requests/decision")
	b.ReportMetric(float64(sent)/float64(b.N), "tokens-sent/decision")
}
