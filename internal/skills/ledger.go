package skills

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/internal/stats"
	"github.com/evosteer/evosteer-go/schema"
)

// Ledger events (the event column of the ledger table).
const (
	EventProposal      = "proposal"       // the author added a candidate
	EventRegister      = "register"       // a comparison got its global index j
	EventSupersede     = "supersede"      // an open comparison of the skill closed: its context changed (no refund)
	EventPair          = "pair"           // one eligible pair was recorded
	EventLook          = "look"           // one sign-test look; spends its level
	EventPromote       = "promote"        // candidate → validated
	EventRetire        = "retire"         // → retired (absorbing)
	EventRetain        = "retain"         // a validated skill passed its re-evaluation
	EventDefer         = "defer"          // a look that rejected nothing
	EventDeferCapacity = "defer_capacity" // would promote, but the family has max_validated_per_family
	EventClose         = "close"          // a comparison closed (after retire, retain or undecided)
	// EventUndecided: under admission.undecided_when_exhausted, a comparison that can receive
	// no further eligible pair (every training task of its family used) ends without a
	// rejection; a candidate leaves the menu (retired, basis undecided), freeing its slot.
	EventUndecided = "undecided"
)

// Ledger is the admission state machine and its event log (METHOD.md §5.6, paper §4.3 and
// appendix C). The library is a function of the log: Replay re-executes a log and checks that
// it reproduces every event. A ledger continued from a stored state (LoadLedger) holds the
// state, not the log before it. A Ledger is not safe for concurrent use.
type Ledger struct {
	limits     config.Admission
	fixedCount bool
	events     []schema.LedgerRow // the events this ledger emitted
	seq        int64              // events so far, those before a restored state included
	registered int                // comparisons registered so far: the latest j
	skills     map[string]*Skill
	comps      []*comparison // in j order; one restored from a state holds only the open ones
	byID       map[string]*comparison
	successes  map[string]int64 // treatment-arm successes per skill (fixed-count admission)
	alphaSpent float64
	// familyTasks is the number of training tasks of each family (task type), which
	// admission.undecided_when_exhausted needs (SetFamilyTasks); nil otherwise.
	familyTasks map[string]int
}

// comparison is one registered comparison of a skill under one context.
type comparison struct {
	id, skill, menuID string
	j                 int
	open              bool
	w, l, t0          int64
	looks             int
	lastTested        int64           // D at the latest look
	tasks             map[string]bool // the tasks of its eligible pairs
}

// NewLedger returns an empty ledger under the admission limits. fixedCount is the
// sequential-validation ablation: a candidate is promoted once fixed_count_k treatment arms
// of its pairs succeeded, with no looks and no alpha spent.
func NewLedger(limits config.Admission, fixedCount bool) *Ledger {
	return &Ledger{limits: limits, fixedCount: fixedCount, skills: map[string]*Skill{},
		byID: map[string]*comparison{}, successes: map[string]int64{}}
}

// SetFamilyTasks gives the ledger the number of training tasks of each family (task type),
// before any event: admission.undecided_when_exhausted ends a comparison once its eligible
// pairs have used that many distinct tasks. The map is not modified.
func (g *Ledger) SetFamilyTasks(n map[string]int) { g.familyTasks = n }

// exhaustionRule reports whether the ledger ends exhausted comparisons undecided: the rule is
// on and tasks may not repeat (with repeats a comparison never runs out of pairs).
func (g *Ledger) exhaustionRule() bool {
	return g.limits.UndecidedWhenExhausted && !g.limits.AllowRepeatedTasks
}

// Events returns the events this ledger emitted (shared; do not modify): the whole log of a
// ledger built from empty, the events after the state of one LoadLedger restored. Their seq
// runs on from the state's.
func (g *Ledger) Events() []schema.LedgerRow { return g.events }

// AlphaSpent is the sum of the levels of every look so far.
func (g *Ledger) AlphaSpent() float64 { return g.alphaSpent }

// Library is a snapshot of the current library.
func (g *Ledger) Library() *Library {
	skills := make([]Skill, 0, len(g.skills))
	for _, s := range g.skills {
		skills = append(skills, *s)
	}
	l, err := newLibrary(g.limits, skills, false)
	if err != nil {
		panic(fmt.Sprintf("skills: the ledger holds an inconsistent library: %v", err)) // Propose checks every entry
	}
	return l
}

