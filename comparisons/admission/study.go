package admission

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/skills"
	"github.com/evosteer/evosteer-go/internal/stats"
	"github.com/evosteer/evosteer-go/schema"
	"github.com/evosteer/evosteer-go/stages/author"
	"github.com/evosteer/evosteer-go/stages/rollout"
)

// Setting is one simulated situation: the pair law of every skill of an active family (P, the
// treatment share of the non-tie pairs, and Tie, the tie rate), how many families' authors
// propose (Candidates, the first that many of the families with training tasks; the others' windows
// end without a proposal) and the run length.
type Setting struct {
	P, Tie     float64
	Candidates int
	Steps      int
}

func (s Setting) String() string {
	return fmt.Sprintf("p = %.2g, t = %.2g, %d cand., %d steps", s.P, s.Tie, s.Candidates, s.Steps)
}

// stream is the setting's generator stream base: runs of the setting use stream+i, so the
// numbers of a setting do not depend on which other settings a study holds.
func (s Setting) stream() uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%v %v %d %d", math.Float64bits(s.P), math.Float64bits(s.Tie), s.Candidates, s.Steps)
	return h.Sum64() &^ (1<<32 - 1)
}

// Rule is an admission configuration, set on the admission block of the base configuration.
type Rule struct {
	Key        string // what -rules of cmd/admission-study selects it by
	Name       string
	Repeats    bool            // admission.allow_repeated_tasks
	Interval   int             // admission.validation_interval
	Undecided  bool            // admission.undecided_when_exhausted
	Spending   config.Spending // admission.spending ("": released)
	FixedCount bool            // the sequential-validation ablation: promote after fixed_count_k treatment successes
}

// The rules the study compares.
var (
	Released        = Rule{Key: "released", Name: "released", Interval: 1}
	Exhausted       = Rule{Key: "undecided", Name: "released + undecided_when_exhausted", Interval: 1, Undecided: true}
	Attainable      = Rule{Key: "attainable", Name: "released + attainable spending", Interval: 1, Spending: config.SpendingAttainable}
	PaperRun        = Rule{Key: "paper", Name: "paper run (repeats, looks every 30)", Repeats: true, Interval: 30}
	PaperAttainable = Rule{Key: "paper-attainable", Name: "paper run + attainable spending", Repeats: true, Interval: 30, Spending: config.SpendingAttainable}
	FixedK          = Rule{Key: "fixed", Name: "fixed count (k = fixed_count_k)", Interval: 1, FixedCount: true}
)

// Result is what the runs of one setting under one rule gave.
type Result struct {
	Setting Setting
	Rule    Rule
	Runs    int
	Alpha   float64
	// First candidates: the first candidate of each active family, Runs·Candidates in all.
	First, FirstPromoted, FirstDecided int
	// Pairs (eligible, ties included) of a first candidate's comparison at its decision
	// (promote, retire or undecided), over the decided ones.
	PairsToDecision []int
	// Runs with at least one promotion of any skill (the family-wise false promotions under
	// the null), and promotions in all.
	RunsPromoting, Promotions int
	AlphaMax, AlphaSum        float64
	OverSpent                 int // runs whose alpha spent exceeded alpha
	// The fixed-sample sign test on the same law: FixedN pairs per candidate, promote when
	// P(Bin(D, ½) ≥ W) ≤ α/(2·Candidates) (Bonferroni; the sequential test gives each
	// direction half its level).
	FixedN                                     int
	FixedSamplePromoted, FixedSampleFamilyWise int
	// PromotedByRun is the number of first candidates promoted in each run, in run order: run
	// i of a setting draws from the same generator under every rule, so two rules' runs pair.
	PromotedByRun []int
}

// Power is the share of first candidates promoted.
func (r Result) Power() float64 { return float64(r.FirstPromoted) / float64(r.First) }

// FamilyWise is the share of runs promoting anything.
func (r Result) FamilyWise() float64 { return float64(r.RunsPromoting) / float64(r.Runs) }

// FamilyWiseUpper is the 95% Clopper–Pearson upper bound of FamilyWise.
func (r Result) FamilyWiseUpper() float64 {
	_, hi := stats.ClopperPearson(r.RunsPromoting, r.Runs, 0.95)
	return hi
}

// FamilyWiseLower is the 95% Clopper–Pearson lower bound of FamilyWise.
func (r Result) FamilyWiseLower() float64 {
	lo, _ := stats.ClopperPearson(r.RunsPromoting, r.Runs, 0.95)
	return lo
}

