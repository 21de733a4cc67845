package calibrate

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/optimize"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/paradigms"
	"github.com/evosteer/evosteer-go/internal/seed"
	"github.com/evosteer/evosteer-go/internal/sim"
	"github.com/evosteer/evosteer-go/internal/tasks"
)

// Options set the fit's scale and seeds.
type Options struct {
	Rounds        int    // sweeps over the blocks
	PerBenchmark  int    // test tasks per benchmark in the fit sample: the check's tasks (fewer where the split has fewer)
	Runs          int    // runs of the fit sample, each with its own episode seeds
	SearchPerType int    // training tasks per task type on which the search plays every template
	FinalSearch   int    // training tasks per task type on which its best four are played again
	MaxEvals      int    // objective evaluations per block and round
	Seed          uint64 // the fit sample's tasks are the world's; its episode seeds and the search's derive from this
	// Log receives one line per block and round; nil is silent.
	Log func(format string, args ...any)
}

// DefaultOptions fit the paper's 72 cells in about 14 minutes on 2 cores (twice that with the refit).
func DefaultOptions() Options {
	return Options{Rounds: 2, PerBenchmark: 128, Runs: 2, SearchPerType: 32, FinalSearch: 192, MaxEvals: 20, Seed: 1}
}

// Fitted is one parameter's result.
type Fitted struct {
	Param
	Start, Value float64
}

// Result is a fitted world: the configuration with the fitted values, each parameter, the
// searched workflows of the last round, and the scores on the fit sample.
type Result struct {
	Config      *config.Config
	Params      []Fitted
	Workflows   paradigms.Workflows
	Fit         Scores
	Loss        []float64 // the whole objective after each round
	Evaluations int       // objective evaluations (each plays one block's cells once)
	Elapsed     time.Duration
}