// Propose adds the record as a candidate of the family, authored at step. It fails when the
// family cannot take a candidate (Library.CanPropose) or the record is already in the library.
func (g *Ledger) Propose(step int, family string, rec Record) (Skill, error) {
	rec = rec.Canonical()
	id := rec.ID()
	if _, dup := g.skills[id]; dup {
		return Skill{}, fmt.Errorf("skill %s is already in the library", id)
	}
	if !g.Library().CanPropose(family) {
		return Skill{}, fmt.Errorf("family %s has no room for a candidate", family)
	}
	s := &Skill{ID: id, Family: family, Status: Candidate, Basis: BasisProposal, Record: rec,
		ContentHash: rec.ContentHash(), CreatedStep: step}
	g.skills[id] = s
	body := rec.Body()
	g.emit(schema.LedgerRow{Event: EventProposal, SkillID: &s.ID, Family: &s.Family, Body: &body})
	return *s, nil
}

// Validate runs the validate stage's part of step: it records the step's eligible pairs
// (registering new comparisons first, in comparison-id order, each superseding the skill's
// open comparison) and then, every validation_interval-th step, looks at every open
// comparison with new discordant pairs, in j order. Under fixed-count admission it promotes
// instead. Under admission.undecided_when_exhausted (tasks not repeating) it then ends, in j
// order, every open comparison whose eligible pairs have used every training task of its
// family (SetFamilyTasks) with an undecided event: on a look step (every step under
// fixed-count), after the looks, so the exhausting pairs have had their look. Ineligible pairs
// are ignored. A pair that contradicts the library the step's
// rollout froze (unknown or retired skill, wrong family, a closed comparison, a comparison id
// other than Library.Comparison gives) is an error, and the ledger is left unchanged.
func (g *Ledger) Validate(step int, pairs []schema.PairRow) error {
	if g.exhaustionRule() && g.familyTasks == nil {
		return fmt.Errorf("admission.undecided_when_exhausted needs the number of training tasks of each family (Ledger.SetFamilyTasks)")
	}
	var eligible []schema.PairRow
	for _, p := range pairs {
		if p.Eligible {
			eligible = append(eligible, p)
		}
	}
	slices.SortFunc(eligible, func(a, b schema.PairRow) int { return cmp.Compare(a.PairID, b.PairID) })
	frozen := g.Library()
	if err := checkPairs(frozen, g.byID, step, eligible); err != nil {
		return err
	}
	var fresh []string
	for _, p := range eligible {
		if _, ok := g.byID[p.ComparisonID]; !ok && !slices.Contains(fresh, p.ComparisonID) {
			fresh = append(fresh, p.ComparisonID)
		}
	}
	slices.Sort(fresh)
	skillOf := map[string]string{}
	for _, p := range eligible {
		skillOf[p.ComparisonID] = p.SkillID
	}
	for _, id := range fresh {
		g.register(id, skillOf[id], frozen)
	}
	newSuccess := map[string]bool{}
	for _, p := range eligible {
		g.pair(p)
		if p.BPlus {
			newSuccess[p.SkillID] = true
		}
	}
	lookStep := step%g.limits.ValidationInterval == 0
	switch {
	case g.fixedCount:
		g.admitByCount(newSuccess)
	case lookStep:
		for _, c := range g.comps {
			if c.open && c.w+c.l > c.lastTested {
				g.look(c)
			}
		}
	}
	if g.exhaustionRule() && (g.fixedCount || lookStep) {
		for _, c := range g.comps {
			if n := g.familyTasks[g.skills[c.skill].Family]; c.open && n > 0 && len(c.tasks) >= n {
				g.undecided(c)
			}
		}
	}
	return nil
}

// undecided ends an exhausted comparison without a rejection (admission.undecided_when_exhausted):
// a candidate is retired with basis undecided, which frees its family's candidate slot and takes
// it off the menus (retired skills keep their library slots); a validated skill stays validated,
// as after a retain. The comparison closes.
func (g *Ledger) undecided(c *comparison) {
	g.emit(g.row(EventUndecided, c))
	if s := g.skills[c.skill]; s.Status == Candidate {
		s.Status, s.Basis = Retired, BasisUndecided
	}
	g.closeComparison(c)
}