// MedianPairs is the median of PairsToDecision (NaN when nothing was decided).
func (r Result) MedianPairs() float64 {
	n := len(r.PairsToDecision)
	if n == 0 {
		return math.NaN()
	}
	s := slices.Clone(r.PairsToDecision)
	sort.Ints(s)
	if n%2 == 1 {
		return float64(s[n/2])
	}
	return float64(s[n/2-1]+s[n/2]) / 2
}

// FixedSamplePower is the share of candidates the fixed-sample test promotes.
func (r Result) FixedSamplePower() float64 {
	return float64(r.FixedSamplePromoted) / float64(r.Runs*r.Setting.Candidates)
}

// Study runs settings × rules, Runs runs each, on the base configuration (its families,
// batch, tasks.train_per_family, seed, author windows and admission limits).
type Study struct {
	Base   *config.Config
	Runs   int
	Seed   uint64
	FixedN int // pairs per candidate of the fixed-sample test (256)
	// TasksPerFamily is the training pool's size per family (a pilot pool's, cmd/admission-study
	// under tasks.pilot); nil gives every family tasks.train_per_family.
	TasksPerFamily map[string]int
	Workers        int       // 0: GOMAXPROCS
	Progress       io.Writer // nil: none
}

// Run runs every setting under every rule; results in settings-major order. It is
// deterministic: run i of a setting draws from a generator seeded by (Seed, setting, i), the
// same under every rule, whatever the number of workers.
func (st Study) Run(settings []Setting, rules []Rule) ([]Result, error) {
	w := newWorld(st.Base, st.TasksPerFamily, maxStepsOf(settings))
	for _, s := range settings {
		if s.Candidates < 1 || s.Candidates > len(w.pooled) {
			return nil, fmt.Errorf("setting %v: candidates must be 1 to %d, the families with training tasks", s, len(w.pooled))
		}
	}
	workers := st.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var out []Result
	for _, s := range settings {
		si := s.stream()
		for _, rule := range rules {
			cfg, err := ruleConfig(st.Base, rule)
			if err != nil {
				return nil, err
			}
			res := Result{Setting: s, Rule: rule, Runs: st.Runs, Alpha: cfg.Admission.Alpha, FixedN: st.FixedN}
			runs := make([]runResult, st.Runs)
			errs := make([]error, st.Runs)
			var next, done atomic.Int64
			var wg sync.WaitGroup
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := int(next.Add(1)) - 1
						if i >= st.Runs {
							return
						}
						runs[i], errs[i] = w.run(cfg, rule, s, rand.New(rand.NewPCG(st.Seed, si+uint64(i))))
						if n := done.Add(1); st.Progress != nil && (n%200 == 0 || int(n) == st.Runs) {
							fmt.Fprintf(st.Progress, "\r%-40s  %-38s  %5d/%d runs", s, rule.Name, n, st.Runs)
						}
					}
				}()
			}
			wg.Wait()
			if st.Progress != nil {
				fmt.Fprintln(st.Progress)
			}
			for i, r := range runs {
				if errs[i] != nil {
					return nil, fmt.Errorf("%v, %s, run %d: %w", s, rule.Name, i, errs[i])
				}
				res.add(r)
				fp, fw := fixedSample(s, st.FixedN, cfg.Admission.Alpha, rand.New(rand.NewPCG(st.Seed^0x5eed, si+uint64(i))))
				res.FixedSamplePromoted += fp
				if fw {
					res.FixedSampleFamilyWise++
				}
			}
			out = append(out, res)
		}
	}
	return out, nil
}

// ruleConfig is the base configuration under a rule.
func ruleConfig(base *config.Config, r Rule) (*config.Config, error) {
	cfg := base.Clone()
	a := &cfg.Admission
	a.AllowRepeatedTasks, a.ValidationInterval, a.UndecidedWhenExhausted = r.Repeats, r.Interval, r.Undecided
	a.Spending = cmp.Or(r.Spending, config.SpendingReleased)
	cfg.Ablations = slices.DeleteFunc(cfg.Ablations, func(s string) bool { return s == "sequential-validation" })
	if r.FixedCount {
		cfg.Ablations = append(cfg.Ablations, "sequential-validation")
	}
	if a.ValidationInterval < 1 {
		return nil, fmt.Errorf("rule %s: validation interval %d", r.Name, a.ValidationInterval)
	}
	return cfg, nil
}

