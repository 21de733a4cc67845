package skills

import (
	"math"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/stats"
	"github.com/evosteer/evosteer-go/schema"
)

// The reference's worked example: comparison j = 1 with one pair per look needs 15 straight
// wins to promote, since 2^−15 ≤ 0.05/(2·2·15·16) < 2^−14.
func TestFifteenWinsPromote(t *testing.T) {
	b := newBench(t, paperLimits, false, []string{"f"}, 0, 1)
	s := b.propose(0, "f", "units", effect{})
	spent := 0.0
	for step := 1; step <= 15; step++ {
		rows := b.validate(step, pairsFor(b.g, step, s.ID, "w"))
		level := 0.05 / (2 * float64(step*(step+1)))
		spent += level
		look := rows[len(rows)-2]
		if look.Event != EventLook || *look.Look != int64(step) || *look.J != 1 || *look.W != int64(step) || *look.D != int64(step) {
			t.Fatalf("step %d: look %s", step, describe(look))
		}
		if math.Abs(*look.Level-level) > 1e-18 || *look.AlphaEach != *look.Level/2 || math.Abs(*look.PPlus-math.Ldexp(1, -step)) > 1e-15 || *look.PMinus != 1 {
			t.Fatalf("step %d: look numbers %s", step, describe(look))
		}
		if math.Abs(look.AlphaSpent-spent) > 1e-15 {
			t.Fatalf("step %d: alpha spent %g, want %g", step, look.AlphaSpent, spent)
		}
		want := EventDefer
		if step == 15 {
			want = EventPromote
		}
		if got := rows[len(rows)-1].Event; got != want {
			t.Fatalf("step %d: decision %s, want %s", step, got, want)
		}
	}
	got, _ := b.g.Library().Get(s.ID)
	if got.Status != Validated || got.Basis != BasisSignTest || got.Pairs != 15 || got.ComparisonID != s.ID+"@1" {
		t.Errorf("after 15 wins: %+v", got)
	}
	if math.Abs(b.g.AlphaSpent()-0.025*(1-1.0/16)) > 1e-15 {
		t.Errorf("alpha spent %g", b.g.AlphaSpent())
	}
}

// Ties never cause a look and spend nothing; the look index counts looks, not steps.
func TestTiesDoNotLook(t *testing.T) {
	b := newBench(t, paperLimits, false, []string{"f"}, 0, 1)
	s := b.propose(0, "f", "units", effect{})
	for step := 1; step <= 3; step++ {
		rows := b.validate(step, pairsFor(b.g, step, s.ID, "ttt"))
		if len(rows) != 3+map[bool]int{true: 1, false: 0}[step == 1] { // register at step 1, then pairs only
			t.Fatalf("step %d: %d events", step, len(rows))
		}
	}
	if len(events(b.g, EventLook)) != 0 || b.g.AlphaSpent() != 0 {
		t.Fatalf("ties looked or spent: %v", b.g.AlphaSpent())
	}
	b.validate(4, pairsFor(b.g, 4, s.ID, "tw"))
	looks := events(b.g, EventLook)
	if len(looks) != 1 || *looks[0].Look != 1 || *looks[0].T0 != 10 || *looks[0].D != 1 {
		t.Fatalf("looks %v", looks)
	}
	// A step whose new pairs are all ties does not look again.
	b.validate(5, pairsFor(b.g, 5, s.ID, "tt"))
	if len(events(b.g, EventLook)) != 1 {
		t.Error("a tie-only step looked")
	}
}

// Looks happen only at validation rounds, and then cover the discordant pairs of the steps
// in between.
func TestValidationInterval(t *testing.T) {
	limits := paperLimits
	limits.ValidationInterval = 3
	b := newBench(t, limits, false, []string{"f"}, 0, 1)
	s := b.propose(0, "f", "units", effect{})
	for step := 1; step <= 6; step++ {
		b.validate(step, pairsFor(b.g, step, s.ID, "w"))
	}
	looks := events(b.g, EventLook)
	if len(looks) != 2 || *looks[0].D != 3 || *looks[1].D != 6 || *looks[1].Look != 2 {
		t.Fatalf("looks: %v", looks)
	}
}

