package episode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/executor/scoring"
	"github.com/evosteer/evosteer-go/internal/executor/scoring/fakeengine"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/schema"
)

// servedConfig points the configuration's reference at a fake SGLang server of model.
func servedConfig(cfg *config.Config, url, model string) {
	cfg.Served = &config.ServedReference{Dialect: "sglang", BaseURL: url, Model: model, Template: "qwen3",
		MaxConcurrency: 8, TimeoutSeconds: 10, OutageSeconds: 1, CacheDecisions: 256}
}

// servedJobs are a θ and a ρ episode of one training task of each of two families.
func servedJobs(cfg *config.Config) []Job {
	var jobs []Job
	for _, f := range cfg.Families[:2] {
		task := sim.Tasks(cfg.Sim, cfg.Seed, f, f, "train", 1)[0]
		jobs = append(jobs, Job{Task: task, Source: "current", ID: task.ID + "/current", Seed: 11, Theta: true},
			Job{Task: task, Source: "natural_reference", ID: task.ID + "/reference", Seed: 12})
	}
	return jobs
}

// playServed plays servedJobs with the untrained learner and ρ served by the fake SGLang engine,
// and returns the episodes and the engine.
func playServed(t *testing.T) ([]Played, *fakeengine.SGLangServer) {
	t.Helper()
	fake := fakeengine.NewSGLang(fakeengine.Model{Name: "fake/qwen"}, fakeengine.SGLangOptions{})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	return playServedJobs(t, func(cfg *config.Config) { servedConfig(cfg, srv.URL, "fake/qwen") }), fake
}

// playServedJobs plays servedJobs with the untrained learner on the simulated executor, the
// default configuration changed by configure.
func playServedJobs(t *testing.T, configure func(*config.Config)) []Played {
	t.Helper()
	cfg, l, eng := untrained(t)
	configure(cfg)
	exec, err := NewExecutor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	played, err := Play(context.Background(), cfg, exec, l, eng, servedJobs(cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	return played
}

// TestServedReferenceIsRho: with served_reference set, every decision's ρ logits are the served
// model's masked log-likelihood of the legal actions (a distribution: Σ ρ = 1), the untrained θ
// is ρ exactly (each behaviour log-probability is ρ's of the choice), and a decision costs at
// most one scoring request.
func TestServedReferenceIsRho(t *testing.T) {
	played, fake := playServed(t)
	scored := 0
	for _, p := range played {
		if !p.Episode.Healthy {
			t.Fatalf("episode %s unhealthy: %s", p.Episode.EpisodeID, *p.Episode.UnhealthyReason)
		}
		for _, d := range p.Decisions {
			if len(d.PriorLogits) < 2 {
				continue
			}
			scored++
			total := 0.0
			for _, v := range d.PriorLogits {
				total += math.Exp(float64(v))
			}
			if math.Abs(total-1) > 1e-5 {
				t.Fatalf("%s t=%d: Σ ρ = %v over %d actions", p.Episode.EpisodeID, d.T, total, len(d.PriorLogits))
			}
			if !d.Forced && math.Abs(d.LogpBehavior-float64(d.PriorLogits[d.Chosen])) > 1e-5 {
				t.Fatalf("%s t=%d: behaviour log-prob %v, log ρ of the choice %v: the untrained θ is not ρ",
					p.Episode.EpisodeID, d.T, d.LogpBehavior, d.PriorLogits[d.Chosen])
			}
		}
	}
	if scored == 0 || fake.Generates() > scored+1 { // +1: the preflight's request
		t.Fatalf("%d scoring requests for %d decisions with a choice", fake.Generates(), scored)
	}
}

// TestServedReferenceFaults: a server that does not serve the model is refused before any
// episode, in one line naming it; a reply with a NaN after the preflight makes the episodes
// unhealthy with the reason, and the step goes on.
func TestServedReferenceFaults(t *testing.T) {
	cfg, l, eng := untrained(t)
	srv := httptest.NewServer(fakeengine.NewSGLang(fakeengine.Model{Name: "fake/qwen"}, fakeengine.SGLangOptions{}))
	defer srv.Close()
	exec, err := NewExecutor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	servedConfig(cfg, srv.URL, "other/model")
	began := time.Now()
	_, err = Play(context.Background(), cfg, exec, l, eng, servedJobs(cfg), nil)
	if err == nil || !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), "other/model") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("an unserved model: %v", err)
	}
	if time.Since(began) > scoring.PreflightTimeout+5*time.Second {
		t.Fatalf("the preflight took %v", time.Since(began))
	}

	nan := httptest.NewServer(fakeengine.NewSGLang(fakeengine.Model{Name: "fake/qwen"}, fakeengine.SGLangOptions{Fault: fakeengine.SGLangNaN, FaultAfter: 1}))
	defer nan.Close()
	servedConfig(cfg, nan.URL, "fake/qwen")
	played, err := Play(context.Background(), cfg, exec, l, eng, servedJobs(cfg), nil)
	if err != nil {
		t.Fatalf("a malformed reply failed the step: %v", err)
	}
	for _, p := range played {
		if p.Episode.Healthy || !strings.Contains(*p.Episode.UnhealthyReason, "the served reference") {
			t.Fatalf("episode %s: healthy %v, reason %v", p.Episode.EpisodeID, p.Episode.Healthy, p.Episode.UnhealthyReason)
		}
	}
}