// world is what every run shares: the training task ids and the rollout's schedule.
type world struct {
	family   map[string]string // task id -> family (its task type)
	counts   map[string]int    // training tasks per family
	trained  map[string]bool
	pooled   []string   // the families with training tasks, in configuration order
	schedule [][]string // step k (from 1) at index k−1
}

func maxStepsOf(settings []Setting) int {
	n := 0
	for _, s := range settings {
		n = max(n, s.Steps)
	}
	return n
}

// newWorld holds perFamily[f] training tasks of each family (tasks.train_per_family of every
// family when perFamily is nil) and the rollout's schedule over them for steps steps.
func newWorld(cfg *config.Config, perFamily map[string]int, steps int) *world {
	w := &world{family: map[string]string{}, counts: map[string]int{}, trained: map[string]bool{}}
	byFamily := map[string][]string{}
	for _, f := range cfg.Families {
		n := cfg.Tasks.TrainPerFamily
		if perFamily != nil {
			n = perFamily[f]
		}
		for i := range n {
			id := fmt.Sprintf("%s-%04d", f, i)
			byFamily[f] = append(byFamily[f], id)
			w.family[id] = f
		}
		w.counts[f], w.trained[f] = n, n > 0
		if n > 0 {
			w.pooled = append(w.pooled, f)
		}
	}
	for k := 1; k <= steps; k++ {
		w.schedule = append(w.schedule, rollout.Schedule(cfg.Seed, k, cfg.Batch.Tasks, cfg.Families, byFamily))
	}
	return w
}

// runResult is one run.
type runResult struct {
	first, firstPromoted, firstDecided int
	pairsToDecision                    []int
	promotions                         int
	alpha                              float64
}

func (r *Result) add(x runResult) {
	r.First += x.first
	r.FirstPromoted += x.firstPromoted
	r.FirstDecided += x.firstDecided
	r.PairsToDecision = append(r.PairsToDecision, x.pairsToDecision...)
	r.PromotedByRun = append(r.PromotedByRun, x.firstPromoted)
	r.Promotions += x.promotions
	if x.promotions > 0 {
		r.RunsPromoting++
	}
	r.AlphaSum += x.alpha
	r.AlphaMax = max(r.AlphaMax, x.alpha)
	if x.alpha > r.Alpha {
		r.OverSpent++
	}
}

// draw is one pair outcome under the setting's law: (b+, b−).
func draw(s Setting, rng *rand.Rand) (bool, bool) {
	u := rng.Float64()
	switch {
	case u < (1-s.Tie)*s.P:
		return true, false
	case u < 1-s.Tie:
		return false, true
	}
	both := rng.IntN(2) == 0
	return both, both
}