// Round keeps four decimals: a world file's values are short, and the fit evaluates exactly
// what it writes.
func Round(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// sigma is a cell's scale in the objective, in points: its own std where the table gives one,
// and one point more, so that a cell measured without a std is matched to about a point.
func sigma(c Cell) float64 { return math.Sqrt(c.Std*c.Std + 1) }

// loss is Σ ((score − target) / σ)² over the keys that have targets.
func loss(t *Targets, s Scores, keys []Key) float64 {
	var sum float64
	for _, k := range keys {
		c, ok := t.Score(k)
		if !ok {
			continue
		}
		d := (s[k] - c.Score) / sigma(c)
		sum += d * d
	}
	return sum
}

// Fit calibrates base's world to the targets. base holds the structure the fit leaves alone
// (failure and budget values, roles, the verification weights of ρ's prior); the fitted
// parameters start from their Param.Start, whatever base holds, so the result is a function of
// the targets, the options and that structure alone.
func Fit(ctx context.Context, base *config.Config, t *Targets, o Options) (*Result, error) {
	if o.Rounds < 1 || o.PerBenchmark < 1 || o.Runs < 1 || o.SearchPerType < 1 || o.FinalSearch < 1 || o.MaxEvals < 1 {
		return nil, fmt.Errorf("calibrate: rounds, tasks per benchmark, runs, search tasks and evaluations must be positive: %+v", o)
	}
	start := time.Now()
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	cfg := base.Clone()
	benchmarks := t.Benchmarks()
	sample, err := fitSample(cfg, benchmarks, o)
	if err != nil {
		return nil, err
	}
	params := AllParams(benchmarks)
	res := &Result{Config: cfg}
	for _, p := range params {
		p.Set(cfg, p.Start) // a fit never depends on the values base happens to hold
		res.Params = append(res.Params, Fitted{Param: p, Start: p.Start})
	}
	holdShares(cfg, benchmarks)
	f := &fitter{ctx: ctx, cfg: cfg, t: t, sample: sample, o: o, logf: logf}
	for round := range o.Rounds {
		if f.workflows, err = Search(ctx, cfg, o.SearchPerType, o.FinalSearch, seed.Derive(o.Seed, "calibrate", "search")); err != nil {
			return nil, err
		}
		logf("round %d: searched workflows %s (%s)", round+1, names(cfg, f.workflows), time.Since(start).Round(time.Second))
		f.scale = 1 / float64(round+1) // later rounds start near the optimum: a smaller simplex
		for _, b := range benchmarks {
			if err := f.benchmark(round, b); err != nil {
				return nil, err
			}
		}
		if err := f.reference(round, benchmarks); err != nil {
			return nil, err
		}
		// The failure rate moves every cell; the last round refits the rows around it, so the
		// direct cells the rows match stay matched.
		if round < o.Rounds-1 || o.Rounds == 1 {
			if err := f.failures(round, benchmarks); err != nil {
				return nil, err
			}
		}
		for _, p := range params {
			p.Set(cfg, Round(p.Get(cfg))) // the world file holds exactly the values evaluated
		}
		all, err := Evaluate(ctx, cfg, sample, benchmarks, Policies, f.workflows)
		if err != nil {
			return nil, err
		}
		res.Loss = append(res.Loss, loss(t, all, allKeys(benchmarks)))
		res.Fit = all
		logf("round %d/%d: loss %.1f over %d cells (%s)", round+1, o.Rounds, res.Loss[round], len(t.Cells), time.Since(start).Round(time.Second))
	}
	for i := range res.Params {
		res.Params[i].Value = res.Params[i].Get(cfg)
	}
	res.Workflows, res.Evaluations, res.Elapsed = f.workflows, f.evals, time.Since(start)
	return res, nil
}

// fitSample is the sample every evaluation of a fit plays: the check's tasks — the test
// split's, which evaluation scores — with episode seeds of the fit's own; the check replays them
// with other seeds, so a cell's fit and check differ by episode noise alone, never by which tasks
// were drawn. A benchmark with fewer test tasks is played several times within a run, so every
// cell has about Runs·PerBenchmark episodes.
func fitSample(cfg *config.Config, benchmarks []string, o Options) (*Sample, error) {
	s, err := NewSample(cfg, benchmarks, "test", o.PerBenchmark, o.Runs, seed.Derive(o.Seed, "calibrate", "fit"))
	if err != nil {
		return nil, err
	}
	s.MinEpisodes = o.PerBenchmark
	return s, nil
}

func allKeys(benchmarks []string) []Key {
	var out []Key
	for _, b := range benchmarks {
		for _, p := range Policies {
			out = append(out, Key{b, p})
		}
	}
	return out
}

// Search runs searched_workflow's offline search on the training tasks of each IID task type of
// cfg's world, every template on n tasks and the best four again on final tasks, and returns
// the frozen workflow per task type.
func Search(ctx context.Context, cfg *config.Config, n, final int, s uint64) (paradigms.Workflows, error) {
	var train []tasks.Task
	for _, f := range cfg.Families {
		train = append(train, sim.Tasks(cfg.Sim, cfg.Seed, f, "", "train", max(n, final))...)
	}
	res, err := paradigms.Search(ctx, cfg, sim.New(cfg.Sim, cfg.Seed), train,
		paradigms.SearchOptions{PerFamily: n, Finalists: 4, FinalPerFamily: final, Seed: s})
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	return res.Workflows, nil
}

type fitter struct {
	ctx       context.Context
	cfg       *config.Config
	t         *Targets
	sample    *Sample
	o         Options
	logf      func(string, ...any)
	workflows paradigms.Workflows
	scale     float64 // of the initial simplex, in units of the parameters' steps
	evals     int
	err       error
}

// names lists the workflow of each IID task type.
func names(cfg *config.Config, w paradigms.Workflows) string {
	var out []string
	for _, tt := range cfg.Families {
		out = append(out, tt+"="+w[tt].Name)
	}
	return strings.Join(out, " ")
}

// minimize runs Nelder–Mead over params (in units of their steps, from their current values) on
// the loss of keys after evaluating policies on benchmarks; values are clamped to the bounds
// (with a quadratic penalty outside them) and the best point is left in f.cfg.
func (f *fitter) minimize(params []Param, benchmarks, policies []string, keys []Key) (before, after float64, n int, err error) {
	x0 := make([]float64, len(params))
	for i, p := range params {
		x0[i] = p.Get(f.cfg)
	}
	apply := func(y []float64) float64 {
		var penalty float64
		for i, p := range params {
			v := x0[i] + y[i]*p.Step
			c := min(p.Hi, max(p.Lo, v))
			penalty += 100 * (v - c) * (v - c) / (p.Step * p.Step)
			p.Set(f.cfg, c)
		}
		return penalty
	}
	eval := func(y []float64) float64 {
		if f.err != nil {
			return math.Inf(1)
		}
		penalty := apply(y)
		s, err := Evaluate(f.ctx, f.cfg, f.sample, benchmarks, policies, f.workflows)
		if err != nil {
			f.err = err
			return math.Inf(1)
		}
		n++
		f.evals++
		return loss(f.t, s, keys) + penalty
	}
	zero := make([]float64, len(params))
	before = eval(zero)
	settings := &optimize.Settings{FuncEvaluations: f.o.MaxEvals, Converger: &optimize.FunctionConverge{Absolute: 0.05, Relative: 0.01, Iterations: 8}}
	r, mErr := optimize.Minimize(optimize.Problem{Func: eval}, zero, settings, &optimize.NelderMead{SimplexSize: f.scale})
	if f.err != nil {
		return 0, 0, n, f.err
	}
	best := zero
	after = before
	if r != nil && r.F < before {
		best, after = r.X, r.F
	} else if mErr != nil && r == nil {
		return 0, 0, n, fmt.Errorf("calibrate: nelder-mead: %w", mErr)
	}
	apply(best)
	return before, after, n, nil
}

// benchmark fits one benchmark's row: in the first round the level alone by bisection on the
// mean of every cell but direct; then level, tool and plan weights by Nelder–Mead on those cells;
// then the executor-alone offset by bisection on the direct cell.
func (f *fitter) benchmark(round int, b string) error {
	start := time.Now()
	fitted, bare := benchmarkParams(b)
	policies := append(slices.Clone(paradigms.Names), Reference)
	var keys []Key
	for _, p := range policies {
		keys = append(keys, Key{b, p})
	}
	if round == 0 {
		// The level moves every cell alike: solving it first starts the simplex near the optimum.
		if _, _, err := f.solve(fitted[0], b, policies, keys); err != nil {
			return err
		}
	}
	before, after, n, err := f.minimize(fitted, []string{b}, policies, keys)
	if err != nil {
		return err
	}
	direct, m, err := f.solve(bare, b, []string{paradigms.Direct}, []Key{{b, paradigms.Direct}})
	if err != nil {
		return err
	}
	var vals []string
	for _, p := range append(slices.Clone(fitted), bare) {
		vals = append(vals, fmt.Sprintf("%s=%.3f", p.Name[len("sim.families."+b+"."):], p.Get(f.cfg)))
	}
	f.logf("round %d block %-18s loss %7.1f -> %6.1f (%2d evals), direct %5.1f (%2d evals)  %v  %s",
		round+1, b, before, after, n, direct, m, vals, time.Since(start).Round(time.Second))
	return nil
}

// solve sets p by bisection over its bounds so that the mean score of keys (played with
// policies on b) meets the mean of their targets; every score rises with p. It stops within a
// quarter point and returns the mean reached.
func (f *fitter) solve(p Param, b string, policies []string, keys []Key) (score float64, n int, err error) {
	var want float64
	var targeted []Key
	for _, k := range keys {
		if c, ok := f.t.Score(k); ok {
			want += c.Score
			targeted = append(targeted, k)
		}
	}
	if len(targeted) == 0 {
		return 0, 0, nil
	}
	want /= float64(len(targeted))
	lo, hi := p.Lo, p.Hi
	best, bestErr := p.Get(f.cfg), math.Inf(1)
	for range 14 {
		mid := (lo + hi) / 2
		p.Set(f.cfg, mid)
		s, err := Evaluate(f.ctx, f.cfg, f.sample, []string{b}, policies, f.workflows)
		if err != nil {
			return 0, n, err
		}
		n++
		f.evals++
		var got float64
		for _, k := range targeted {
			got += s[k] / float64(len(targeted))
		}
		if d := math.Abs(got - want); d < bestErr {
			best, bestErr, score = mid, d, got
		}
		if bestErr < 0.25 {
			break
		}
		if got < want {
			lo = mid
		} else {
			hi = mid
		}
	}
	p.Set(f.cfg, best)
	return score, n, nil
}

// reference fits ρ's prior weights on the reference cells of every benchmark.
func (f *fitter) reference(round int, benchmarks []string) error {
	var keys []Key
	for _, b := range benchmarks {
		keys = append(keys, Key{b, Reference})
	}
	return f.global(round, ReferenceBlock, referenceParams(), benchmarks, []string{Reference}, keys)
}

// failures fits the failure rate on every cell, after the benchmarks and ρ have been fitted
// around it, in every round but the last (in a one-round fit, in that round).
func (f *fitter) failures(round int, benchmarks []string) error {
	return f.global(round, FailureBlock, failureParams(), benchmarks, Policies, allKeys(benchmarks))
}

// global fits one block of parameters shared by every benchmark by Nelder–Mead on keys (played
// with policies) and logs the block's line.
func (f *fitter) global(round int, block string, params []Param, benchmarks, policies []string, keys []Key) error {
	start := time.Now()
	before, after, n, err := f.minimize(params, benchmarks, policies, keys)
	if err != nil {
		return err
	}
	var vals []string
	for _, p := range params {
		vals = append(vals, fmt.Sprintf("%s=%.3f", p.Name[strings.Index(p.Name, ".")+1:], p.Get(f.cfg)))
	}
	f.logf("round %d block %-18s loss %7.1f -> %6.1f (%2d evals)  %v  %s", round+1, block, before, after, n, vals, time.Since(start).Round(time.Second))
	return nil
}
