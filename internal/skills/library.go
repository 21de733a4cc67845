package skills

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/evosteer/evosteer-go/internal/config"
	"github.com/evosteer/evosteer-go/internal/orchestra"
	"github.com/evosteer/evosteer-go/schema"
)

// Skill statuses (METHOD.md §5.1).
const (
	Candidate = "candidate"
	Validated = "validated"
	Retired   = "retired"
)

// Bases: what a skill's status rests on.
const (
	BasisProposal   = "candidate-proposal" // proposed by the author, not yet decided
	BasisSignTest   = "paired-sign-test"   // promoted or retired by the sequential sign test
	BasisFixedCount = "fixed-count"        // promoted after k treatment successes (sequential-validation ablated)
	BasisUndecided  = "undecided"          // retired undecided: its comparison ran out of tasks (admission.undecided_when_exhausted)
)

// Skill is one library entry.
type Skill struct {
	ID          string
	Family      string
	Status      string
	Basis       string
	Record      Record
	ContentHash string
	CreatedStep int
	// Pairs is the number of eligible pairs recorded for the skill over all its comparisons;
	// the rollout tests the skill with the fewest.
	Pairs int64
	// The open comparison ("" when none) and its background menu: the menu of the family
	// without this skill when the comparison was registered.
	ComparisonID     string
	ComparisonMenuID string
}

// Library is a snapshot of the skill library: every skill ever admitted, sorted by id, under
// the admission limits of the run. A Library is not modified after it is built.
type Library struct {
	limits config.Admission
	skills []Skill
	byID   map[string]int
}

// NewLibrary builds a snapshot; skills may come in any order. Ids must be unique, each must
// be the id of its record, and statuses must be known.
func NewLibrary(limits config.Admission, skills []Skill) (*Library, error) {
	return newLibrary(limits, skills, true)
}

// newLibrary is NewLibrary; the ledger, which hashes every record it admits, skips the
// (costly) re-hashing.
func newLibrary(limits config.Admission, skills []Skill, checkHashes bool) (*Library, error) {
	l := &Library{limits: limits, skills: slices.Clone(skills), byID: map[string]int{}}
	slices.SortFunc(l.skills, func(a, b Skill) int { return cmp.Compare(a.ID, b.ID) })
	for i, s := range l.skills {
		if _, dup := l.byID[s.ID]; dup {
			return nil, fmt.Errorf("skill %s appears twice", s.ID)
		}
		if checkHashes && (s.Record.ID() != s.ID || s.Record.ContentHash() != s.ContentHash) {
			return nil, fmt.Errorf("skill %s: its record hashes to id %s, content hash %s (stored %s)", s.ID, s.Record.ID(), s.Record.ContentHash(), s.ContentHash)
		}
		if !slices.Contains([]string{Candidate, Validated, Retired}, s.Status) {
			return nil, fmt.Errorf("skill %s: unknown status %q", s.ID, s.Status)
		}
		l.byID[s.ID] = i
	}
	return l, nil
}

// Skills returns every skill, sorted by id (a copy).
func (l *Library) Skills() []Skill { return slices.Clone(l.skills) }

// Get returns a skill by id.
func (l *Library) Get(id string) (Skill, bool) {
	i, ok := l.byID[id]
	if !ok {
		return Skill{}, false
	}
	return l.skills[i], true
}

// Family returns the skills of one family, every status, sorted by id.
func (l *Library) Family(family string) []Skill {
	var out []Skill
	for _, s := range l.skills {
		if s.Family == family {
			out = append(out, s)
		}
	}
	return out
}

// count returns how many skills of family have the status ("" counts every status; family ""
// counts every family).
func (l *Library) count(family, status string) int {
	n := 0
	for _, s := range l.skills {
		if (family == "" || s.Family == family) && (status == "" || s.Status == status) {
			n++
		}
	}
	return n
}

// CanPropose reports whether the family has room for one more candidate: fewer candidates
// than max_candidates_per_family, and the library (max_library) and the family
// (max_library_per_family) below their sizes. Retired skills keep their slots.
func (l *Library) CanPropose(family string) bool {
	a := l.limits
	return l.count(family, Candidate) < a.MaxCandidatesPerFamily &&
		l.count("", "") < a.MaxLibrary && l.count(family, "") < a.MaxLibraryPerFamily
}

// Menu is the frozen skill menu of one family for one step: every non-retired skill
// (METHOD.md §5.2), sorted by id, each with its status and rendered text; ID is MenuID of the
// skills.
type Menu struct {
	ID     string
	Skills []orchestra.MenuSkill
}

// Menu returns the menu of a task type (an IID family): its skill slots, which an OOD benchmark
// shares with the IID task type it maps to (paper Table 5). Callers pass a task's TaskType,
// never its Family, so that OOD test tasks see the skills of their task type.
func (l *Library) Menu(taskType string) Menu { return l.menu(taskType, "") }

// Background returns the family's menu without one skill: what the control arm of a pair
// testing that skill sees, and the context that identifies the skill's comparison.
func (l *Library) Background(family, skillID string) Menu { return l.menu(family, skillID) }

func (l *Library) menu(family, without string) Menu {
	var m Menu
	for _, s := range l.skills {
		if s.Family != family || s.Status == Retired || s.ID == without {
			continue
		}
		m.Skills = append(m.Skills, orchestra.MenuSkill{ID: s.ID, ContentHash: s.ContentHash,
			Name: s.Record.Name, Trigger: s.Record.Trigger, Status: s.Status, Text: s.Record.Render()})
	}
	m.ID = MenuID(m.Skills)
	return m
}

