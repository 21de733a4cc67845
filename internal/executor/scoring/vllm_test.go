package scoring_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/executor/openai"
	"github.com/evosteer/evosteer-go/internal/executor/scoring"
	"github.com/evosteer/evosteer-go/internal/executor/scoring/fakeengine"
)

var vllmModel = fakeengine.Model{Name: "fake-qwen"}

// vllmEngine serves vllmModel with the given faults on loopback and returns a VLLM client of it
// configured for model, the fake server and its URL.
func vllmEngine(t *testing.T, opts fakeengine.VLLMOptions, model string) (*scoring.VLLM, *fakeengine.VLLMServer, string) {
	t.Helper()
	fake := fakeengine.NewVLLM(vllmModel, opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return vllmClient(t, srv.URL, model), fake, srv.URL
}

func vllmClient(t testing.TB, url, model string) *scoring.VLLM {
	t.Helper()
	v, err := scoring.NewVLLM(testClient(t, url, model))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func vllmRandomIDs(r *rand.Rand, n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = r.IntN(fakeengine.VocabSize)
	}
	return ids
}

// Continuations gives exactly the model's numbers for random prompts and continuations, in one
// request a call.
func TestVLLMContinuationsExact(t *testing.T) {
	v, fake, _ := vllmEngine(t, fakeengine.VLLMOptions{}, vllmModel.Name)
	r := rand.New(rand.NewPCG(1, 2))
	for call := 1; call <= 20; call++ {
		prompt := vllmRandomIDs(r, 1+r.IntN(30))
		conts := make([][]int, 1+r.IntN(6))
		for i := range conts {
			conts[i] = vllmRandomIDs(r, r.IntN(9))
		}
		got, err := v.Continuations(context.Background(), prompt, conts)
		if err != nil {
			t.Fatalf("call %d: %v", call, err)
		}
		if len(got) != len(conts) {
			t.Fatalf("call %d: %d results for %d continuations", call, len(got), len(conts))
		}
		for i, c := range conts {
			if want := vllmModel.Continuation(prompt, c); !slices.Equal(got[i], want) {
				t.Fatalf("call %d, continuation %d: got %v, want %v", call, i, got[i], want)
			}
		}
		if n := fake.Requests("/v1/completions"); n != call {
			t.Fatalf("after %d calls the server received %d completion requests, want one a call", call, n)
		}
	}
}

// Tokenize gives the model's ids with no BOS: the fake adds one unless add_special_tokens is false.
func TestVLLMTokenize(t *testing.T) {
	v, fake, _ := vllmEngine(t, fakeengine.VLLMOptions{}, vllmModel.Name)
	text := "<|im_start|>user\nhé<|im_end|>"
	got, err := v.Tokenize(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	if want := vllmModel.Tokenize(text); !slices.Equal(got, want) {
		t.Fatalf("Tokenize(%q) = %v, want %v", text, got, want)
	}
	if n := fake.Requests("/tokenize"); n != 1 {
		t.Fatalf("%d requests to /tokenize (at the server root), want 1", n)
	}
}

// Each fault in a reply is a malformed reply, not retried, whose error names it: the continuation,
// the token and its position where it is at one.
func TestVLLMFaults(t *testing.T) {
	prompt := []int{7, 40, 41, 2}
	conts := [][]int{{100, 101}, {102}, {103, 104, 105}}
	last := fmt.Sprintf("continuation 2, token 2 (position %d)", len(prompt)+2)
	for _, tc := range []struct {
		fault fakeengine.VLLMFault
		want  []string
	}{
		{fakeengine.VLLMMissingPosition, []string{"continuation 2: 6 prompt_logprobs positions received, 7 expected (one per token sent)"}},
		{fakeengine.VLLMNullPosition, []string{last, "prompt_logprobs is null"}},
		{fakeengine.VLLMNaN, []string{last, "token 105", "NaN"}},
		{fakeengine.VLLMPosInf, []string{last, "token 105", "+Inf"}},
		{fakeengine.VLLMPositive, []string{last, "token 105", "0.5 is above 0"}},
		{fakeengine.VLLMWrongID, []string{last, "the sent token 105 is not among prompt_logprobs' ids [106]"}},
		{fakeengine.VLLMMissingID, []string{last, "the sent token 105 is not among prompt_logprobs' ids []"}},
		{fakeengine.VLLMNoPromptLogprobs, []string{"continuation 0", "no prompt_logprobs"}},
		{fakeengine.VLLMDuplicateIndex, []string{"two choices have index 0"}},
		{fakeengine.VLLMMissingChoice, []string{"2 choices for a batch of 3 continuations"}},
	} {
		t.Run(tc.fault.String(), func(t *testing.T) {
			v, fake, _ := vllmEngine(t, fakeengine.VLLMOptions{Fault: tc.fault}, vllmModel.Name)
			_, err := v.Continuations(context.Background(), prompt, conts)
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			if !errors.Is(err, openai.ErrMalformed) {
				t.Errorf("%v is not ErrMalformed", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if n := fake.Requests("/v1/completions"); n != 1 {
				t.Errorf("%d requests, want 1: a malformed reply is not retried", n)
			}
		})
	}
}

// Choices are matched to continuations by their index, not their order.
func TestVLLMChoicesByIndex(t *testing.T) {
	v, _, _ := vllmEngine(t, fakeengine.VLLMOptions{Fault: fakeengine.VLLMReversedChoices}, vllmModel.Name)
	prompt, conts := []int{9, 10}, [][]int{{11}, {12, 13}, {14, 15, 16}}
	got, err := v.Continuations(context.Background(), prompt, conts)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range conts {
		if want := vllmModel.Continuation(prompt, c); !slices.Equal(got[i], want) {
			t.Fatalf("continuation %d: got %v, want %v", i, got[i], want)
		}
	}
}

// An HTTP 500 is retried through the shared client, then the call succeeds.
func TestVLLMRetries500(t *testing.T) {
	v, fake, _ := vllmEngine(t, fakeengine.VLLMOptions{Fail: 2}, vllmModel.Name)
	prompt, conts := []int{3, 50}, [][]int{{60, 61}}
	got, err := v.Continuations(context.Background(), prompt, conts)
	if err != nil {
		t.Fatal(err)
	}
	if want := vllmModel.Continuation(prompt, conts[0]); !slices.Equal(got[0], want) {
		t.Fatalf("got %v, want %v", got[0], want)
	}
	if n := fake.Requests("/v1/completions"); n != 3 {
		t.Fatalf("%d requests, want 3 (two failures, one success)", n)
	}
}

func TestVLLMPreflight(t *testing.T) {
	v, _, _ := vllmEngine(t, fakeengine.VLLMOptions{}, vllmModel.Name)
	if err := v.Preflight(context.Background()); err != nil {
		t.Fatalf("a healthy server: %v", err)
	}
	for _, tc := range []struct {
		name  string
		opts  fakeengine.VLLMOptions
		model string
		want  []string
	}{
		{"unknown model", fakeengine.VLLMOptions{}, "other-model", []string{"/v1/models", `"other-model"`, `"fake-qwen"`}},
		{"no prompt_logprobs", fakeengine.VLLMOptions{Fault: fakeengine.VLLMNoPromptLogprobs}, vllmModel.Name, []string{"/v1/completions", "prompt_logprobs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, _, url := vllmEngine(t, tc.opts, tc.model)
			err := v.Preflight(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			for _, w := range append(tc.want, url) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is more than one line", err)
			}
		})
	}
}

// A server that does not answer fails the preflight with a line naming its URL.
func TestVLLMPreflightNoServer(t *testing.T) {
	srv := httptest.NewServer(fakeengine.NewVLLM(vllmModel, fakeengine.VLLMOptions{}))
	url := srv.URL
	srv.Close()
	err := vllmClient(t, url, vllmModel.Name).Preflight(context.Background())
	if err == nil || !strings.Contains(err.Error(), url+"/v1/models") {
		t.Fatalf("got %v, want an error naming %s/v1/models", err, url)
	}
}

// The base URL is the server root: one ending in /v1 is refused, saying so.
func TestNewVLLMRefusesV1(t *testing.T) {
	c, err := openai.NewClient(openai.ClientConfig{BaseURL: "http://127.0.0.1:8000/v1", Model: "m", MaxConcurrency: 1,
		Timeout: time.Second, BackoffInitial: time.Millisecond, BackoffMax: time.Millisecond, BaseURLSetting: "scoring.url"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scoring.NewVLLM(c); err == nil || !strings.Contains(err.Error(), "http://127.0.0.1:8000)") {
		t.Fatalf("got %v, want a refusal naming the server root", err)
	}
}
