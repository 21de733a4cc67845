package scoring_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/evosteer/evosteer-go/internal/executor/scoring"
)

// The requests as encoding/json wrote them before the bodies were written by hand.
type oldSGLangRequest struct {
	InputIDs        [][]int        `json:"input_ids"`
	SamplingParams  map[string]any `json:"sampling_params"`
	ReturnLogprob   bool           `json:"return_logprob"`
	LogprobStartLen int            `json:"logprob_start_len"`
}

type oldVLLMRequest struct {
	Model          string  `json:"model"`
	Prompt         [][]int `json:"prompt"`
	MaxTokens      int     `json:"max_tokens"`
	Temperature    float64 `json:"temperature"`
	PromptLogprobs int     `json:"prompt_logprobs"`
}

func oldBodies(t *testing.T, model string, prompt []int, conts [][]int) (sglang, vllm []byte) {
	t.Helper()
	batch := make([][]int, len(conts))
	for i, c := range conts {
		batch[i] = slices.Concat(prompt, c)
	}
	sglang, err := json.Marshal(oldSGLangRequest{InputIDs: batch, SamplingParams: map[string]any{"max_new_tokens": 1, "temperature": 0},
		ReturnLogprob: true, LogprobStartLen: len(prompt) - 1})
	if err != nil {
		t.Fatal(err)
	}
	if vllm, err = json.Marshal(oldVLLMRequest{Model: model, Prompt: batch, MaxTokens: 1, Temperature: 1}); err != nil {
		t.Fatal(err)
	}
	return sglang, vllm
}

// decoded is a body decoded by encoding/json into a generic value.
func decoded(t *testing.T, body []byte) any {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%v: %.200s", err, body)
	}
	if d.More() {
		t.Fatalf("trailing data after the body: %.200s", body)
	}
	return v
}

// The hand-written scoring bodies of both dialects decode to the same request value as
// encoding/json's of the request struct, and are in fact the same bytes, for random decisions
// and the edges: large and negative ids, empty continuations (vLLM's sequence is then the
// prompt), a one-token prompt, many candidates, model names json escapes.
func TestScoringBodies(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ids := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			switch r.IntN(5) {
			case 0:
				out[i] = r.IntN(10)
			case 1:
				out[i] = math.MaxInt64 - r.IntN(3)
			case 2:
				out[i] = math.MinInt64 + r.IntN(3)
			default:
				out[i] = r.IntN(200_000)
			}
		}
		return out
	}
	type decision struct {
		name   string
		model  string
		prompt []int
		conts  [][]int
	}
	cases := []decision{
		{"one token", "m", []int{0}, [][]int{{0}}},
		{"empty continuation", "m", []int{1, 2}, [][]int{{}, {3}, {}}},
		{"escaped model", "a<b>&\"c\"\\\u2028é\xff", []int{151645}, [][]int{{151643, 7}}},
		{"many candidates", "Qwen/Qwen3-8B", ids(3000), func() [][]int {
			c := make([][]int, 37)
			for i := range c {
				c[i] = ids(1 + r.IntN(20))
			}
			return c
		}()},
	}
	for k := range 200 {
		conts := make([][]int, 1+r.IntN(12))
		for i := range conts {
			conts[i] = ids(r.IntN(6))
		}
		cases = append(cases, decision{fmt.Sprint("random ", k), "fake/qwen", ids(1 + r.IntN(40)), conts})
	}
	for _, d := range cases {
		oldS, oldV := oldBodies(t, d.model, d.prompt, d.conts)
		for _, body := range []struct {
			dialect  string
			old, new []byte
		}{
			{"vllm", oldV, scoring.VLLMBody(d.model, d.prompt, d.conts)},
			{"sglang", oldS, scoring.SGLangBody(d.prompt, d.conts)},
		} {
			if body.dialect == "sglang" && slices.ContainsFunc(d.conts, func(c []int) bool { return len(c) == 0 }) {
				continue // SGLang's Continuations refuses an empty continuation before it writes a body
			}
			if !reflect.DeepEqual(decoded(t, body.new), decoded(t, body.old)) {
				t.Fatalf("%s, %s: the body decodes to another request\n new %.300s\n old %.300s", d.name, body.dialect, body.new, body.old)
			}
			if !bytes.Equal(body.new, body.old) {
				t.Fatalf("%s, %s: the body's bytes differ from json.Marshal's\n new %.300s\n old %.300s", d.name, body.dialect, body.new, body.old)
			}
		}
	}
}