// backgroundID is Background(family, skillID).ID without rendering the texts.
func (l *Library) backgroundID(family, skillID string) string {
	var m []orchestra.MenuSkill
	for _, s := range l.skills {
		if s.Family == family && s.Status != Retired && s.ID != skillID {
			m = append(m, orchestra.MenuSkill{ID: s.ID, Status: s.Status})
		}
	}
	return MenuID(m)
}

// MenuID is the hash of a menu: "sha256:" + hex of the lines "id status", sorted. The status is
// part of it because the policy sees it (skill-status facts of the action descriptors), so a
// promotion changes what the arms of a pair face.
func MenuID(menu []orchestra.MenuSkill) string {
	lines := make([]string, len(menu))
	for i, s := range menu {
		lines[i] = s.ID + " " + s.Status + "\n"
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Tested returns the skills that paired rollouts of the family test at step, one pair per task
// each (METHOD.md §5.5): the candidate with the fewest recorded pairs, and, every
// retirement_interval-th step, also the validated skill with the fewest; ties by id. Empty when
// the family has neither.
func (l *Library) Tested(family string, step int) []Skill {
	var out []Skill
	if s, ok := l.fewestPairs(family, Candidate); ok {
		out = append(out, s)
	}
	if step%l.limits.RetirementInterval == 0 {
		if s, ok := l.fewestPairs(family, Validated); ok {
			out = append(out, s)
		}
	}
	return out
}

// PlannedPair is one pair the rollout plays for a task: the skill it tests, the comparison id
// its arms carry and its pair id.
type PlannedPair struct {
	SkillID, ComparisonID, PairID string
}

// PlannedPairs are the pairs the rollout of step plays for one task of the task type
// (METHOD.md §5.5): one per skill of Tested(taskType, step), in that order, each carrying
// Comparison(skill, step) and PairID(step, task, comparison).
func (l *Library) PlannedPairs(step int, taskID, taskType string) []PlannedPair {
	var out []PlannedPair
	for _, s := range l.Tested(taskType, step) {
		comp, _ := l.Comparison(s.ID, step)
		out = append(out, PlannedPair{SkillID: s.ID, ComparisonID: comp, PairID: PairID(step, taskID, comp)})
	}
	return out
}

func (l *Library) fewestPairs(family, status string) (Skill, bool) {
	var best Skill
	found := false
	for _, s := range l.skills { // id order, so the first of equal counts wins
		if s.Family == family && s.Status == status && (!found || s.Pairs < best.Pairs) {
			best, found = s, true
		}
	}
	return best, found
}

// Comparison returns the comparison id that pairs of the skill carry at step
// (episodes.comparison_id): its open comparison when that comparison's background menu is
// the skill's background menu now, else a new id, "{skill_id}@{step}" (METHOD.md §5.5,
// "Comparison identity": a changed context starts a new comparison, which the validate stage
// registers and which supersedes the old one). It panics on an unknown or retired skill.
func (l *Library) Comparison(skillID string, step int) (id string, isNew bool) {
	s, ok := l.Get(skillID)
	if !ok || s.Status == Retired {
		panic(fmt.Sprintf("skills: Comparison(%q): not a live skill of the library", skillID))
	}
	if s.ComparisonID != "" && s.ComparisonMenuID == l.backgroundID(s.Family, s.ID) {
		return s.ComparisonID, false
	}
	return NewComparisonID(skillID, step), true
}

// NewComparisonID is the id of a comparison of a skill opened at step.
func NewComparisonID(skillID string, step int) string {
	return skillID + "@" + strconv.Itoa(step)
}

// PairID is the id of the pair of one task in one comparison at step (METHOD.md §5.5: the
// step, the task and the comparison), shared by both arms, which also share its seed.
func PairID(step int, taskID, comparisonID string) string {
	return strconv.Itoa(step) + "/" + taskID + "/" + comparisonID
}

// Rows is the snapshot as rows of the skills table, sorted by id.
func (l *Library) Rows() []schema.SkillRow {
	out := make([]schema.SkillRow, len(l.skills))
	for i, s := range l.skills {
		out[i] = schema.SkillRow{SkillID: s.ID, Family: s.Family, Status: s.Status, Basis: s.Basis,
			Name: s.Record.Name, Description: s.Record.Description, Trigger: s.Record.Trigger,
			Plan: s.Record.Plan, Pitfalls: s.Record.Pitfalls, Constraint: s.Record.Constraint,
			ContentHash: s.ContentHash, CreatedStep: int64(s.CreatedStep), Pairs: s.Pairs,
			ComparisonID: optional(s.ComparisonID), ComparisonMenuID: optional(s.ComparisonMenuID)}
	}
	return out
}

// FromRows builds a snapshot from rows of the skills table; where names the file for errors.
func FromRows(limits config.Admission, rows []schema.SkillRow, where string) (*Library, error) {
	skills := make([]Skill, len(rows))
	for i, r := range rows {
		skills[i] = Skill{ID: r.SkillID, Family: r.Family, Status: r.Status, Basis: r.Basis,
			Record:      Record{Name: r.Name, Description: r.Description, Trigger: r.Trigger, Plan: r.Plan, Pitfalls: r.Pitfalls, Constraint: r.Constraint},
			ContentHash: r.ContentHash, CreatedStep: int(r.CreatedStep), Pairs: r.Pairs,
			ComparisonID: deref(r.ComparisonID), ComparisonMenuID: deref(r.ComparisonMenuID)}
	}
	l, err := NewLibrary(limits, skills)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return l, nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Summary is one line on a library's size by status, as the validate and author stages print it.
func Summary(lib []Skill) string {
	n := map[string]int{}
	for _, sk := range lib {
		n[sk.Status]++
	}
	return fmt.Sprintf("library: %d skills (%d candidate, %d validated, %d retired)", len(lib), n[Candidate], n[Validated], n[Retired])
}
