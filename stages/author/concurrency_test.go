package author

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
)

// familyOf is the family an author request's data names.
func familyOf(req chatRequest) string {
	_, data, _ := strings.Cut(req.Messages[0].Content, "\nDATA\n")
	var d struct {
		Family string `json:"family"`
	}
	json.Unmarshal([]byte(data), &d)
	return d.Family
}

// oneAtATime hides an author's MaxConcurrency: the stage asks it one window at a time.
type oneAtATime struct{ Author }

// latencyServer answers each family after its delay with a fixed reply by the family's index:
// 0 and 1 the same skill (so the one judged second is a duplicate: which depends on the order
// answers are judged in), 2 null, 3 no JSON, 4 another skill, 5 a 503 first, retried, then a
// third skill. It records the order replies complete in and the most calls in flight at once.
type latencyServer struct {
	*server
	mu       sync.Mutex
	delay    map[string]time.Duration
	failed   map[string]bool
	done     []string
	inFlight atomic.Int64
	maxIn    atomic.Int64
}

func newLatencyServer(t *testing.T, families []string) *latencyServer {
	ls := &latencyServer{}
	ls.server = newServer(t, func(w http.ResponseWriter, req chatRequest, _ int) {
		n := ls.inFlight.Add(1)
		defer ls.inFlight.Add(-1)
		for m := ls.maxIn.Load(); n > m && !ls.maxIn.CompareAndSwap(m, n); m = ls.maxIn.Load() {
		}
		f := familyOf(req)
		ls.mu.Lock()
		d := ls.delay[f]
		retry := slices.Index(families, f) == 5 && !ls.failed[f]
		ls.failed[f] = true
		ls.mu.Unlock()
		time.Sleep(d)
		if retry {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		switch slices.Index(families, f) {
		case 0, 1:
			reply(w, goodReply)
		case 2:
			reply(w, "null")
		case 3:
			reply(w, "I think you should check units.")
		case 4:
			reply(w, strings.Replace(goodReply, "Eliminate options", "Strike ruled out options", 1))
		default:
			reply(w, strings.Replace(goodReply, "Eliminate options", "Contrast the findings", 1))
		}
		ls.mu.Lock()
		ls.done = append(ls.done, f)
		ls.mu.Unlock()
	})
	return ls
}

// reset gives family families[i] the delay perm[i] × 20 ms and forgets the last run.
func (ls *latencyServer) reset(families []string, perm []int) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.delay, ls.failed, ls.done = map[string]time.Duration{}, map[string]bool{}, nil
	for i, f := range families {
		ls.delay[f] = time.Duration(perm[i]) * 20 * time.Millisecond
	}
	ls.maxIn.Store(0)
}

// TestConcurrentWindowsByteIdentical: the model author's windows are asked at once, and the
// answers arrive in an order set by randomised reply latencies; two runs with different orders,
// and a run asking one window at a time, write byte-identical stage outputs (proposals, ledger
// segment, library, sim_truth): answers are judged in window order, so the duplicate is the same
// window's in every run.
func TestConcurrentWindowsByteIdentical(t *testing.T) {
	def, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	families := def.Families
	ls := newLatencyServer(t, families)
	run := func(seed uint64, sequential bool) (map[string][]byte, []string, int64) {
		ls.reset(families, rand.New(rand.NewPCG(seed, seed+1)).Perm(len(families)))
		cfg := modelConfig(t, ls.URL)
		r := newRun(t, func(c *config.Config) {
			start := c.Author.StartStep
			c.Author = cfg.Author
			c.Author.StartStep, c.Author.StartFamilies = start, len(families)
		})
		a, err := New(r.Config)
		if err != nil {
			t.Fatal(err)
		}
		if sequential {
			a = oneAtATime{a}
		}
		stepThrough(t, r, 2, a)
		out := map[string][]byte{}
		for _, name := range (Stage{}).Outputs(r, 2) {
			b, err := os.ReadFile(filepath.Join(r.StageDir(2, layout.Author), name))
			if err != nil {
				t.Fatal(err)
			}
			out[name] = b
		}
		rows := proposals(t, r, 2)
		var status []string
		for _, p := range rows {
			status = append(status, p.Status)
		}
		slices.Sort(status)
		want := []string{StatusError, StatusProposed, StatusProposed, StatusProposed, StatusDuplicate, StatusNone}
		if slices.Sort(want); !slices.Equal(status, want) {
			t.Fatalf("statuses %v, want %v", status, want)
		}
		ls.mu.Lock()
		defer ls.mu.Unlock()
		return out, slices.Clone(ls.done), ls.maxIn.Load()
	}
	seqOut, _, seqIn := run(7, true)
	aOut, aOrder, aIn := run(1, false)
	bOut, bOrder, bIn := run(2, false)
	if seqIn != 1 || aIn < 2 || bIn < 2 {
		t.Errorf("calls in flight at most: %d one at a time, %d and %d concurrently", seqIn, aIn, bIn)
	}
	if slices.Equal(aOrder, bOrder) {
		t.Fatalf("both runs' replies completed in the order %v", aOrder)
	}
	for name, want := range seqOut {
		if !bytes.Equal(aOut[name], want) || !bytes.Equal(bOut[name], want) {
			t.Errorf("%s differs between runs with replies completing in orders %v and %v and one at a time", name, aOrder, bOrder)
		}
	}
}

