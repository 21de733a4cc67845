package scoring

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/evosteer/evosteer-go/internal/actiontrie"
	"github.com/evosteer/evosteer-go/internal/cpuslot"
)

// Scorer gives the masked likelihood of candidate replies to a chat prompt under a served model:
// log ρ(a|s) over a legal set, each candidate's text followed by the template's end of turn, the
// paths held in a prefix-free trie and each branching token normalised over its legal siblings
// (internal/actiontrie), so Σ_a ρ(a|s) = 1. One decision costs one tokenize request for its
// prompt (none when Count tokenised it already), one for each candidate text not seen before,
// and one scoring request; a decision whose prompt and candidates were scored before costs none.
// Concurrent misses of one text (the episodes of a rollout asking for the same action texts at
// once) share one tokenize request. Safe for concurrent use.
type Scorer struct {
	engine    Engine
	template  ChatTemplate
	eos       int
	decisions *lru.Cache[[sha256.Size]byte, Scored]
	texts     *lru.Cache[string, []int]
	prompts   *lru.Cache[[sha256.Size]byte, []int] // rendered prompts by sha256, so Count's tokenising is Score's

	textFlights, promptFlights singleflight.Group // the tokenize requests in flight, by cache key
}

// Scored is the reference's view of one decision.
type Scored struct {
	LogProbs     []float64 // log ρ(a|s) in the candidates' order
	PromptTokens int       // the prompt's length in the server's tokens (0 for a single candidate)
	Requests     int       // scoring requests this decision sent (0: a single candidate, or cached)
	TokensSent   int       // token ids those requests carried: prompt + candidate path, for each candidate
}

// Counted is a controller call's length in the server's tokens, as the episode budget charges it.
type Counted struct {
	Prompt  int   // the rendered chat prompt
	Actions []int // each candidate's canonical text with the end of turn: its token path
}

// NewScorer reads the template's end-of-turn token id from the server (it must be one token: a
// model of another family splits it) and keeps the last cacheSize decisions and candidate texts.
func NewScorer(ctx context.Context, engine Engine, template ChatTemplate, cacheSize int) (*Scorer, error) {
	ids, err := engine.Tokenize(ctx, template.EndOfTurn)
	if err != nil {
		return nil, fmt.Errorf("scorer: the end of turn %q: %w", template.EndOfTurn, err)
	}
	if len(ids) != 1 {
		return nil, fmt.Errorf("scorer: the %s template's end of turn %q is %d tokens on this server, want one special token (is the served model of the %s family?)",
			template.Name, template.EndOfTurn, len(ids), template.Name)
	}
	decisions, err := lru.New[[sha256.Size]byte, Scored](cacheSize)
	if err != nil {
		return nil, fmt.Errorf("scorer: cache of %d decisions: %w", cacheSize, err)
	}
	texts, err := lru.New[string, []int](cacheSize)
	if err != nil {
		return nil, fmt.Errorf("scorer: cache of %d texts: %w", cacheSize, err)
	}
	// A decision tokenises its preview (for the budget's reservation) and its final prompt: a
	// few entries suffice, and prompts are long.
	prompts, err := lru.New[[sha256.Size]byte, []int](promptCacheSize)
	if err != nil {
		return nil, fmt.Errorf("scorer: cache of %d prompts: %w", promptCacheSize, err)
	}
	return &Scorer{engine: engine, template: template, eos: ids[0], decisions: decisions, texts: texts, prompts: prompts}, nil
}

// promptCacheSize is how many rendered prompts' token ids the scorer keeps: enough for the
// decisions a rollout has in progress at once.
const promptCacheSize = 1024

// Template is the chat template the scorer renders prompts with.
func (s *Scorer) Template() ChatTemplate { return s.template }

// Score is log ρ of each candidate reply to the system and user messages. A single candidate has
// log-probability 0 and costs no request, as a forced action costs no forward pass.
func (s *Scorer) Score(ctx context.Context, system, user string, candidates []string) (Scored, error) {
	switch len(candidates) {
	case 0:
		return Scored{}, errors.New("scorer: no candidate to score")
	case 1:
		return Scored{LogProbs: []float64{0}}, nil
	}
	key := s.key(system, user, candidates)
	if got, ok := s.decisions.Get(key); ok {
		return Scored{LogProbs: append([]float64(nil), got.LogProbs...), PromptTokens: got.PromptTokens}, nil
	}
	prompt, err := s.prompt(ctx, system, user)
	if err != nil {
		return Scored{}, err
	}
	paths, err := s.paths(ctx, candidates)
	if err != nil {
		return Scored{}, err
	}
	trie, err := actiontrie.New(paths)
	if err != nil {
		return Scored{}, fmt.Errorf("scorer: the candidates' token paths: %w", err)
	}
	tokenLogProbs, err := s.engine.Continuations(ctx, prompt, paths)
	if err != nil {
		return Scored{}, fmt.Errorf("scorer: %w", err)
	}
	logProbs, err := trie.LogProbs(tokenLogProbs)
	if err != nil {
		return Scored{}, fmt.Errorf("scorer: %w", err)
	}
	sent := 0
	for _, p := range paths {
		sent += len(prompt) + len(p)
	}
	scored := Scored{LogProbs: logProbs, PromptTokens: len(prompt), Requests: 1, TokensSent: sent}
	s.decisions.Add(key, Scored{LogProbs: append([]float64(nil), logProbs...), PromptTokens: len(prompt)})
	return scored, nil
}

