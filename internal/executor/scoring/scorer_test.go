package scoring_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/executor/openai"
	"github.com/evosteer/evosteer-go/internal/executor/scoring"
	"github.com/evosteer/evosteer-go/internal/executor/scoring/fakeengine"
)

// modelEngine serves fakeengine.Model in process and counts its scoring calls.
type modelEngine struct {
	m         fakeengine.Model
	calls     int
	tokenized int
}

func (e *modelEngine) Tokenize(_ context.Context, text string) ([]int, error) {
	e.tokenized++
	return e.m.Tokenize(text), nil
}

func (e *modelEngine) Preflight(context.Context) error { return nil }

func (e *modelEngine) Continuations(_ context.Context, prompt []int, conts [][]int) ([][]float64, error) {
	e.calls++
	out := make([][]float64, len(conts))
	for i, c := range conts {
		out[i] = e.m.Continuation(prompt, c)
	}
	return out, nil
}

// bruteForce is the masked likelihood by its definition: at every position where the legal
// paths sharing the candidate's prefix continue with more than one token, the candidate's token
// log-probability minus the log-sum-exp of those siblings' (each computed by the model afresh).
func bruteForce(m fakeengine.Model, prompt []int, paths [][]int) []float64 {
	out := make([]float64, len(paths))
	for i, p := range paths {
		for j := range p {
			var siblings []int
			for _, q := range paths {
				if len(q) > j && slices.Equal(q[:j], p[:j]) && !slices.Contains(siblings, q[j]) {
					siblings = append(siblings, q[j])
				}
			}
			if len(siblings) < 2 {
				continue
			}
			ctx := append(append([]int(nil), prompt...), p[:j]...)
			sum := 0.0
			for _, t := range siblings {
				sum += math.Exp(m.LogProb(ctx, t))
			}
			out[i] += m.LogProb(ctx, p[j]) - math.Log(sum)
		}
	}
	return out
}

