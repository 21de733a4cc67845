package skills

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/evosteer/evosteer-go/internal/orchestra"
)

// skill is a library entry of family with the given status and pair count.
func skill(name, family, status string, pairs int64) Skill {
	r := rec(name).Canonical()
	return Skill{ID: r.ID(), Family: family, Status: status, Basis: BasisProposal, Record: r, ContentHash: r.ContentHash(), Pairs: pairs}
}

func library(t *testing.T, skills ...Skill) *Library {
	t.Helper()
	l, err := NewLibrary(paperLimits, skills)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestMenu(t *testing.T) {
	a, b, c, d := skill("a", "f", Validated, 3), skill("b", "f", Candidate, 0), skill("c", "f", Retired, 9), skill("d", "g", Validated, 1)
	l := library(t, d, c, b, a)
	m := l.Menu("f")
	var ids []string
	for _, s := range m.Skills {
		ids = append(ids, s.ID)
	}
	want := []string{a.ID, b.ID}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("menu ids %v, want %v (non-retired skills of f, by id)", ids, want)
	}
	for _, s := range m.Skills {
		src, _ := l.Get(s.ID)
		if s.Status != src.Status || s.Text != src.Record.Render() || s.Name != src.Record.Name || s.Trigger != src.Record.Trigger || s.ContentHash != src.ContentHash {
			t.Errorf("menu entry %+v", s)
		}
	}
	if m.ID != MenuID(m.Skills) || !strings.HasPrefix(m.ID, "sha256:") {
		t.Errorf("menu id %s", m.ID)
	}
	// The background menu drops the skill; an empty family has the empty menu's id.
	bg := l.Background("f", b.ID)
	if len(bg.Skills) != 1 || bg.Skills[0].ID != a.ID || bg.ID == m.ID || bg.ID != l.backgroundID("f", b.ID) {
		t.Errorf("background %+v", bg)
	}
	if e := l.Menu("h"); len(e.Skills) != 0 || e.ID != MenuID(nil) {
		t.Errorf("empty menu %+v", e)
	}
	// The id depends on ids and statuses, not on order or texts.
	promoted := slices.Clone(m.Skills)
	promoted[slices.IndexFunc(promoted, func(s orchestra.MenuSkill) bool { return s.ID == b.ID })].Status = Validated
	if MenuID(promoted) == m.ID {
		t.Error("a status change keeps the menu id")
	}
	rev := slices.Clone(m.Skills)
	slices.Reverse(rev)
	rev[0].Text = "other"
	if MenuID(rev) != m.ID {
		t.Error("menu id depends on order or text")
	}
}

func TestTested(t *testing.T) {
	c1, c2 := skill("c1", "f", Candidate, 4), skill("c2", "f", Candidate, 4)
	v1, v2 := skill("v1", "f", Validated, 10), skill("v2", "f", Validated, 7)
	l := library(t, c1, c2, v1, v2, skill("g1", "g", Candidate, 0))
	first := min(c1.ID, c2.ID) // equal counts: smallest id
	got := l.Tested("f", 3)
	if len(got) != 1 || got[0].ID != first {
		t.Fatalf("Tested(f, 3) = %v, want the candidate %s", got, first)
	}
	got = l.Tested("f", 20) // a retirement_interval step: also the validated skill with fewest pairs
	if len(got) != 2 || got[0].ID != first || got[1].ID != v2.ID {
		t.Fatalf("Tested(f, 20) = %v", got)
	}
	c1.Pairs, c2.Pairs = 5, 2
	if got := library(t, c1, c2).Tested("f", 1); got[0].ID != c2.ID {
		t.Errorf("fewest pairs: %v", got)
	}
	if got := library(t, v1).Tested("f", 1); len(got) != 0 {
		t.Errorf("no candidate, not a re-evaluation step: %v", got)
	}
}

func TestComparisonIdentity(t *testing.T) {
	c, v := skill("c", "f", Candidate, 0), skill("v", "f", Validated, 0)
	l := library(t, c, v)
	if id, isNew := l.Comparison(c.ID, 4); !isNew || id != c.ID+"@4" {
		t.Errorf("no open comparison: %s %v", id, isNew)
	}
	c.ComparisonID, c.ComparisonMenuID = c.ID+"@2", l.Background("f", c.ID).ID
	l = library(t, c, v)
	if id, isNew := l.Comparison(c.ID, 4); isNew || id != c.ID+"@2" {
		t.Errorf("same context: %s %v", id, isNew)
	}
	v.Status = Retired // the background changed
	l = library(t, c, v)
	if id, isNew := l.Comparison(c.ID, 4); !isNew || id != c.ID+"@4" {
		t.Errorf("changed context: %s %v", id, isNew)
	}
	defer func() {
		if recover() == nil {
			t.Error("Comparison of a retired skill did not panic")
		}
	}()
	l.Comparison(v.ID, 4)
}

func TestPairID(t *testing.T) {
	if got := PairID(12, "hotpotqa/0007", "evosteer-abc@9"); got != "12/hotpotqa/0007/evosteer-abc@9" {
		t.Errorf("PairID = %s", got)
	}
}

func TestRowsRoundTrip(t *testing.T) {
	c := skill("c", "f", Candidate, 3)
	c.ComparisonID, c.ComparisonMenuID, c.CreatedStep = c.ID+"@2", "sha256:x", 2
	l := library(t, c, skill("v", "g", Validated, 0))
	back, err := FromRows(paperLimits, l.Rows(), "test")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Skills(), l.Skills()) {
		t.Errorf("round trip:\n%+v\n%+v", back.Skills(), l.Skills())
	}
	if err := SameLibrary(back, l); err != nil {
		t.Error(err)
	}
	if err := SameLibrary(library(t, c), l); err == nil {
		t.Error("SameLibrary missed a missing skill")
	}
}

func TestNewLibraryRejects(t *testing.T) {
	c := skill("c", "f", Candidate, 0)
	badHash := c
	badHash.Record.Name = "edited"
	badStatus := c
	badStatus.Status = "maybe"
	for name, skills := range map[string][]Skill{
		"duplicate id":   {c, c},
		"edited record":  {badHash},
		"unknown status": {badStatus},
	} {
		if _, err := NewLibrary(paperLimits, skills); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