// oldReply is the part of a vLLM completion reply encoding/json read before readCompletionReply.
type oldReply struct {
	Choices []struct {
		Index          *int              `json:"index"`
		PromptLogprobs []json.RawMessage `json:"prompt_logprobs"`
	} `json:"choices"`
}

// ReadCompletionReply reads what encoding/json reads of a vLLM reply, choices' indexes, the
// count of their prompt_logprobs positions and the entries from n on, and refuses what it
// refuses as JSON.
func TestReadCompletionReplyAgreesWithEncodingJSON(t *testing.T) {
	const n = 2
	replies := []string{
		`{"choices":[{"index":0,"prompt_logprobs":[null,{"5":{"logprob":-1.5,"rank":1,"decoded_token":"a\"b\\u00e9\n"}},{"7":{"logprob":-0.25e-3}}]}]}`,
		`{"id":"x","choices":[{"prompt_logprobs":[null,{},{"1":{"logprob":"NaN"}},{"2":{"logprob":-1E+400}}],"index":1,"text":"]}"},{"index":0,"prompt_logprobs":null}],"usage":{"a":[true,false,null,-0,0.5]}}`,
		` { "Choices" : [ { "INDEX" : 2 , "Prompt_Logprobs" : [ ] } ] } `,
		`{"choices":[{"index":0},{"index":null,"prompt_logprobs":[1,2,3]}]}`,
		`{"choices":[{"index":0,"index":1,"prompt_logprobs":[1,2,3],"prompt_logprobs":[4]}]}`,
		`{"choices":[{"index":5}],"choices":[]}`, // (a second choices holding elements: encoding/json keeps the first's fields in them)
		`{"choices":[null,{"\u0069ndex":4}]}`,
		`{"choices":null}`, `{}`, `null`,
		// refused by both
		``, `{`, `{"choices":[}`, `{"choices":[{"index":1.5}]}`, `{"choices":[{"index":"1"}]}`,
		`{"choices":[{"prompt_logprobs":{}}]}`, `{"choices":{}}`, `[]`, `{"a":01}`, `{"a":1.}`, `{"a":-}`,
		`{"a":"\x01"}`, `{"a":"\q"}`, `{"a":"\u12G4"}`, `{"a":tru}`, `{"a":1} x`, `{"a":[1,]}`, `{"a":{"b"}}`,
		`{"a":1,}`, `{"choices":[{"index":99999999999999999999}]}`, `{"a":"` + "\n" + `"}`,
	}
	for _, raw := range replies {
		var old oldReply
		oldErr := json.Unmarshal([]byte(raw), &old)
		got, err := scoring.ReadCompletionReply([]byte(raw), n)
		if (err != nil) != (oldErr != nil) {
			t.Errorf("%s: error %v, encoding/json's %v", raw, err, oldErr)
			continue
		}
		if err != nil {
			continue
		}
		var want []scoring.CompletionChoice
		for _, ch := range old.Choices {
			c := scoring.CompletionChoice{Index: ch.Index, Positions: len(ch.PromptLogprobs)}
			if ch.PromptLogprobs != nil {
				c.PromptLogprobs = []json.RawMessage{}
				if len(ch.PromptLogprobs) > n {
					c.PromptLogprobs = ch.PromptLogprobs[n:]
				}
			}
			want = append(want, c)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", raw, show(got), show(want))
		}
	}
	// Nesting past encoding/json's limit is refused, not a stack overflow.
	deep := `{"a":` + string(bytes.Repeat([]byte("["), 20000)) + string(bytes.Repeat([]byte("]"), 20000)) + `}`
	if _, err := scoring.ReadCompletionReply([]byte(deep), n); err == nil {
		t.Error("20,000 nested arrays were read")
	}
}

func show(cs []scoring.CompletionChoice) string {
	out := fmt.Sprint(len(cs), " choices:")
	for _, c := range cs {
		idx := "nil"
		if c.Index != nil {
			idx = fmt.Sprint(*c.Index)
		}
		out += fmt.Sprintf(" {index %s, %d positions, tail %q, nil %v}", idx, c.Positions, c.PromptLogprobs, c.PromptLogprobs == nil)
	}
	return out
}