// randomActions is a legal set of distinct action-shaped JSON texts sharing long prefixes, as
// canonical actions do.
func randomActions(r *rand.Rand) []string {
	kinds := []string{"ADD_AGENT", "ADD_EDGE", "BIND_SKILL", "SET_OUTPUT", "RERUN", "DROP", "STOP"}
	set := map[string]bool{}
	for n := 2 + r.IntN(10); len(set) < n; {
		set[fmt.Sprintf(`{"kind":%q,"node":"n%d","role":"r%d"}`, kinds[r.IntN(len(kinds))], r.IntN(3), r.IntN(12))] = true
	}
	out := make([]string, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// TestScorerIsTheMaskedLikelihood: over random legal sets, log ρ equals the brute-force masked
// likelihood of the candidates' paths (text + end of turn) after the chat prompt to 1e-9, Σ ρ = 1
// to 1e-9, one scoring call per decision and none for a decision seen before or a single
// candidate.
func TestScorerIsTheMaskedLikelihood(t *testing.T) {
	ctx := context.Background()
	e := &modelEngine{m: fakeengine.Model{Name: "tiny"}}
	s, err := scoring.NewScorer(ctx, e, scoring.Qwen3, 64)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	eos := e.m.Tokenize(scoring.Qwen3.EndOfTurn)[0]
	for trial := range 40 {
		system, user := "You steer a team.", fmt.Sprintf(`{"task_family":"hotpotqa","trial":%d}`, trial)
		actions := randomActions(r)
		calls := e.calls
		got, err := s.Score(ctx, system, user, actions)
		if err != nil {
			t.Fatal(err)
		}
		if e.calls != calls+1 || got.Requests != 1 {
			t.Fatalf("trial %d: %d scoring calls, %d requests reported; want 1", trial, e.calls-calls, got.Requests)
		}
		prompt := e.m.Tokenize(scoring.Qwen3.Prompt(system, user))
		paths := make([][]int, len(actions))
		for i, a := range actions {
			paths[i] = append(e.m.Tokenize(a), eos)
		}
		want := bruteForce(e.m, prompt, paths)
		total := 0.0
		for i := range want {
			if math.Abs(got.LogProbs[i]-want[i]) > 1e-9 {
				t.Fatalf("trial %d, %s: log ρ %v, brute force %v", trial, actions[i], got.LogProbs[i], want[i])
			}
			total += math.Exp(got.LogProbs[i])
		}
		if math.Abs(total-1) > 1e-9 || got.PromptTokens != len(prompt) {
			t.Fatalf("trial %d: Σ ρ = %v, prompt tokens %d (want %d)", trial, total, got.PromptTokens, len(prompt))
		}
		sent := 0
		for _, p := range paths {
			sent += len(prompt) + len(p)
		}
		if got.TokensSent != sent {
			t.Fatalf("trial %d: %d token ids reported sent, the request carried %d", trial, got.TokensSent, sent)
		}
		again, err := s.Score(ctx, system, user, actions)
		if err != nil || e.calls != calls+1 || again.Requests != 0 || !slices.Equal(again.LogProbs, got.LogProbs) {
			t.Fatalf("trial %d: the same decision again: %+v, %d calls, %v", trial, again, e.calls-calls, err)
		}
	}
	one, err := s.Score(ctx, "s", "u", []string{`{"kind":"STOP"}`})
	if err != nil || !slices.Equal(one.LogProbs, []float64{0}) || one.Requests != 0 {
		t.Fatalf("a single candidate: %+v %v", one, err)
	}
}

// TestScorerCountIsWhatScoringReuses: Count gives the prompt's and each candidate path's length
// in the server's tokens (what the budget charges a controller call), and the Score of the same
// decision then sends no tokenize request of its own.
func TestScorerCountIsWhatScoringReuses(t *testing.T) {
	ctx := context.Background()
	e := &modelEngine{m: fakeengine.Model{Name: "tiny"}}
	s, err := scoring.NewScorer(ctx, e, scoring.Qwen3, 64)
	if err != nil {
		t.Fatal(err)
	}
	system, user, actions := "You steer a team.", `{"task_family":"medqa"}`, []string{`{"kind":"STOP"}`, `{"kind":"ADD_AGENT","role_id":"solver"}`}
	c, err := s.Count(ctx, system, user, actions)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(e.m.Tokenize(scoring.Qwen3.Prompt(system, user))); c.Prompt != want {
		t.Fatalf("prompt counted %d tokens, the model's %d", c.Prompt, want)
	}
	for i, a := range actions {
		if want := len(e.m.Tokenize(a)) + 1; c.Actions[i] != want {
			t.Fatalf("%s counted %d tokens, its path has %d", a, c.Actions[i], want)
		}
	}
	before := e.tokenized
	if _, err := s.Score(ctx, system, user, actions); err != nil || e.tokenized != before {
		t.Fatalf("scoring the counted decision tokenised %d more texts: %v", e.tokenized-before, err)
	}
}

// TestScorerRefusesWhatItCannotScore: a server whose end of turn is not one token (another model
// family), and candidates whose token paths are not prefix-free, are refused with what to check.
func TestScorerRefusesWhatItCannotScore(t *testing.T) {
	ctx := context.Background()
	e := &modelEngine{m: fakeengine.Model{Name: "tiny"}}
	other := scoring.Qwen3
	other.EndOfTurn = "<|eot|>"
	if _, err := scoring.NewScorer(ctx, e, other, 8); err == nil || !strings.Contains(err.Error(), "want one special token") {
		t.Fatalf("a multi-token end of turn: %v", err)
	}
	s, err := scoring.NewScorer(ctx, e, scoring.Qwen3, 8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Score(ctx, "s", "u", []string{"a", "a"}); err == nil || !strings.Contains(err.Error(), "token paths") {
		t.Fatalf("a repeated candidate: %v", err)
	}
	if _, err := s.Score(ctx, "s", "u", nil); err == nil {
		t.Fatal("no candidate: want an error")
	}
}

// TestScorerOverBothDialects: the same decisions scored through the fake SGLang and vLLM servers
// over HTTP give the brute-force masked likelihood to 1e-9, with one scoring request each.
func TestScorerOverBothDialects(t *testing.T) {
	ctx := context.Background()
	m := fakeengine.Model{Name: "fake/qwen"}
	sglang := fakeengine.NewSGLang(m, fakeengine.SGLangOptions{})
	vllm := fakeengine.NewVLLM(m, fakeengine.VLLMOptions{})
	for _, c := range []struct {
		name     string
		handler  http.Handler
		engine   func(*openai.Client) (scoring.Engine, error)
		requests func() int
	}{
		{"sglang", sglang, func(c *openai.Client) (scoring.Engine, error) { return scoring.NewSGLang(c), nil }, func() int { return sglang.Generates() }},
		{"vllm", vllm, func(c *openai.Client) (scoring.Engine, error) { return scoring.NewVLLM(c) }, func() int { return vllm.Requests("/v1/completions") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.handler)
			defer srv.Close()
			engine, err := c.engine(testClient(t, srv.URL, m.Name))
			if err != nil {
				t.Fatal(err)
			}
			s, err := scoring.NewScorer(ctx, engine, scoring.Qwen3, 16)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(3, 4))
			eos := m.Tokenize(scoring.Qwen3.EndOfTurn)[0]
			for trial := range 8 {
				actions := randomActions(r)
				user := fmt.Sprintf(`{"trial":%d}`, trial)
				before := c.requests()
				got, err := s.Score(ctx, "system", user, actions)
				if err != nil {
					t.Fatal(err)
				}
				if n := c.requests() - before; n != 1 {
					t.Fatalf("trial %d: %d scoring requests, want 1", trial, n)
				}
				paths := make([][]int, len(actions))
				for i, a := range actions {
					paths[i] = append(m.Tokenize(a), eos)
				}
				want := bruteForce(m, m.Tokenize(scoring.Qwen3.Prompt("system", user)), paths)
				for i := range want {
					if math.Abs(got.LogProbs[i]-want[i]) > 1e-9 {
						t.Fatalf("trial %d, %s: log ρ %v, brute force %v", trial, actions[i], got.LogProbs[i], want[i])
					}
				}
			}
		})
	}
}