func TestRetireOnLosses(t *testing.T) {
	b := newBench(t, paperLimits, false, []string{"f"}, 0, 1)
	s := b.propose(0, "f", "harm", effect{})
	pairs := pairsFor(b.g, 1, s.ID, strings.Repeat("l", 8))
	b.validate(1, pairs)
	rows := b.g.Events()
	last := rows[len(rows)-3:]
	if last[0].Event != EventLook || last[1].Event != EventRetire || last[2].Event != EventClose {
		t.Fatalf("events %v", rows)
	}
	// 2^−8 ≤ 0.05/8 = level(1,1)/2.
	if math.Abs(*last[1].PMinus-math.Ldexp(1, -8)) > 1e-15 || *last[1].AlphaEach != 0.05/8 {
		t.Errorf("retire %s", describe(last[1]))
	}
	got, _ := b.g.Library().Get(s.ID)
	if got.Status != Retired || got.ComparisonID != "" {
		t.Errorf("retired skill %+v", got)
	}
	// Retired skills leave the menu but keep their library slot, and take no more pairs.
	lib := b.g.Library()
	if len(lib.Menu("f").Skills) != 0 || len(lib.Tested("f", 2)) != 0 || len(lib.Skills()) != 1 {
		t.Error("retired skill still offered")
	}
	// Retirement is absorbing: a later pair on the closed comparison is refused.
	again := pairs[:1]
	again[0].PairID += "-again"
	if err := b.g.Validate(2, again); err == nil || !strings.Contains(err.Error(), "retired") {
		t.Errorf("pair of a retired skill: %v", err)
	}
}

// A candidate that passes while its family holds max_validated_per_family validated skills
// is deferred for capacity and stays open; once a slot frees, its next look promotes it.
// A validated skill under re-evaluation that passes is retained and its comparison closes.
func TestDeferCapacityRetainAndFreedSlot(t *testing.T) {
	limits := paperLimits
	limits.MaxValidatedPerFamily = 1
	b := newBench(t, limits, false, []string{"f"}, 0, 1)
	v := b.propose(0, "f", "first", effect{})
	b.validate(1, pairsFor(b.g, 1, v.ID, strings.Repeat("w", 10)))
	if got, _ := b.g.Library().Get(v.ID); got.Status != Validated {
		t.Fatalf("first not promoted: %+v", got)
	}
	c := b.propose(1, "f", "second", effect{})
	// The validated skill's comparison context changed (a candidate joined its background).
	if id, isNew := b.g.Library().Comparison(v.ID, 2); !isNew || id != v.ID+"@2" {
		t.Errorf("validated skill's comparison at step 2: %s new=%v", id, isNew)
	}
	rows := b.validate(2, pairsFor(b.g, 2, c.ID, strings.Repeat("w", 12)))
	if got := rows[len(rows)-1].Event; got != EventDeferCapacity {
		t.Fatalf("full family: %s", got)
	}
	if got, _ := b.g.Library().Get(c.ID); got.Status != Candidate || got.ComparisonID == "" {
		t.Fatalf("deferred candidate %+v", got)
	}
	// Re-evaluation of the validated skill with wins: retain, comparison closed; its old
	// comparison (j = 1) was superseded first, without refund.
	spent := b.g.AlphaSpent()
	rows = b.validate(3, pairsFor(b.g, 3, v.ID, strings.Repeat("w", 10)))
	if rows[0].Event != EventSupersede || *rows[0].J != 1 || rows[1].Event != EventRegister || *rows[1].J != 3 {
		t.Fatalf("re-evaluation start %s %s", describe(rows[0]), describe(rows[1]))
	}
	if rows[0].AlphaSpent != spent {
		t.Error("supersede refunded alpha")
	}
	if n := len(rows); rows[n-2].Event != EventRetain || rows[n-1].Event != EventClose || *rows[n-2].W != 10 {
		t.Fatalf("re-evaluation end %v", rows[n-2:])
	}
	// Re-evaluation with losses (a new comparison, j = 4: 2^−12 ≤ 0.05/80) retires the
	// validated skill, freeing the slot.
	b.validate(4, pairsFor(b.g, 4, v.ID, strings.Repeat("l", 12)))
	if got, _ := b.g.Library().Get(v.ID); got.Status != Retired {
		t.Fatalf("validated skill not retired: %+v", got)
	}
	// The retirement changed the candidate's background menu, so its comparison (j = 2, 12
	// wins) is superseded and a new one (j = 5) starts from nothing; 12 wins there promote.
	rows = b.validate(5, pairsFor(b.g, 5, c.ID, strings.Repeat("w", 12)))
	if rows[0].Event != EventSupersede || *rows[0].J != 2 || *rows[0].W != 12 || rows[1].Event != EventRegister || *rows[1].J != 5 {
		t.Fatalf("freed slot: %s, %s", describe(rows[0]), describe(rows[1]))
	}
	if got := rows[len(rows)-1]; got.Event != EventPromote || *got.J != 5 || *got.W != 12 {
		t.Fatalf("freed slot: %s", describe(got))
	}
}