// run is one simulated run: every step, the rollout's pairs for the scheduled tasks (one per
// tested skill), scored and made eligible by stats.Pairs, validated by the ledger; then the
// author's windows, in which an active family proposes a fresh candidate and any other
// proposes nothing.
func (w *world) run(cfg *config.Config, rule Rule, s Setting, rng *rand.Rand) (runResult, error) {
	var res runResult
	g := skills.NewLedger(cfg.Admission, rule.FixedCount)
	if rule.Undecided {
		g.SetFamilyTasks(w.counts)
	}
	active := map[string]bool{}
	for _, f := range w.pooled[:s.Candidates] {
		active[f] = true
	}
	first := map[string]bool{} // skill id -> is a first candidate
	proposed := map[string]int{}
	failed := map[string]int{}
	used := map[[2]string]bool{}
	for k := 1; k <= s.Steps; k++ {
		lib := g.Library()
		var eps []stats.Episode
		for _, id := range w.schedule[k-1] {
			f := w.family[id]
			for _, pp := range lib.PlannedPairs(k, id, f) {
				bp, bm := draw(s, rng)
				for _, arm := range []struct {
					source string
					ok     bool
				}{{"paired_treatment", bp}, {"paired_control", bm}} {
					r := 0.0
					if arm.ok {
						r = 1
					}
					eps = append(eps, stats.Episode{Step: k, TaskID: id, Family: f, TaskType: f,
						Source: arm.source, Healthy: true, Reward: r, PairID: pp.PairID, ComparisonID: pp.ComparisonID, SkillID: pp.SkillID})
				}
			}
		}
		var rows []schema.PairRow
		for _, p := range stats.Pairs(eps, cfg.Admission.SuccessThreshold, used, cfg.Admission.AllowRepeatedTasks) {
			rows = append(rows, schema.PairRow{PairID: p.PairID, ComparisonID: p.ComparisonID, SkillID: p.SkillID, TaskID: p.TaskID,
				Family: p.Family, BPlus: p.BPlus, BMinus: p.BMinus, Outcome: p.Outcome, Eligible: p.Eligible})
			if p.Eligible {
				used[[2]string{p.ComparisonID, p.TaskID}] = true
			}
		}
		n := len(g.Events())
		if err := g.Validate(k, rows); err != nil {
			return res, err
		}
		for _, e := range g.Events()[n:] {
			switch e.Event {
			case skills.EventPromote, skills.EventRetire, skills.EventUndecided:
				if e.Event == skills.EventPromote {
					res.promotions++
				}
				if first[*e.SkillID] {
					first[*e.SkillID] = false // decided once
					res.firstDecided++
					res.pairsToDecision = append(res.pairsToDecision, int(*e.W+*e.L+*e.T0))
					if e.Event == skills.EventPromote {
						res.firstPromoted++
					}
				}
			}
		}
		want := author.WindowFamilies(cfg, k)
		if want == 0 {
			continue
		}
		for _, f := range author.WindowOrder(cfg.Families, g.Library(), want, w.trained, failed, nil) {
			if !active[f] {
				failed[f]++
				continue
			}
			name := fmt.Sprintf("%s %d", strings.ReplaceAll(f, "_", " "), proposed[f])
			sk, err := g.Propose(k, f, record(name))
			if err != nil {
				return res, err
			}
			if proposed[f] == 0 {
				first[sk.ID] = true
				res.first++
			}
			proposed[f]++
		}
	}
	res.alpha = g.AlphaSpent()
	return res, nil
}

// record is a distinct skill record per name.
func record(name string) skills.Record {
	return skills.Record{Name: name, Description: "Check " + name + ".", Trigger: "Use when " + name + " applies.",
		Plan: []string{"Do " + name + ".", "Check it."}, Pitfalls: []string{"Skipping " + name + "."}, Constraint: []string{"Be brief."}}
}

// fixedSample is the fixed-sample sign test on the setting's law: n pairs per candidate, a
// candidate promoted when P(Bin(D, ½) ≥ W) ≤ α/(2·candidates). It returns how many were
// promoted and whether any was.
func fixedSample(s Setting, n int, alpha float64, rng *rand.Rand) (int, bool) {
	promoted := 0
	for range s.Candidates {
		wins, losses := 0, 0
		for range n {
			switch bp, bm := draw(s, rng); {
			case bp && !bm:
				wins++
			case bm && !bp:
				losses++
			}
		}
		if p, _ := stats.SignTest(wins, losses); p <= alpha/(2*float64(s.Candidates)) {
			promoted++
		}
	}
	return promoted, promoted > 0
}

// Table writes the results as a markdown table with the Monte Carlo errors: the standard
// error of power and the 95% Clopper–Pearson upper bound of the family-wise false-promotion
// share.
func Table(out io.Writer, results []Result) {
	fmt.Fprintln(out, "| setting | rule | promoted (first candidates) | runs promoting (95% upper) | median pairs to decision | decided | α spent: mean / max | fixed-sample n = 256, Bonferroni: promoted / runs promoting |")
	fmt.Fprintln(out, "|---|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		p := r.Power()
		se := math.Sqrt(p * (1 - p) / float64(r.First))
		fmt.Fprintf(out, "| %v | %s | %.1f%% ± %.1f | %.2f%% (%.2f%%) | %s | %.1f%% | %.4f / %.4f | %.1f%% / %.1f%% |\n",
			r.Setting, r.Rule.Name, 100*p, 100*se, 100*r.FamilyWise(), 100*r.FamilyWiseUpper(), median(r),
			100*float64(r.FirstDecided)/float64(r.First), r.AlphaSum/float64(r.Runs), r.AlphaMax,
			100*r.FixedSamplePower(), 100*float64(r.FixedSampleFamilyWise)/float64(r.Runs))
	}
}

// Contrasts are the rule pairs PairedTable compares: each rule under attainable spending
// against the same rule under released spending.
var Contrasts = [][2]string{{Attainable.Key, Released.Key}, {PaperAttainable.Key, PaperRun.Key}}