// pairTask is the task of a pair: its id is PairID(step, task, comparison id).
func pairTask(p schema.PairRow) string {
	_, rest, _ := strings.Cut(p.PairID, "/")
	return strings.TrimSuffix(rest, "/"+p.ComparisonID)
}

// checkPairs checks the step's eligible pairs against the frozen library before anything is
// recorded.
func checkPairs(frozen *Library, byID map[string]*comparison, step int, pairs []schema.PairRow) error {
	skillOf := map[string]string{}
	wantID := map[string]string{} // skill -> the comparison id its pairs must carry
	seen := map[string]bool{}
	for _, p := range pairs {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("pair %s (comparison %s, skill %s): %s", p.PairID, p.ComparisonID, p.SkillID, fmt.Sprintf(format, args...))
		}
		s, ok := frozen.Get(p.SkillID)
		switch {
		case !ok:
			return fail("the skill is not in the library the step's rollout used")
		case s.Status == Retired:
			return fail("the skill was retired before this step")
		case s.Family != p.Family:
			return fail("the pair's family is %s, the skill's %s", p.Family, s.Family)
		case p.Outcome != outcome(p.BPlus, p.BMinus):
			return fail("outcome %q does not match b_plus %v, b_minus %v", p.Outcome, p.BPlus, p.BMinus)
		case seen[p.PairID]:
			return fail("the pair id appears twice")
		}
		seen[p.PairID] = true
		if prev, ok := skillOf[p.ComparisonID]; ok && prev != p.SkillID {
			return fail("the comparison also holds pairs of skill %s", prev)
		}
		skillOf[p.ComparisonID] = p.SkillID
		if c, ok := byID[p.ComparisonID]; ok && !c.open {
			return fail("the comparison is closed")
		}
		want, ok := wantID[p.SkillID]
		if !ok {
			want, _ = frozen.Comparison(p.SkillID, step)
			wantID[p.SkillID] = want
		}
		if want != p.ComparisonID {
			return fail("the library frozen for step %d gives comparison %s for this skill", step, want)
		}
	}
	return nil
}

func outcome(bPlus, bMinus bool) string {
	switch {
	case bPlus && !bMinus:
		return stats.OutcomeWin
	case bMinus && !bPlus:
		return stats.OutcomeLoss
	}
	return stats.OutcomeTie
}

// register opens comparison id of the skill with the next global index, superseding the
// skill's open comparison (its evidence is not carried over and its alpha is not refunded).
func (g *Ledger) register(id, skillID string, frozen *Library) {
	s := g.skills[skillID]
	for _, c := range g.comps {
		if c.open && c.skill == skillID {
			c.open = false
			g.emit(g.row(EventSupersede, c))
		}
	}
	g.registered++
	c := &comparison{id: id, skill: skillID, menuID: frozen.backgroundID(s.Family, skillID), j: g.registered, open: true, tasks: map[string]bool{}}
	g.comps = append(g.comps, c)
	g.byID[id] = c
	s.ComparisonID, s.ComparisonMenuID = id, c.menuID
	r := g.row(EventRegister, c)
	r.Family, r.MenuID = &s.Family, &c.menuID
	r.W, r.L, r.T0, r.D = nil, nil, nil, nil
	g.emit(r)
}

// pair records one eligible pair.
func (g *Ledger) pair(p schema.PairRow) {
	c := g.byID[p.ComparisonID]
	switch p.Outcome {
	case stats.OutcomeWin:
		c.w++
	case stats.OutcomeLoss:
		c.l++
	default:
		c.t0++
	}
	c.tasks[pairTask(p)] = true
	s := g.skills[p.SkillID]
	s.Pairs++
	if p.BPlus {
		g.successes[s.ID]++
	}
	r := g.row(EventPair, c)
	id, out, bp, bm := p.PairID, p.Outcome, p.BPlus, p.BMinus
	r.Family, r.PairID, r.Outcome, r.BPlus, r.BMinus = &s.Family, &id, &out, &bp, &bm
	g.emit(r)
}