// Count is the length in the server's tokens of the chat prompt of system and user and of each
// candidate's token path, which the episode budget charges for a controller call. Its tokenising
// is cached, so the Score of the same prompt and candidates sends no tokenize request again.
func (s *Scorer) Count(ctx context.Context, system, user string, candidates []string) (Counted, error) {
	prompt, err := s.prompt(ctx, system, user)
	if err != nil {
		return Counted{}, err
	}
	paths, err := s.paths(ctx, candidates)
	if err != nil {
		return Counted{}, err
	}
	c := Counted{Prompt: len(prompt), Actions: make([]int, len(paths))}
	for i, p := range paths {
		c.Actions[i] = len(p)
	}
	return c, nil
}

// prompt is the server's token ids of the rendered chat prompt.
func (s *Scorer) prompt(ctx context.Context, system, user string) ([]int, error) {
	text := s.template.Prompt(system, user)
	key := sha256.Sum256([]byte(text))
	if ids, ok := s.prompts.Get(key); ok {
		return ids, nil
	}
	ids, err := s.tokenizeOnce(ctx, &s.promptFlights, string(key[:]), text, func() ([]int, bool) { return s.prompts.Get(key) },
		func(ids []int) { s.prompts.Add(key, ids) })
	if err != nil {
		return nil, fmt.Errorf("scorer: tokenize the prompt: %w", err)
	}
	return ids, nil
}

// tokenizeOnce tokenises text with the requests of every caller that asks for the same key
// meanwhile shared in one (golang.org/x/sync/singleflight): the first sends it, and the others
// wait for its answer, their CPU slots given back as a request's are (internal/cpuslot). cached
// looks key up again within the flight (a flight that ended just before this one began has
// filled the cache) and keep stores a tokenising before its flight ends, so one text costs one
// request however the callers interleave. A flight whose sender's context ended fails with that
// context's error: a caller whose own context has not ended asks again.
func (s *Scorer) tokenizeOnce(ctx context.Context, flights *singleflight.Group, key, text string, cached func() ([]int, bool), keep func([]int)) ([]int, error) {
	for {
		resume := cpuslot.Wait(ctx)
		v, err, shared := flights.Do(key, func() (any, error) {
			if ids, ok := cached(); ok {
				return ids, nil
			}
			ids, err := s.engine.Tokenize(ctx, text)
			if err == nil {
				keep(ids)
			}
			return ids, err
		})
		resume()
		if err != nil && shared && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			continue // another caller's context ended its flight
		}
		if err != nil {
			return nil, err
		}
		return v.([]int), nil
	}
}

// paths is each candidate's token ids followed by the end of turn.
func (s *Scorer) paths(ctx context.Context, candidates []string) ([][]int, error) {
	paths := make([][]int, len(candidates))
	for i, c := range candidates {
		ids, ok := s.texts.Get(c)
		if !ok {
			var err error
			ids, err = s.tokenizeOnce(ctx, &s.textFlights, c, c, func() ([]int, bool) { return s.texts.Get(c) },
				func(ids []int) { s.texts.Add(c, ids) })
			if err != nil {
				return nil, fmt.Errorf("scorer: tokenize candidate %d: %w", i, err)
			}
		}
		paths[i] = append(append(make([]int, 0, len(ids)+1), ids...), s.eos)
	}
	return paths, nil
}

// key identifies a decision by its template, messages and candidates, each length-prefixed so
// that no two different decisions share a key.
func (s *Scorer) key(system, user string, candidates []string) [sha256.Size]byte {
	h := sha256.New()
	for _, part := range append([]string{s.template.Name, system, user}, candidates...) {
		_ = binary.Write(h, binary.LittleEndian, uint64(len(part)))
		h.Write([]byte(part))
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}