// Bad pairs are refused before anything is recorded.
func TestValidateRejectsContractBreaks(t *testing.T) {
	b := newBench(t, paperLimits, false, []string{"f", "g"}, 0, 1)
	s := b.propose(0, "f", "x", effect{})
	good := pairsFor(b.g, 1, s.ID, "w")[0]
	for name, mutate := range map[string]func(p *schema.PairRow){
		"unknown skill":      func(p *schema.PairRow) { p.SkillID = "evosteer-00000000000000000000" },
		"wrong family":       func(p *schema.PairRow) { p.Family = "g" },
		"wrong outcome":      func(p *schema.PairRow) { p.Outcome = stats.OutcomeLoss },
		"wrong comparison":   func(p *schema.PairRow) { p.ComparisonID = s.ID + "@7" },
		"foreign comparison": func(p *schema.PairRow) { p.ComparisonID = "other@1" },
	} {
		p := good
		mutate(&p)
		n := len(b.g.Events())
		if err := b.g.Validate(1, []schema.PairRow{p}); err == nil {
			t.Errorf("%s: accepted", name)
		} else if len(b.g.Events()) != n {
			t.Errorf("%s: events recorded before the error", name)
		}
	}
	// Ineligible pairs are ignored, even when they would not check out.
	bad := good
	bad.Eligible, bad.SkillID = false, "nonsense"
	if err := b.g.Validate(1, []schema.PairRow{bad}); err != nil {
		t.Errorf("ineligible pair: %v", err)
	}
	if err := b.g.Validate(1, []schema.PairRow{good, good}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a repeated pair id: %v", err)
	}
	// Two skills in one comparison.
	t2 := b.propose(0, "g", "y", effect{})
	mixed := pairsFor(b.g, 1, t2.ID, "w")[0]
	mixed.ComparisonID = good.ComparisonID
	mixed.Family = "g"
	if err := b.g.Validate(1, []schema.PairRow{good, mixed}); err == nil {
		t.Error("a comparison with two skills accepted")
	}
}