// look performs the next look of c: level α/(j(j+1)l(l+1)) spent, α/2 of it per direction,
// retire checked first (METHOD.md §5.6).
//
// Under admission.spending attainable (beyond the paper) a look that cannot reject in either
// direction at the level of the next index l spends nothing and emits nothing, and l does not
// advance: that level is kept for the first later look that can reject. Emitting nothing keeps
// every look event a spending one (look_l counts spent indices, the look and defer counts of
// the summaries and the report are tests that were made), and replay stays exact because it
// re-executes the same rule on the same counts. lastTested still advances, so the comparison
// is looked at again only once it has new discordant pairs, as under released: with the same
// D and l the look could not reject then either, and both rules look at the same steps.
func (g *Ledger) look(c *comparison) {
	c.lastTested = c.w + c.l
	level := stats.SpendLevel(g.limits.Alpha, c.j, c.looks+1)
	each := level / 2
	if g.limits.Spending == config.SpendingAttainable && !canReject(c.w+c.l, each) {
		return
	}
	c.looks++
	pPlus, pMinus := stats.SignTest(int(c.w), int(c.l))
	g.alphaSpent += level
	lookRow := func(event string) schema.LedgerRow {
		r := g.row(event, c)
		l := int64(c.looks)
		r.Look, r.PPlus, r.PMinus, r.Level, r.AlphaEach = &l, &pPlus, &pMinus, &level, &each
		return r
	}
	g.emit(lookRow(EventLook))
	s := g.skills[c.skill]
	switch {
	case pMinus <= each:
		s.Status, s.Basis = Retired, BasisSignTest
		g.emit(lookRow(EventRetire))
		// Retirement is absorbing: every open comparison of the skill closes, this one first.
		for _, o := range append([]*comparison{c}, g.comps...) {
			if o.open && o.skill == s.ID {
				g.closeComparison(o)
			}
		}
	case pPlus <= each && s.Status == Validated:
		g.emit(lookRow(EventRetain))
		g.closeComparison(c)
	case pPlus <= each && g.validatedIn(s.Family) < g.limits.MaxValidatedPerFamily:
		s.Status, s.Basis = Validated, BasisSignTest
		g.emit(lookRow(EventPromote))
	case pPlus <= each:
		g.emit(lookRow(EventDeferCapacity))
	default:
		g.emit(lookRow(EventDefer))
	}
}

// canReject reports whether a look at d discordant pairs can reject in some direction, each
// direction tested at level each: the smallest p-value its sign test can give is P(Bin(d, ½) ≥ d) = 2^−d,
// computed by the same stats.UpperTail as the test itself, so a look skipped under attainable
// spending is one whose test could not have rejected whatever the split of wins and losses.
func canReject(d int64, each float64) bool { return stats.UpperTail(int(d), int(d)) <= each }

// admitByCount is fixed-count admission: a candidate whose pairs brought new treatment
// successes this step is promoted once it has fixed_count_k of them (defer_capacity when its
// family is full). Comparisons in j order.
func (g *Ledger) admitByCount(newSuccess map[string]bool) {
	for _, c := range g.comps {
		s := g.skills[c.skill]
		if !c.open || s.Status != Candidate || !newSuccess[s.ID] || g.successes[s.ID] < int64(g.limits.FixedCountK) {
			continue
		}
		if g.validatedIn(s.Family) < g.limits.MaxValidatedPerFamily {
			s.Status, s.Basis = Validated, BasisFixedCount
			g.emit(g.row(EventPromote, c))
		} else {
			g.emit(g.row(EventDeferCapacity, c))
		}
	}
}

func (g *Ledger) validatedIn(family string) int {
	n := 0
	for _, s := range g.skills {
		if s.Family == family && s.Status == Validated {
			n++
		}
	}
	return n
}

func (g *Ledger) closeComparison(c *comparison) {
	c.open = false
	if s := g.skills[c.skill]; s.ComparisonID == c.id {
		s.ComparisonID, s.ComparisonMenuID = "", ""
	}
	g.emit(g.row(EventClose, c))
}

// row is an event about comparison c with its current counts.
func (g *Ledger) row(event string, c *comparison) schema.LedgerRow {
	skill, id, j := c.skill, c.id, int64(c.j)
	w, l, t0, d := c.w, c.l, c.t0, c.w+c.l
	return schema.LedgerRow{Event: event, SkillID: &skill, ComparisonID: &id, J: &j, W: &w, L: &l, T0: &t0, D: &d}
}

func (g *Ledger) emit(r schema.LedgerRow) {
	g.seq++
	r.Seq = g.seq
	r.AlphaSpent = g.alphaSpent
	g.events = append(g.events, r)
}