// TestModelAuthorConcurrencyCap: author.max_concurrency bounds the calls in flight.
func TestModelAuthorConcurrencyCap(t *testing.T) {
	def, _ := config.Default()
	ls := newLatencyServer(t, def.Families)
	ls.reset(def.Families, []int{2, 2, 2, 2, 2, 2})
	_, rows := authorAgainstWith(t, ls.URL, func(c *config.Config) {
		c.Author.MaxConcurrency, c.Author.StartFamilies = 2, len(def.Families)
	})
	if len(rows) != len(def.Families) || ls.maxIn.Load() != 2 {
		t.Errorf("%d windows, %d calls in flight at most (cap 2)", len(rows), ls.maxIn.Load())
	}
}

// TestModelAuthorThinkingAndSeed: the request carries the thinking switch and the seed as the
// executor sends them: chat_template_kwargs.enable_thinking false and the window seed's low 31
// bits by default (executor.openai's disable_thinking and send_seed); author.disable_thinking
// and author.send_seed false send neither, and unset they follow executor.openai.
func TestModelAuthorThinkingAndSeed(t *testing.T) {
	off := false
	for _, c := range []struct {
		name            string
		edit            func(*config.Config)
		thinking, seeds bool
	}{
		{"defaults", func(*config.Config) {}, true, true},
		{"author switches off", func(c *config.Config) { c.Author.DisableThinking, c.Author.SendSeed = &off, &off }, false, false},
		{"executor's switches off", func(c *config.Config) {
			c.Executor.OpenAI.DisableThinking, c.Executor.OpenAI.SendSeed = false, false
		}, false, false},
	} {
		s := newServer(t, func(w http.ResponseWriter, _ chatRequest, _ int) { reply(w, "null") })
		cfg := modelConfig(t, s.URL)
		c.edit(cfg)
		a, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		w := testWindow()
		w.Seed = 1<<63 | 1<<40 | 1<<31 | 12345
		if _, err := a.Propose(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		req := s.reqs[0]
		_, hasSeed := req.raw["seed"]
		_, hasKwargs := req.raw["chat_template_kwargs"]
		if c.seeds != hasSeed || c.seeds && *req.Seed != 12345 {
			t.Errorf("%s: seed %s, want it sent %v (12345)", c.name, req.raw["seed"], c.seeds)
		}
		if c.thinking != hasKwargs || c.thinking && (len(req.ChatTemplateKwargs) != 1 || req.ChatTemplateKwargs["enable_thinking"]) {
			t.Errorf("%s: chat_template_kwargs %s, want enable_thinking false sent %v", c.name, req.raw["chat_template_kwargs"], c.thinking)
		}
	}
}

// TestNoCallForFamilyWithoutTasks: a family with no train tasks (tasks/train.arrow), and so no
// evidence, gets no window: the model is called for the other families only.
func TestNoCallForFamilyWithoutTasks(t *testing.T) {
	def, _ := config.Default()
	bare := def.Families[1]
	s := newServer(t, func(w http.ResponseWriter, _ chatRequest, _ int) { reply(w, "null") })
	_, rows := authorAgainstWith(t, s.URL, func(c *config.Config) { c.Author.StartFamilies = len(def.Families) }, bare)
	if s.calls != len(def.Families)-1 || len(rows) != len(def.Families)-1 {
		t.Fatalf("%d calls, %d windows for %d families with tasks", s.calls, len(rows), len(def.Families)-1)
	}
	for i, p := range rows {
		if p.Family == bare || familyOf(s.reqs[i]) == bare {
			t.Errorf("a window for %s, which has no train tasks", bare)
		}
	}
}