// TestServedReferenceRecordsItsPrompts: with served_reference set, every decision with more than
// one legal action has one prompts row, and its text is what the engine received: the ChatML
// rendering of the controller's system prompt and the row's user message (written out here, not
// through the template) is a text the fake's /tokenize received, its sha256 is prompt_sha256 and
// the model's token count of it is prompt_tokens; the rows' requests are the /generate requests
// the engine received, and their tokens_sent the ids those carried. (The engine also tokenises
// each decision's preview, the prompt the budget's reservation is counted on.)
func TestServedReferenceRecordsItsPrompts(t *testing.T) {
	played, fake := playServed(t)
	received := map[string]bool{}
	for _, text := range fake.Tokenized() {
		if strings.HasPrefix(text, "<|im_start|>system\n") {
			received[text] = true
		}
	}
	requests := 0
	for _, p := range played {
		var want []string
		for _, d := range p.Decisions {
			if len(d.LegalActions) > 1 {
				want = append(want, fmt.Sprintf("%s/%d", d.EpisodeID, d.T))
			}
		}
		var got []string
		for _, row := range p.Prompts {
			got = append(got, fmt.Sprintf("%s/%d", row.EpisodeID, row.T))
			text := "<|im_start|>system\n" + orchestra.ControllerSystemPrompt + "<|im_end|>\n<|im_start|>user\n" + row.UserMessage +
				"<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
			requests += int(row.Requests)
			sum := sha256.Sum256([]byte(text))
			switch {
			case !received[text]:
				t.Fatalf("%s t=%d: the engine never received the rendered prompt of the stored user message", row.EpisodeID, row.T)
			case row.PromptSHA256 != hex.EncodeToString(sum[:]):
				t.Fatalf("%s t=%d: prompt_sha256 %s, the rendered prompt's %x", row.EpisodeID, row.T, row.PromptSHA256, sum)
			case int(row.PromptTokens) != len(fakeengine.Model{}.Tokenize(text)):
				t.Fatalf("%s t=%d: prompt_tokens %d, the model's count %d", row.EpisodeID, row.T, row.PromptTokens, len(fakeengine.Model{}.Tokenize(text)))
			case row.SystemPromptID != orchestra.ControllerSystemPromptID || row.Template != "qwen3" || row.Model != "fake/qwen":
				t.Fatalf("%s t=%d: %+v", row.EpisodeID, row.T, row)
			case row.Requests == 1 && row.TokensSent != sentFor(text, d(p, row.T).LegalActions):
				t.Fatalf("%s t=%d: tokens_sent %d, the request carried %d", row.EpisodeID, row.T, row.TokensSent, sentFor(text, d(p, row.T).LegalActions))
			case row.Requests == 0 && row.TokensSent != 0, row.Requests < 0 || row.Requests > 1:
				t.Fatalf("%s t=%d: requests %d, tokens_sent %d", row.EpisodeID, row.T, row.Requests, row.TokensSent)
			}
		}
		if !slices.Equal(got, want) || len(got) == 0 {
			t.Fatalf("episode %s: prompts rows %v, decisions with a choice %v", p.Episode.EpisodeID, got, want)
		}
	}
	// The preflight's one /generate is the only request no row made.
	if requests+1 != fake.Generates() || requests == 0 {
		t.Fatalf("the prompts rows sent %d scoring requests, the engine received %d besides the preflight's", requests, fake.Generates()-1)
	}
}

// d is episode p's decision t.
func d(p Played, t int32) schema.DecisionRow { return p.Decisions[t] }

// sentFor is the token ids of one scoring request of the fake model: the prompt and one
// legal action's path (its JSON and the end of turn) for each legal action.
func sentFor(prompt string, legal []string) int64 {
	m := fakeengine.Model{}
	n := 0
	for _, a := range legal {
		n += len(m.Tokenize(prompt)) + len(m.Tokenize(a)) + 1
	}
	return int64(n)
}

