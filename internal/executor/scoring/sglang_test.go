package scoring_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/executor/openai"
	"github.com/evosteer/evosteer-go/internal/executor/scoring"
	"github.com/evosteer/evosteer-go/internal/executor/scoring/fakeengine"
)

// newFakeSGLang serves m through the fake SGLang server on loopback and returns an engine of a
// client configured for model.
func newFakeSGLang(t *testing.T, m fakeengine.Model, opts fakeengine.SGLangOptions, model string) (*scoring.SGLang, *fakeengine.SGLangServer, string) {
	t.Helper()
	fake := fakeengine.NewSGLang(m, opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return scoring.NewSGLang(testClient(t, srv.URL, model)), fake, srv.URL
}

func sglangRandomIDs(r *rand.Rand, n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = r.IntN(fakeengine.VocabSize)
	}
	return ids
}

func TestSGLangTokenizeAddsNoSpecialTokens(t *testing.T) {
	m := fakeengine.Model{Name: "fake/qwen"}
	e, _, _ := newFakeSGLang(t, m, fakeengine.SGLangOptions{}, m.Name)
	text := "<|im_start|>assistant\n<think>\n\n</think>\n\nyes<|im_end|>"
	got, err := e.Tokenize(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	if want := m.Tokenize(text); !slices.Equal(got, want) {
		t.Fatalf("Tokenize = %v, want %v", got, want)
	}
}

func TestSGLangContinuationsAreExactInOneRequest(t *testing.T) {
	m := fakeengine.Model{Name: "fake/qwen"}
	e, fake, _ := newFakeSGLang(t, m, fakeengine.SGLangOptions{}, m.Name)
	r := rand.New(rand.NewPCG(1, 2))
	for call := 1; call <= 20; call++ {
		prompt := sglangRandomIDs(r, 1+r.IntN(12))
		conts := make([][]int, 1+r.IntN(5))
		for i := range conts {
			conts[i] = sglangRandomIDs(r, 1+r.IntN(6))
		}
		got, err := e.Continuations(context.Background(), prompt, conts)
		if err != nil {
			t.Fatal(err)
		}
		if fake.Generates() != call {
			t.Fatalf("call %d: %d /generate requests so far, want %d", call, fake.Generates(), call)
		}
		if len(got) != len(conts) {
			t.Fatalf("call %d: %d results for %d continuations", call, len(got), len(conts))
		}
		for i, c := range conts {
			want := m.Continuation(prompt, c)
			if !slices.Equal(got[i], want) { // exact float64 equality
				t.Fatalf("call %d continuation %d: %v, want %v", call, i, got[i], want)
			}
		}
	}
}

func TestSGLangRefusesEmptyInput(t *testing.T) {
	m := fakeengine.Model{Name: "fake/qwen"}
	e, fake, _ := newFakeSGLang(t, m, fakeengine.SGLangOptions{}, m.Name)
	if _, err := e.Continuations(context.Background(), nil, [][]int{{7}}); err == nil || !strings.Contains(err.Error(), "empty prompt") {
		t.Errorf("empty prompt: %v", err)
	}
	if _, err := e.Continuations(context.Background(), []int{7}, [][]int{{7}, {}}); err == nil || !strings.Contains(err.Error(), "continuation 1 is empty") {
		t.Errorf("empty continuation: %v", err)
	}
	if got, err := e.Continuations(context.Background(), []int{7}, nil); err != nil || got != nil {
		t.Errorf("no continuations: %v, %v", got, err)
	}
	if fake.Generates() != 0 {
		t.Errorf("%d /generate requests for refused input", fake.Generates())
	}
}

func TestSGLangRefusesEachFault(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault fakeengine.SGLangFault
		want  string
	}{
		{"missing position", fakeengine.SGLangMissingPosition, "item 2: malformed reply: 3 input_token_logprobs received, 4 expected (the prompt's last token and 3 continuation tokens)"},
		{"NaN", fakeengine.SGLangNaN, "item 2 position 2: malformed reply: the log-prob is null"},
		{"+Inf", fakeengine.SGLangPosInf, "item 2 position 2: malformed reply: the log-prob is +Inf"},
		{"wrong id", fakeengine.SGLangWrongID, "item 2 position 2: malformed reply: token id 35, but 34 was sent"},
		{"no logprobs", fakeengine.SGLangNoLogprobs, "item 2: malformed reply: the reply has no meta_info.input_token_logprobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := fakeengine.Model{Name: "fake/qwen"}
			e, fake, _ := newFakeSGLang(t, m, fakeengine.SGLangOptions{Fault: tc.fault}, m.Name)
			_, err := e.Continuations(context.Background(), []int{10, 11, 12}, [][]int{{20}, {21, 22}, {30, 31, 34}})
			if err == nil || !errors.Is(err, openai.ErrMalformed) || !strings.Contains(err.Error(), "sglang /generate: "+tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if fake.Generates() != 1 {
				t.Errorf("%d /generate requests: a malformed reply is not retried", fake.Generates())
			}
		})
	}
}

func TestSGLangRetriesA500(t *testing.T) {
	m := fakeengine.Model{Name: "fake/qwen"}
	e, fake, _ := newFakeSGLang(t, m, fakeengine.SGLangOptions{Fail500s: 2}, m.Name)
	prompt, cont := []int{40, 41}, []int{42, 43}
	got, err := e.Continuations(context.Background(), prompt, [][]int{cont})
	if err != nil {
		t.Fatal(err)
	}
	if want := m.Continuation(prompt, cont); !slices.Equal(got[0], want) {
		t.Errorf("after retries: %v, want %v", got[0], want)
	}
	if fake.Generates() != 3 {
		t.Errorf("%d /generate requests, want 2 failures and 1 success", fake.Generates())
	}
}

func TestSGLangPreflight(t *testing.T) {
	m := fakeengine.Model{Name: "fake/qwen"}
	e, _, _ := newFakeSGLang(t, m, fakeengine.SGLangOptions{}, m.Name)
	if err := e.Preflight(context.Background()); err != nil {
		t.Fatalf("a good server: %v", err)
	}
	for _, tc := range []struct {
		name  string
		opts  fakeengine.SGLangOptions
		model string
		want  string
	}{
		{"unknown model", fakeengine.SGLangOptions{}, "other/model",
			`the server serves model_path "fake/qwen", /v1/models ["fake/qwen"], not the configured model "other/model"`},
		{"no logprobs", fakeengine.SGLangOptions{Fault: fakeengine.SGLangNoLogprobs}, m.Name,
			"a 1-token scoring request: sglang /generate: item 0: malformed reply: the reply has no meta_info.input_token_logprobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, url := newFakeSGLang(t, m, tc.opts, tc.model)
			err := e.Preflight(context.Background())
			if err == nil {
				t.Fatal("Preflight accepted the server")
			}
			msg := err.Error()
			if want := "sglang preflight " + url + ": " + tc.want; msg != want {
				t.Errorf("Preflight error\n%s\nwant\n%s", msg, want)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("a multi-line error: %q", msg)
			}
		})
	}
}
