package skills

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/evosteer/evosteer-go/internal/layout"
	"github.com/evosteer/evosteer-go/schema"
)

// The row kinds of the ledger_state table (schema.LedgerState).
const (
	stateLedger     = "ledger"
	stateComparison = "comparison"
	stateSkill      = "skill"
)

// State is the ledger's running state as rows of the ledger_state table: the ledger row (events
// so far, alpha spent, comparisons registered), the open comparisons in j order and the skills
// with treatment-arm successes by id. With the library snapshot it is everything the ledger
// needs to continue (LoadLedger); closed comparisons take no further pair, so they are left out.
func (g *Ledger) State() []schema.LedgerStateRow {
	events, alpha, registered := g.seq, g.alphaSpent, int64(g.registered)
	out := []schema.LedgerStateRow{{Kind: stateLedger, Events: &events, AlphaSpent: &alpha, Comparisons: &registered, Tasks: []string{}}}
	for _, c := range g.comps {
		if !c.open {
			continue
		}
		skill, id, menu := c.skill, c.id, c.menuID
		j, w, l, t0, looks, tested := int64(c.j), c.w, c.l, c.t0, int64(c.looks), c.lastTested
		tasks := make([]string, 0, len(c.tasks))
		for t := range c.tasks {
			tasks = append(tasks, t)
		}
		slices.Sort(tasks)
		out = append(out, schema.LedgerStateRow{Kind: stateComparison, SkillID: &skill, ComparisonID: &id, J: &j, MenuID: &menu,
			W: &w, L: &l, T0: &t0, Looks: &looks, LastTested: &tested, Tasks: tasks})
	}
	var ids []string
	for id, n := range g.successes {
		if n > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		n := g.successes[id]
		out = append(out, schema.LedgerStateRow{Kind: stateSkill, SkillID: &id, Successes: &n, Tasks: []string{}})
	}
	return out
}

// restore sets g, an empty ledger, to a stored state and the library snapshot written beside
// it; statePath and libPath name the two files in errors. They must agree: each open comparison
// of the state is the one its skill records (comparison_id, comparison_menu_id), and each
// comparison a skill records is open in the state.
func (g *Ledger) restore(lib *Library, rows []schema.LedgerStateRow, statePath, libPath string) error {
	for _, s := range lib.Skills() {
		g.skills[s.ID] = &s
	}
	fail := func(i int, format string, args ...any) error {
		return fmt.Errorf("%s: row %d: %s", statePath, i, fmt.Sprintf(format, args...))
	}
	ledgerRows := 0
	for i, r := range rows {
		switch r.Kind {
		case stateLedger:
			if r.Events == nil || r.AlphaSpent == nil || r.Comparisons == nil {
				return fail(i, "a ledger row needs events, alpha_spent and comparisons: %s", describeState(r))
			}
			ledgerRows++
			g.seq, g.alphaSpent, g.registered = *r.Events, *r.AlphaSpent, int(*r.Comparisons)
		case stateComparison:
			if r.SkillID == nil || r.ComparisonID == nil || r.J == nil || r.MenuID == nil || r.W == nil || r.L == nil || r.T0 == nil || r.Looks == nil || r.LastTested == nil {
				return fail(i, "a comparison row needs skill_id, comparison_id, comparison_j, menu_id, W, L, T0, looks and last_tested: %s", describeState(r))
			}
			id := *r.ComparisonID
			s, ok := g.skills[*r.SkillID]
			switch {
			case !ok:
				return fail(i, "comparison %s is of skill %s, which %s lacks", id, *r.SkillID, libPath)
			case s.ComparisonID != id || s.ComparisonMenuID != *r.MenuID:
				return fail(i, "comparison %s (menu %s) is open, but %s records comparison %q (menu %q) for skill %s", id, *r.MenuID, libPath, s.ComparisonID, s.ComparisonMenuID, s.ID)
			case g.byID[id] != nil:
				return fail(i, "comparison %s appears twice", id)
			case len(g.comps) > 0 && *r.J <= int64(g.comps[len(g.comps)-1].j):
				return fail(i, "comparison %s has j %d, not after the previous row's %d (open comparisons are in j order)", id, *r.J, g.comps[len(g.comps)-1].j)
			case *r.LastTested > *r.W+*r.L:
				return fail(i, "comparison %s was last tested at D = %d, above its W+L = %d", id, *r.LastTested, *r.W+*r.L)
			}
			c := &comparison{id: id, skill: s.ID, menuID: *r.MenuID, j: int(*r.J), open: true, w: *r.W, l: *r.L, t0: *r.T0,
				looks: int(*r.Looks), lastTested: *r.LastTested, tasks: map[string]bool{}}
			for _, t := range r.Tasks {
				if c.tasks[t] {
					return fail(i, "comparison %s lists task %s twice", id, t)
				}
				c.tasks[t] = true
			}
			g.comps = append(g.comps, c)
			g.byID[id] = c
		case stateSkill:
			if r.SkillID == nil || r.Successes == nil {
				return fail(i, "a skill row needs skill_id and successes: %s", describeState(r))
			}
			switch _, dup := g.successes[*r.SkillID]; {
			case g.skills[*r.SkillID] == nil:
				return fail(i, "successes of skill %s, which %s lacks", *r.SkillID, libPath)
			case dup:
				return fail(i, "skill %s appears twice", *r.SkillID)
			}
			g.successes[*r.SkillID] = *r.Successes
		default:
			return fail(i, "unknown kind %q", r.Kind)
		}
	}
	if ledgerRows != 1 {
		return fmt.Errorf("%s: %d ledger rows, want 1", statePath, ledgerRows)
	}
	if n := len(g.comps); n > 0 && g.comps[n-1].j > g.registered {
		return fmt.Errorf("%s: comparison %s has j %d, but only %d comparisons were registered", statePath, g.comps[n-1].id, g.comps[n-1].j, g.registered)
	}
	for _, s := range lib.Skills() {
		if s.ComparisonID != "" && g.byID[s.ComparisonID] == nil {
			return fmt.Errorf("%s: skill %s records comparison %s, which %s does not hold open", libPath, s.ID, s.ComparisonID, statePath)
		}
	}
	return nil
}

// describeState renders a state row with its non-null fields.
func describeState(r schema.LedgerStateRow) string {
	parts := append([]string{"kind=" + r.Kind}, setFields(r)...)
	if len(r.Tasks) > 0 {
		parts = append(parts, "tasks=["+strings.Join(r.Tasks, " ")+"]")
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// WriteState writes the ledger's state as ledger_state.arrow into dir.
func WriteState(dir string, lin schema.Lineage, g *Ledger) error {
	return schema.WriteRows(schema.LedgerState, filepath.Join(dir, layout.LedgerStateFile), lin, g.State())
}

// WriteStage writes what a ledger stage leaves in its folder dir: the events the ledger emitted
// (the stage's segment, LoadLedger having restored the state before them), the library after
// them and the ledger's state, from which the next stage continues.
func WriteStage(dir string, lin schema.Lineage, g *Ledger) error {
	if err := WriteSegment(dir, lin, g.Events()); err != nil {
		return err
	}
	if err := WriteSnapshot(dir, lin, g.Library()); err != nil {
		return err
	}
	return WriteState(dir, lin, g)
}