// PairedGain is the power of a minus the power of b, paired by run: the mean over runs of the
// difference in the share of first candidates promoted, with its standard error over runs. It
// fails unless a and b are the same setting and number of runs.
func PairedGain(a, b Result) (gain, se float64, err error) {
	if a.Setting != b.Setting || a.Runs != b.Runs || a.Runs < 2 || len(a.PromotedByRun) != a.Runs || len(b.PromotedByRun) != b.Runs {
		return 0, 0, fmt.Errorf("%s on %v (%d runs) and %s on %v (%d runs) do not pair", a.Rule.Name, a.Setting, a.Runs, b.Rule.Name, b.Setting, b.Runs)
	}
	n, c := float64(a.Runs), float64(a.Setting.Candidates)
	var sum, sq float64
	for i := range a.PromotedByRun {
		d := float64(a.PromotedByRun[i]-b.PromotedByRun[i]) / c
		sum, sq = sum+d, sq+d*d
	}
	gain = sum / n
	return gain, math.Sqrt(max(0, sq/n-gain*gain) / (n - 1)), nil
}

// PairedTable writes, for every setting and every contrast (Contrasts) whose two rules the
// results hold, the two powers, their difference paired by run with its standard error, and
// the runs promoting anything under each rule with their 95% upper bounds (the family-wise
// false promotion under p = ½).
func PairedTable(out io.Writer, results []Result) error {
	fmt.Fprintln(out, "| setting | rules | promoted: rule / against | paired difference | runs promoting (95% upper): rule / against |")
	fmt.Fprintln(out, "|---|---|---:|---:|---:|")
	for _, a := range results {
		for _, c := range Contrasts {
			if a.Rule.Key != c[0] {
				continue
			}
			i := slices.IndexFunc(results, func(b Result) bool { return b.Rule.Key == c[1] && b.Setting == a.Setting })
			if i < 0 {
				continue
			}
			b := results[i]
			gain, se, err := PairedGain(a, b)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "| %v | %s vs %s | %.1f%% / %.1f%% | %+.1f ± %.1f points | %d/%d (%.2f%%) / %d/%d (%.2f%%) |\n",
				a.Setting, a.Rule.Key, b.Rule.Key, 100*a.Power(), 100*b.Power(), 100*gain, 100*se,
				a.RunsPromoting, a.Runs, 100*a.FamilyWiseUpper(), b.RunsPromoting, b.Runs, 100*b.FamilyWiseUpper())
		}
	}
	return nil
}

func median(r Result) string {
	m := r.MedianPairs()
	if math.IsNaN(m) {
		return "–"
	}
	return fmt.Sprintf("%.0f", m)
}

// Settings are the study's settings: the four (240 steps), their nulls (p = ½), and
// one at 120 steps.
func Settings() []Setting {
	return []Setting{
		{P: 0.5, Tie: 0.6, Candidates: 1, Steps: 240},
		{P: 0.6, Tie: 0.6, Candidates: 1, Steps: 240},
		{P: 0.7, Tie: 0.6, Candidates: 1, Steps: 120},
		{P: 0.7, Tie: 0.6, Candidates: 1, Steps: 240},
		{P: 0.5, Tie: 0.6, Candidates: 6, Steps: 240},
		{P: 0.7, Tie: 0.6, Candidates: 6, Steps: 240},
		{P: 0.5, Tie: 0.2, Candidates: 6, Steps: 240},
		{P: 0.7, Tie: 0.2, Candidates: 6, Steps: 240},
	}
}

// Rules are the study's rules: the released ones, the released ones with exhausted comparisons
// ending undecided, the released ones with attainable spending, the paper run's with and
// without attainable spending, and fixed-count admission.
func Rules() []Rule {
	return []Rule{Released, Exhausted, Attainable, PaperRun, PaperAttainable, FixedK}
}

// SelectRules returns the study's rules with the given keys, in the order given.
func SelectRules(keys []string) ([]Rule, error) {
	all := Rules()
	var out []Rule
	for _, k := range keys {
		i := slices.IndexFunc(all, func(r Rule) bool { return r.Key == k })
		if i < 0 {
			known := make([]string, len(all))
			for j, r := range all {
				known[j] = r.Key
			}
			return nil, fmt.Errorf("unknown rule %q (known: %s)", k, strings.Join(known, ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}