// Proposals respect the candidate, family and library limits; retired skills keep slots.
func TestProposeLimits(t *testing.T) {
	limits := paperLimits
	limits.MaxLibraryPerFamily, limits.MaxLibrary = 2, 3
	g := NewLedger(limits, false)
	if _, err := g.Propose(1, "f", rec("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Propose(1, "f", rec("b")); err == nil {
		t.Error("second candidate of a family accepted")
	}
	if _, err := g.Propose(1, "g", rec("a")); err == nil {
		t.Error("duplicate record accepted")
	}
	b := &bench{t: t, g: g}
	b.validate(2, pairsFor(g, 2, rec("a").ID(), strings.Repeat("l", 8))) // retire a
	if _, err := g.Propose(3, "f", rec("b")); err != nil {
		t.Fatalf("after retirement: %v", err)
	}
	b.validate(4, pairsFor(g, 4, rec("b").ID(), strings.Repeat("l", 8)))
	if _, err := g.Propose(5, "f", rec("c")); err == nil {
		t.Error("family over max_library_per_family (retired skills count) accepted")
	}
	if _, err := g.Propose(5, "g", rec("c")); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Propose(5, "h", rec("d")); err == nil {
		t.Error("library over max_library accepted")
	}
}

// Fixed-count admission (sequential-validation ablated): promoted once fixed_count_k
// treatment arms succeeded, ties with both arms succeeding included; no looks, no alpha.
func TestFixedCount(t *testing.T) {
	b := newBench(t, paperLimits, true, []string{"f"}, 0, 1)
	s := b.propose(0, "f", "x", effect{})
	p := pairsFor(b.g, 1, s.ID, "wlwl")
	p[1].BPlus, p[1].BMinus, p[1].Outcome = true, true, stats.OutcomeTie // a both-succeed tie
	b.validate(1, p)
	if got, _ := b.g.Library().Get(s.ID); got.Status != Candidate {
		t.Fatal("promoted after 3 successes")
	}
	rows := b.validate(2, pairsFor(b.g, 2, s.ID, "lww"))
	if got := rows[len(rows)-1]; got.Event != EventPromote || got.Look != nil || *got.W != 4 {
		t.Fatalf("after 5 successes: %s", describe(got))
	}
	if got, _ := b.g.Library().Get(s.ID); got.Basis != BasisFixedCount || b.g.AlphaSpent() != 0 || len(events(b.g, EventLook)) != 0 {
		t.Errorf("%+v alpha %g", got, b.g.AlphaSpent())
	}
}

// Prop. C.5 over long random runs: every (j, l) is used at most once, alpha_spent is the sum
// of the levels of the looks so far, and it never exceeds α.
func TestAlphaSpentNeverExceedsAlpha(t *testing.T) {
	families := []string{"a", "b", "c", "d", "e", "f"}
	for run := range 5 {
		b := newBench(t, paperLimits, false, families, 4, uint64(run))
		name := 0
		laws := []effect{{0.2, 0.2}, {0.4, 0.05}, {0.05, 0.4}, {0.1, 0.1}}
		for step := 1; step <= 300; step++ {
			b.validate(step, b.pairs(step))
			lib := b.g.Library()
			for _, f := range families {
				if lib.CanPropose(f) {
					name++
					b.propose(step, f, f+string(rune('A'+name%26))+string(rune('a'+name/26%26))+string(rune('0'+name/676)), laws[b.rng.IntN(len(laws))])
				}
			}
		}
		seen := map[[2]int64]bool{}
		sum := 0.0
		for _, r := range b.g.Events() {
			if r.Event == EventLook {
				key := [2]int64{*r.J, *r.Look}
				if seen[key] {
					t.Fatalf("run %d: (j, l) = %v used twice", run, key)
				}
				seen[key] = true
				sum += *r.Level
				if want := stats.SpendLevel(0.05, int(*r.J), int(*r.Look)); *r.Level != want {
					t.Fatalf("level %g, want %g", *r.Level, want)
				}
			}
			if math.Abs(r.AlphaSpent-sum) > 1e-15 || r.AlphaSpent > 0.05 {
				t.Fatalf("run %d seq %d: alpha_spent %g, sum of levels %g", run, r.Seq, r.AlphaSpent, sum)
			}
		}
		t.Logf("run %d: %d comparisons, %d looks, alpha spent %.6f", run, len(b.g.comps), len(seen), sum)
	}
}

// Replaying the written segments rebuilds the live ledger exactly; a tampered event fails
// with its sequence number.
func TestReplayEqualsLive(t *testing.T) {
	families := []string{"a", "b", "c"}
	b := newBench(t, paperLimits, false, families, 5, 7)
	for i, f := range families {
		b.propose(0, f, "seed-"+f, []effect{{0.4, 0.05}, {0.05, 0.4}, {0.2, 0.2}}[i])
	}
	name := 0
	for step := 1; step <= 120; step++ {
		b.validate(step, b.pairs(step))
		for _, f := range families {
			if b.g.Library().CanPropose(f) {
				name++
				b.propose(step, f, "skill-"+string(rune('a'+name%26))+string(rune('a'+name/26)), effect{0.3, 0.1})
			}
		}
	}
	g, err := Replay(paperLimits, false, b.segs)
	if err != nil {
		t.Fatal(err)
	}
	if err := SameLibrary(g.Library(), b.g.Library()); err != nil {
		t.Fatal(err)
	}
	if len(g.Events()) != len(b.g.Events()) || g.AlphaSpent() != b.g.AlphaSpent() {
		t.Fatalf("replay: %d events, alpha %g; live %d, %g", len(g.Events()), g.AlphaSpent(), len(b.g.Events()), b.g.AlphaSpent())
	}
	st := map[string]int{}
	for _, s := range b.g.Library().Skills() {
		st[s.Status]++
	}
	if st[Validated] == 0 || st[Retired] == 0 {
		t.Fatalf("the run should promote and retire something: %v", st)
	}
	t.Logf("%d events, statuses %v", len(b.g.Events()), st)

	for name, tamper := range map[string]func(segs []Segment){
		"p-value":   func(segs []Segment) { r := findEvent(segs, EventLook); *r.PPlus *= 1.0000001 },
		"promotion": func(segs []Segment) { findEvent(segs, EventPromote).Event = EventDefer },
		"seq":       func(segs []Segment) { findEvent(segs, EventPair).Seq++ },
		"dropped pair": func(segs []Segment) {
			for i := range segs {
				for k, r := range segs[i].Rows {
					if r.Event == EventPair {
						segs[i].Rows = append(segs[i].Rows[:k:k], segs[i].Rows[k+1:]...)
						return
					}
				}
			}
		},
		"body": func(segs []Segment) {
			r := findEvent(segs, EventProposal)
			*r.Body = strings.Replace(*r.Body, "Do", "Do not", 1)
		},
	} {
		segs := cloneSegments(b.segs)
		tamper(segs)
		if _, err := Replay(paperLimits, false, segs); err == nil || !strings.Contains(err.Error(), "seq") && !strings.Contains(err.Error(), "step-") {
			t.Errorf("%s: replay of a tampered log: %v", name, err)
		}
	}
}

func findEvent(segs []Segment, kind string) *schema.LedgerRow {
	for i := range segs {
		for k := range segs[i].Rows {
			if segs[i].Rows[k].Event == kind {
				return &segs[i].Rows[k]
			}
		}
	}
	panic("no " + kind)
}

// cloneSegments deep-copies the rows, pointers included, so tampering leaves the original.
func cloneSegments(segs []Segment) []Segment {
	out := make([]Segment, len(segs))
	for i, s := range segs {
		out[i] = s
		out[i].Rows = make([]schema.LedgerRow, len(s.Rows))
		for k, r := range s.Rows {
			c := r
			for _, p := range []**float64{&c.PPlus, &c.PMinus, &c.Level, &c.AlphaEach} {
				if *p != nil {
					*p = ptr(**p)
				}
			}
			if c.Body != nil {
				c.Body = ptr(*c.Body)
			}
			out[i].Rows[k] = c
		}
	}
	return out
}