// TestControllerTokensAreCountedAsSent: with a served reference the budget charges each
// controller decision the server's own lengths, the rendered prompt it scored (prompts.
// prompt_tokens) and the chosen action's path with its end of turn, in the episode's
// controller columns; the agents' usage is the rest of the budget's, and the requests and ids
// sent are the prompts rows'. The prior's episodes count the same columns as estimated.
func TestControllerTokensAreCountedAsSent(t *testing.T) {
	played, _ := playServed(t)
	m := fakeengine.Model{}
	exact := 0
	for _, p := range played {
		e := p.Episode
		var in, out, requests, sent int64
		for _, row := range p.Prompts {
			in += int64(row.PromptTokens)
			out += int64(len(m.Tokenize(d(p, row.T).ActionJSON)) + 1)
			requests += int64(row.Requests)
			sent += row.TokensSent
		}
		var execIn, execOut, execCalls int64
		for _, x := range p.Executions {
			execIn, execOut, execCalls = execIn+x.TokensIn, execOut+x.TokensOut, execCalls+x.ModelCalls
		}
		// A charged decision whose legal set the reservation cut to one action sends no prompt
		// but is charged its counted prompt, a few thousand tokens more.
		unsent := e.ControllerCalls - int64(len(p.Prompts))
		exact += int(max(0, 1-unsent))
		switch {
		case e.ControllerCount != schema.ControllerCountServed:
			t.Fatalf("%s: controller_count %q", e.EpisodeID, e.ControllerCount)
		case unsent == 0 && (e.ControllerTokensIn != in || e.ControllerTokensOut != out),
			unsent > 0 && (e.ControllerTokensIn < in+unsent*1000 || e.ControllerTokensOut <= out),
			unsent < 0:
			t.Fatalf("%s: controller charged %d in, %d out, %d calls; the prompts it sent have %d, %d, %d",
				e.EpisodeID, e.ControllerTokensIn, e.ControllerTokensOut, e.ControllerCalls, in, out, len(p.Prompts))
		case e.ControllerRequests != requests || e.ControllerTokensSent != sent || requests == 0:
			t.Fatalf("%s: %d requests, %d ids sent; the prompts rows %d, %d", e.EpisodeID, e.ControllerRequests, e.ControllerTokensSent, requests, sent)
		case e.ExecutorTokensIn != execIn || e.ExecutorTokensOut != execOut || e.ExecutorCalls != execCalls:
			t.Fatalf("%s: executor columns %d/%d/%d, its executions used %d/%d/%d", e.EpisodeID, e.ExecutorTokensIn, e.ExecutorTokensOut, e.ExecutorCalls, execIn, execOut, execCalls)
		case e.TokensIn != e.ExecutorTokensIn+e.ControllerTokensIn || e.TokensOut != e.ExecutorTokensOut+e.ControllerTokensOut || e.ModelCalls != e.ExecutorCalls+e.ControllerCalls:
			t.Fatalf("%s: the budget's %d/%d/%d is not the executors' plus the controller's", e.EpisodeID, e.TokensIn, e.TokensOut, e.ModelCalls)
		}
	}
	if exact == 0 {
		t.Fatal("no episode sent a prompt for every charged decision: nothing was checked exactly")
	}
}

// TestThePriorsControllerChargeIsNamedEstimated: without a served reference the controller's
// charge is the simulated one, named so, with no request sent, and the budget's totals are
// still the agents' plus the controller's.
func TestThePriorsControllerChargeIsNamedEstimated(t *testing.T) {
	for _, p := range playServedJobs(t, func(*config.Config) {}) {
		e := p.Episode
		switch {
		case e.ControllerCount != schema.ControllerCountEstimated || e.ControllerRequests != 0 || e.ControllerTokensSent != 0 || len(p.Prompts) != 0:
			t.Fatalf("%s: %q, %d requests, %d ids sent, %d prompts rows", e.EpisodeID, e.ControllerCount, e.ControllerRequests, e.ControllerTokensSent, len(p.Prompts))
		case e.ControllerCalls == 0 || e.ControllerTokensIn == 0 || e.ExecutorTokensIn == 0:
			t.Fatalf("%s: controller %d calls, %d tokens in; executors %d in", e.EpisodeID, e.ControllerCalls, e.ControllerTokensIn, e.ExecutorTokensIn)
		case e.TokensIn != e.ExecutorTokensIn+e.ControllerTokensIn || e.TokensOut != e.ExecutorTokensOut+e.ControllerTokensOut || e.ModelCalls != e.ExecutorCalls+e.ControllerCalls:
			t.Fatalf("%s: the budget's %d/%d/%d is not the executors' plus the controller's", e.EpisodeID, e.TokensIn, e.TokensOut, e.ModelCalls)
		}
	}
}