// Segment is the part of the log one stage of one step wrote.
type Segment struct {
	Step  int
	Stage string // layout.Validate | layout.Author
	Path  string // for error messages
	Rows  []schema.LedgerRow
}

// Replay rebuilds a ledger from its segments, in order, by re-executing them: an author
// segment's proposals are proposed again, a validate segment's recorded pairs are validated
// again at its step. Every event the re-execution emits must equal the stored one, field for
// field (so a stored p-value, level, status change or sequence number that the rules do not
// reproduce is an error naming the file and the event).
func Replay(limits config.Admission, fixedCount bool, segs []Segment) (*Ledger, error) {
	return NewLedger(limits, fixedCount).Replay(segs)
}

// Replay is the package's Replay on g, an empty ledger that may carry its family task counts
// (SetFamilyTasks).
func (g *Ledger) Replay(segs []Segment) (*Ledger, error) {
	if g.seq > 0 {
		return nil, fmt.Errorf("skills: Replay needs an empty ledger, this one holds %d events", g.seq)
	}
	if err := g.replay(segs); err != nil {
		return nil, err
	}
	return g, nil
}

// replay re-executes segs on g after the events g holds (Replay); CheckStates stops between
// segments to compare the state.
func (g *Ledger) replay(segs []Segment) error {
	for _, seg := range segs {
		start := len(g.events)
		fail := func(err error) error {
			return fmt.Errorf("ledger %s (step %d %s): %w", seg.Path, seg.Step, seg.Stage, err)
		}
		switch seg.Stage {
		case layout.Author:
			for _, r := range seg.Rows {
				if r.Event != EventProposal || r.Body == nil || r.Family == nil {
					return fail(fmt.Errorf("event seq %d: an author segment holds only proposals with a body and a family, got %s", r.Seq, describe(r)))
				}
				rec, err := ParseBody(*r.Body)
				if err != nil {
					return fail(fmt.Errorf("event seq %d: %w", r.Seq, err))
				}
				if _, err := g.Propose(seg.Step, *r.Family, rec); err != nil {
					return fail(fmt.Errorf("event seq %d: %w", r.Seq, err))
				}
			}
		case layout.Validate:
			var pairs []schema.PairRow
			for _, r := range seg.Rows {
				if r.Event != EventPair {
					continue
				}
				if r.PairID == nil || r.ComparisonID == nil || r.SkillID == nil || r.Family == nil || r.Outcome == nil || r.BPlus == nil || r.BMinus == nil {
					return fail(fmt.Errorf("event seq %d: a pair event needs pair_id, comparison_id, skill_id, family, outcome, b_plus and b_minus: %s", r.Seq, describe(r)))
				}
				pairs = append(pairs, schema.PairRow{PairID: *r.PairID, ComparisonID: *r.ComparisonID, SkillID: *r.SkillID,
					Family: *r.Family, BPlus: *r.BPlus, BMinus: *r.BMinus, Outcome: *r.Outcome, Eligible: true})
			}
			if err := g.Validate(seg.Step, pairs); err != nil {
				return fail(err)
			}
		default:
			return fail(fmt.Errorf("unknown stage %q", seg.Stage))
		}
		got := g.events[start:]
		for i := range max(len(got), len(seg.Rows)) {
			switch {
			case i >= len(seg.Rows):
				return fail(fmt.Errorf("replay emits %s, which the file lacks", describe(got[i])))
			case i >= len(got):
				return fail(fmt.Errorf("the file holds %s, which replay does not emit", describe(seg.Rows[i])))
			case !reflect.DeepEqual(got[i], seg.Rows[i]):
				return fail(fmt.Errorf("the file holds %s, replay emits %s", describe(seg.Rows[i]), describe(got[i])))
			}
		}
	}
	return nil
}

// describe renders an event with its non-null fields.
func describe(r schema.LedgerRow) string {
	parts := append([]string{fmt.Sprintf("seq=%d", r.Seq), "event=" + r.Event}, setFields(r)...)
	return "{" + strings.Join(parts, " ") + fmt.Sprintf(" alpha_spent=%v}", r.AlphaSpent)
}

// setFields renders the non-null pointer fields of a row struct as column=value.
func setFields(row any) []string {
	var parts []string
	v := reflect.ValueOf(row)
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Pointer || f.IsNil() {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%v", v.Type().Field(i).Tag.Get("arrow"), f.Elem().Interface()))
	}
	return parts
}
